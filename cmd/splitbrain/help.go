package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"splitbrain/locks"
)

// runFlagsHelp describes the flags run and suite share; --lock names the
// kinds the registry has (package locks).
var runFlagsHelp = `  --seed N        seed of the workload's and the nemesis's random draws
                  (default: a fresh random seed, printed and stored); every
                  play of a scenario uses the same seed, so the same faults
  --store DIR     where runs are written (default: store): a folder only
                  you can write; one other users can change (/tmp itself,
                  a folder another user made there) is refused
  --backend NAME  where the Redis nodes run: local or docker (containers of
                  an image built here from redis-server); default: the
                  scenario's cluster.backend, else local
  --json          print the outcome as JSON instead of text; progress goes
                  to stderr
  --lock KIND     play only against this lock, instead of the kind or kinds
` + wrap("the scenario lists: "+locks.Or(locks.Matrix()), 18, 76) + `
  --clients N     the number of clients instead of the scenario's (1-64)
  --time D        how long a generated workload runs, such as 10s (a random
                  schedule is stretched or shrunk with it)
  -h, --help      this help
`

var runUsage = `Usage: splitbrain run SCENARIO [flags]

Runs one scenario, a built-in name (splitbrain list) or a .yaml file, and
prints its seed, its progress, its verdict and the path of its report. A
scenario whose lock.kind lists several locks (kind: [redlock, redsync]) is
played once per lock, one after another, each play its own run folder and
report, each verdict printed. Ctrl-C, SIGTERM, SIGHUP (a closed terminal)
or a closed stdout (run … | head -1) stops the run; it heals, cleans up and
still writes its report and result.json.

Flags:
` + runFlagsHelp + `  --shrink        shrink each invalid play of a generated workload at once,
                  as splitbrain shrink does (see splitbrain help shrink)
  --budget D      the time each shrink may take (default 5m; 0: no bound)

Examples:
  splitbrain run clock-jump                    Kleppmann's clock jump, a fresh seed
  splitbrain run clock-jump --seed 7           replay the run of seed 7 exactly
  splitbrain run random-all-counter --seed 5   Jepsen's combined nemesis: redlock, redsync, single, zookeeper
  splitbrain run random-all-counter --lock redsync --time 30s
  splitbrain run my-scenario.yaml --backend docker
  splitbrain run clock-jump --json             one JSON object; several plays: a JSON array of them
  splitbrain run random-clock-counter --lock redlock --shrink   and a minimal scenario if invalid

Exit codes: 255 if a play hit an internal error, else 1 if a verdict is
invalid, else 2 if one is unknown, else 0 (every verdict valid); 254 bad
arguments. The verdict decides, not the expectation: use suite for that.
`

var suiteUsage = `Usage: splitbrain suite [SCENARIOS...|--all] [flags]

Plays every story (built-in names or .yaml files; default and --all: every
built-in) against every lock kind it fits — a cell per story and lock,
n/a with the reason where the story cannot fit the lock — each cell --runs
times on seeds derived from --seed, --parallel plays side by side, and
writes the safety matrix: STORE/matrix.html and STORE/matrix.json, rows
grouped by fault family, a column per lock, each cell k/N plays that broke
the lock's promise (P1), the resource and liveness, a 95 % Wilson
interval (in matrix.json) and a link to the first failing play's report.
Prints the matrix as a table, then each lock's promises (under how many
rows it kept safety, the resource, deadlock freedom, fault tolerance, and
which rows broke them) and its price in availability. --time changes only the scenarios with a
generated workload. Ctrl-C stops every play in flight, heals and cleans up
each, writes their reports and a matrix marked partial.

Flags:
  --all           every built-in scenario (the default when none is named)
  --runs N        plays per cell (default 1), on seeds derived from --seed:
                  run 0 plays the seed itself, each play's seed is printed
                  and re-runs it alone (splitbrain run S --lock K --seed X)
  --parallel P    plays side by side at most, each with its own nodes,
                  proxies, ports and run folder (default: 16 per core, at
                  most 48); a play starts only while the CPUs are less
                  than 94 % busy (one per core starts whatever the load),
                  so that a busy machine does not stretch the stories'
                  timing
  --plan          print the plays the suite would make (place in the plan,
                  run, story, lock, seed, backend, the command that plays
                  it alone) and the n/a cells, and play none
  --shard I/N     play only the I-th of N disjoint shares of the plays (I
                  from 0): N workers given the same arguments and --seed
                  play every play once; the share's runs go to
                  STORE/shard-I-of-N, and splitbrain matrix STORE gathers
                  them. --shard env reads I/N from $SPLITBRAIN_SHARD
  --gate FILE     decide when to start a play as one gate with every suite
                  given the same FILE on this machine (made if missing):
                  the 94 % bound on one smoothed load, starts spaced
                  across the suites, one play each whatever the load —
                  the tasks of fanout swarm on one node share one
  --no-replay     play nothing twice: by default a play that missed its
                  expectation while the harness or a lock driver stood
                  still (a pause no story scripts: a loaded machine) is
                  played again, alone, at the suite's end; the replay
                  decides its cell and the first play is kept beside it
` + runFlagsHelp + `
Examples:
  splitbrain suite --store nightly                   the built-in suite and its matrix
  splitbrain suite --all --seed 5                    the same, reproducibly
  splitbrain suite random-pause-counter --runs 20    how often each lock breaks under pauses
  splitbrain suite clock-jump failover --lock redsync
  splitbrain suite a.yaml b.yaml --json              matrix path, every cell and each lock's summary as JSON
  splitbrain suite --seed 5 --runs 3 --shard 1/4     the second of four shares (docs/fanout.md)

Exit codes: 0 when every play met its expectation and no cell is flaky
(a story that expects a verdict must be 0/N or N/N invalid; expect any
accepts valid and invalid, never unknown), 1 otherwise, 2 when
interrupted, 254 bad arguments, 255 internal error.
`

const matrixUsage = `Usage: splitbrain matrix DIR... [--out DIR]

Assembles the safety matrix from run folders alone: every folder with a
result.json under each DIR (run folders, or stores of them, perhaps made on
several machines) is a play; its scenario, lock, seed, expectation and
answers come from its result.json, its story's fault family and the locks
it does not fit from the scenario.yaml beside it. Writes matrix.html and
matrix.json into --out (default: the first DIR) and prints the matrix and
each lock's promises and price, as suite does.

Flags:
  --out DIR   where matrix.html and matrix.json go (default: the first DIR)
  -h, --help  this help

Example:
  splitbrain matrix store-a store-b --out landscape
`

const listUsage = `Usage: splitbrain list

Lists the built-in scenarios: name, expectation, the locks each is played
against, and the first sentence of its description; then the lock kinds:
name, the servers and deployment it runs on, whether it hands out fencing
tokens, and what it is.

Example:
  splitbrain list
`

const doctorUsage = `Usage: splitbrain doctor

Checks what the local backend (redis-server, cc) and the Docker backend
(engine, ldd, image) need, and says what is missing. Exits 0 when the local
backend can run, 1 otherwise.

Example:
  splitbrain doctor
`

const serveUsage = `Usage: splitbrain serve [--store DIR] [--addr HOST:PORT]

Serves the store's runs, reports and safety matrix over HTTP, read-only,
until Ctrl-C. It answers only to the names it listens under (localhost,
127.0.0.1, [::1] or HOST, with PORT), so that a web page cannot reach it
through a name of its own; listings show no hidden names and no links.

Flags:
  --store DIR       the folder of runs (default: store)
  --addr HOST:PORT  where to listen (default: 127.0.0.1:8040, this machine only)
  -h, --help        this help

Examples:
  splitbrain serve
  splitbrain serve --store nightly --addr 127.0.0.1:9000
`

// commandUsage is each command's --help.
var commandUsage = map[string]string{
	"list":   listUsage,
	"run":    runUsage,
	"suite":  suiteUsage,
	"sweep":  sweepUsage,
	"matrix": matrixUsage,
	"fanout": fanoutUsage,
	"check":  checkUsage,
	"shrink": shrinkUsage,
	"doctor": doctorUsage,
	"serve":  serveUsage,
	"driver": driverUsage,
}

// wantsHelp reports whether args ask for help: -h, -help or --help
// anywhere before a "--".
func wantsHelp(args []string) bool {
	end := slices.Index(args, "--")
	if end < 0 {
		end = len(args)
	}
	return slices.ContainsFunc(args[:end], func(a string) bool { return a == "-h" || a == "-help" || a == "--help" })
}

// printHelp prints the usage of command, or the general usage.
func printHelp(w io.Writer, command string) error {
	if command == "" {
		fmt.Fprint(w, usage)
		return nil
	}
	u, ok := commandUsage[command]
	if !ok {
		return &usageError{fmt.Sprintf("help %q: no such command; want list, run, suite, sweep, matrix, fanout, check, shrink, serve, doctor or driver", command)}
	}
	fmt.Fprint(w, u)
	return nil
}

// wrap fills text into lines of at most width columns, each indented by
// indent spaces.
func wrap(text string, indent, width int) string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && indent+len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	lines = append(lines, line)
	pad := strings.Repeat(" ", indent)
	return pad + strings.Join(lines, "\n"+pad)
}
