// Command histgen writes a run folder holding a long synthetic lease-lock
// history (history.jsonl) and the run's description (result.json, not yet
// judged), for measuring `splitbrain check` on histories of millions of
// events. See BENCHMARKS.md.
//
//	histgen --ops 1000000 --seed 1 /tmp/h1m
//	histgen --ops 1000000 --seed 1 --violation /tmp/h1m-bad
//	splitbrain check /tmp/h1m
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"splitbrain/checker"
	"splitbrain/history/histgen"
	"splitbrain/runstore"
)

const usage = `Usage: histgen [--ops N] [--clients N] [--keys N] [--seed N] [--violation] RUN_DIR

Writes RUN_DIR/history.jsonl, a synthetic lease-lock history without Redis
(clients contend for one lock or several; acquires and extends are granted, refused or
of unknown outcome; releases; network cuts come and go), and RUN_DIR/result.json
describing it, for 'splitbrain check RUN_DIR'. The same flags write the same
bytes. RUN_DIR is created; an existing history in it is not overwritten.

Flags:
  --ops N        operations (an invoke and its completion), default 100000
  --clients N    clients contending for the locks, default 8
  --keys N       locks (keys lock-1 … lock-N; one is named lock), each
                 acquire draws one at random, default 1
  --seed N       seed of the simulation, default 1
  --violation    grant one acquire while another client holds the lock,
                 after 95 % of the operations: one overlap the check must find

Exit codes: 0 written, 254 bad arguments, 255 the folder could not be written.
`

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("histgen", flag.ContinueOnError)
	flags.SetOutput(io.Discard)
	ops := flags.Int("ops", 100_000, "")
	clients := flags.Int("clients", 8, "")
	keys := flags.Int("keys", 1, "")
	seed := flags.Uint64("seed", 1, "")
	violation := flags.Bool("violation", false, "")
	help := flags.Bool("help", false, "")
	if err := flags.Parse(args); err != nil {
		fmt.Fprintf(stderr, "histgen: %v\n%s", err, usage)
		return 254
	}
	if *help {
		fmt.Fprint(stdout, usage)
		return 0
	}
	switch {
	case flags.NArg() != 1:
		fmt.Fprintf(stderr, "histgen: want one run folder to write, got %d\n%s", flags.NArg(), usage)
		return 254
	case *ops < 1 || *ops > 100_000_000:
		fmt.Fprintf(stderr, "histgen: --ops %d: want a number from 1 to 100000000\n", *ops)
		return 254
	case *clients < 1 || *clients > 64:
		fmt.Fprintf(stderr, "histgen: --clients %d: want a number from 1 to 64, as a scenario allows\n", *clients)
		return 254
	case *keys < 1 || *keys > 64:
		fmt.Fprintf(stderr, "histgen: --keys %d: want a number from 1 to 64, as a scenario's workload.keys allows\n", *keys)
		return 254
	}
	m := histgen.Mutex{Clients: *clients, Keys: *keys, Ops: *ops, Seed: *seed}
	if *violation {
		m.ViolateAt = max(1, *ops/100*95)
	}
	if err := write(flags.Arg(0), m, strings.Join(append([]string{"histgen"}, args...), " ")); err != nil {
		fmt.Fprintf(stderr, "histgen: %v\n", err)
		return 255
	}
	return 0
}

func write(dir string, m histgen.Mutex, command string) (err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, runstore.HistoryFile), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, f.Close()) }()
	if err := m.Write(f); err != nil {
		return err
	}

	expect := "safe"
	if m.ViolateAt > 0 {
		expect = "violation"
	}
	var cl []string
	for i := range m.Clients {
		cl = append(cl, fmt.Sprintf("c%d", i+1))
	}
	rec := runstore.Record{
		Meta: runstore.Meta{
			Scenario: "histgen-mutex",
			Description: fmt.Sprintf("A synthetic history of %d operations by %d clients on %d lock(s), written by histgen without Redis (seed %d).",
				m.Ops, m.Clients, len(m.KeyNames()), m.Seed),
			Lock: "synthetic", Seed: int64(m.Seed), Nodes: histgen.Nodes, Clients: cl,
			TTL: time.Duration(histgen.TTL), Expect: expect, Command: command,
		},
		Result: checker.Result{Verdict: checker.Unknown,
			Reason: "not judged yet: run splitbrain check on this folder"},
		Files: map[string]string{"history": runstore.HistoryFile},
	}
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, runstore.ResultFile), append(b, '\n'), 0o644)
}
