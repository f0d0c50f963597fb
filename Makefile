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

# Each fuzz target for a few seconds' worth of inputs: enough to catch a
# crash a change introduced, short enough for every CI run. Counted in
# executions, not seconds: with a time budget Go 1.26's fuzz coordinator
# can fail at the deadline with "context deadline exceeded" and no crasher
# (golang/go#75804, fixed in Go 1.27); a count has no deadline to race.
HISTORY_FUZZ ?= 300000x
SCENARIO_FUZZ ?= 30000x
fuzz:
	$(GO) test ./history -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(HISTORY_FUZZ)
	$(GO) test ./scenarios -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(SCENARIO_FUZZ)

# Our Redlock against go-redsync/redsync and the one-node floor, side by
# side on 5 local redis-server nodes; see BENCHMARKS.md.
bench: setup
	$(GO) run ./redlock/bench

clean:
	rm -rf bin
