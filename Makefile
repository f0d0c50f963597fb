# The two commands of the README:
#   make suite   installs what is missing, builds, runs the built-in suite
#   make test    installs what is missing, vets and runs every test
GO ?= go
BIN := bin/splitbrain

.PHONY: setup build suite test test-tree test-go test-fuzz vet tree fuzz clean bench

setup:
	@bash scripts/setup.sh

build:
	$(GO) build -o $(BIN) ./cmd/splitbrain

suite: setup build
	./$(BIN) suite

vet: tree
	$(GO) vet ./...

# tree: the checks that need no compiling (gofmt, scripts/check-tree.sh).
tree:
	@bash scripts/check-tree.sh
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }

# make test's go test vets as it builds (-vet=all: every analyzer go vet
# runs, on every package, those without tests too), so that vetting is
# part of the pipeline: a package's tests start as soon as it and its
# dependencies are built and vetted, and the real-server tests, which
# mostly wait, overlap the compiling of the rest. A separate go vet before
# them took 139 s on a cold build cache during which no test ran
# (2026-11-28), 21 s on a warm one.
#
# The real-server tests mostly wait on TTLs and faults, not on the CPU,
# but their timing margins stretch once the CPUs are saturated, and then
# verdicts change. So go test's limits are high — three packages at a
# time, eight tests in each — and each play passes a gate first
# (internal/testgate) that holds it while the machine's CPUs are 80 %
# busy or more, as a suite's plays are held: how many plays fit depends
# on the machine (machines of the kind differ by twice in the cost of a
# process start: BENCHMARKS.md) and on the compiling beside them. With
# fixed limits and no gate, -p 2 -parallel 4 left the CPUs half idle on
# a warm cache here (511 CPU-s in 538 s, 2026-11-28), while on a slower
# machine of the kind -p 3 ran at load 20-38 and timing-bound plays
# missed. The Docker tests, which must not overlap one another, are
# parallel tests that run their cases in turn (runner's TestDockerBackend;
# in cluster/docker only the two reap tests that hold the Docker lock
# alone are not parallel); each test process builds the clock shim,
# ZooKeeper's class archive and the Curator driver once, not each play
# (BENCHMARKS.md, "make test").
# The fuzzing runs beside them at a low CPU priority (nice 10), using
# mostly the CPU the waiting tests leave (the gate counts it as free).
# Not nice 19: starved there, a fuzz worker can spend 10 s on one input,
# and Go's fuzz worker panics when one input runs that long ("deadlocked!",
# reported as "fuzzing process hung or terminated unexpectedly: exit status
# 2", golang/go#56238) — a fresh-clone CI here, 2026-11-28, failed so on
# FuzzParse with an input that passes alone. A nice-10 thread weighs 110
# against a nice-19 thread's 15 (a normal one: 1024).
# Each step prints how long it took; a failing one fails make test.
TEST_FLAGS ?= -race -vet=all -count=1 -p 3 -parallel 8 -timeout 25m
# The packages with the longest single tests first (go test starts
# packages in the order named; ./... names each once more, which go test
# ignores), so that the last to finish does not start late: runner's
# plays, pages' matrix in a browser, cluster/docker's ensembles, fanout's
# swarm, the command's suites.
FIRST := ./runner ./pages ./cluster/docker ./fanout ./cmd/splitbrain ./cluster/local ./shrink
test: setup
	@$(MAKE) --no-print-directory -j3 --output-sync=target test-tree test-go test-fuzz

# The tree checks beside the tests, not before them: they compile nothing,
# and go test's compiling need not wait the seconds they take.
test-tree:
	@$(call timed,tree,$(MAKE) --no-print-directory tree)

test-go:
	@$(call timed,go test,GOFLAGS="$(GOFLAGS) $(NODEBUG)" $(GO) test $(TEST_FLAGS) $(FIRST) ./...)

test-fuzz:
	@$(call timed,fuzz,GOFLAGS="$(GOFLAGS) $(NODEBUG)" nice -n 10 $(MAKE) --no-print-directory fuzz)

# make test builds without debugger information (DWARF): a fresh clone's
# compiling and linking are half of make test's CPU, and DWARF is an
# eighth of them (a cold `go test -race -vet=all -run '^$$' ./...`: 393
# CPU-s with it, 344 without, 2026-11-28). Nothing in a test reads it:
# panics, stack traces and the race detector's reports name file and line
# from the program's own line table (checked on a racy test). In GOFLAGS,
# not TEST_FLAGS, so that the programs the tests build (internal/gobuild:
# the splitbrain command, the drivers) inherit it and share the compiled
# packages instead of compiling every one once more.
NODEBUG := -ldflags=-w -gcflags=all=-dwarf=false

# timed NAME COMMAND runs COMMAND and prints its wall time.
timed = t0=$$(date +%s); $(2) || exit $$?; echo "== $(1): $$(( $$(date +%s) - t0 ))s"

# Each fuzz target for a few seconds' worth of inputs: enough to catch a
# crash a change introduced, short enough for every CI run. Counted in
# executions, not seconds: with a time budget Go 1.26's fuzz coordinator
# can fail at the deadline with "context deadline exceeded" and no crasher
# (golang/go#75804, fixed in Go 1.27); a count has no deadline to race.
HISTORY_FUZZ ?= 100000x
SCENARIO_FUZZ ?= 10000x
# The checker's reference check at its full count, on seeds go test's
# default run does not use: random histories judged by the checker and by a
# brute-force judge, which must agree (checker/reference_test.go; the
# liveness promises': checker/liveness/reference_test.go).
REFERENCE_N ?= 10000
# No minimizing (-fuzzminimizetime 0): Go's coordinator minimizes each new
# interesting input in a worker, and a worker died while minimizing (once,
# a fresh-clone CI here, 2026-11-28, at nice 19 beside the real-server
# tests), which failed the run with "fuzzing process hung or terminated
# unexpectedly while minimizing: EOF" and an input that passes
# (golang/go#52569, open). A crasher is still found and written, only not
# shrunk.
FUZZ_FLAGS ?= -fuzzminimizetime 0
fuzz:
	$(GO) test ./checker -run '^TestReferenceCheck$$' -count=1 -reference.n $(REFERENCE_N) -reference.seed 1000001
	$(GO) test ./checker/liveness -run '^TestReferenceCheck$$' -count=1 -liveref.n $(REFERENCE_N) -liveref.seed 1000001
	$(GO) test ./history -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(HISTORY_FUZZ) $(FUZZ_FLAGS)
	$(GO) test ./history -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(HISTORY_FUZZ) $(FUZZ_FLAGS)
	$(GO) test ./scenarios/spec -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(SCENARIO_FUZZ) $(FUZZ_FLAGS)

# Our Redlock against go-redsync/redsync and the one-node floor, side by
# side on 5 local redis-server nodes; see BENCHMARKS.md.
bench: setup
	$(GO) run ./cmd/redlock-bench

clean:
	rm -rf bin
