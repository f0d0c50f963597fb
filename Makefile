# The two commands of the README:
#   make suite   installs what is missing, builds, runs the built-in suite
#   make test    installs what is missing, vets and runs every test
GO ?= go
BIN := bin/splitbrain

.PHONY: setup build suite test vet fuzz clean bench

setup:
	@bash scripts/setup.sh

build:
	$(GO) build -o $(BIN) ./cmd/splitbrain

suite: setup build
	./$(BIN) suite

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...

test: setup vet
	$(GO) test -race -count=1 -timeout 15m ./...
	$(MAKE) fuzz

# Each fuzz target for a few seconds: enough to catch a crash a change
# introduced, short enough for every CI run.
FUZZTIME ?= 5s
fuzz:
	$(GO) test ./history -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME)
	$(GO) test ./scenarios -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME)

# Our Redlock against go-redsync/redsync and the one-node floor, side by
# side on 5 local redis-server nodes; see BENCHMARKS.md.
bench: setup
	$(GO) run ./redlock/bench

clean:
	rm -rf bin
