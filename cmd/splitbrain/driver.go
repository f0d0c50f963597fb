package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"splitbrain/driver"
	"splitbrain/locks"
)

const driverUsage = `Usage: splitbrain driver check [--nodes N] [--ttl 1s] [--reply-timeout 10s] [--keep] [--dir DIR] COMMAND [ARGS...]
       splitbrain driver check [flags] redis-py

Runs a short conformance suite against a lock driver (docs/driver-protocol.md).
It asks the driver what it claims (a describe hello), then, for every lock it
claims, on real servers of that kind (redis-server nodes, one node through a
sentinel, a ZooKeeper ensemble, an etcd cluster): start-up, acquire, refusal,
extend, release, the release of a lease lost while its holder was stopped, the
points it announces, an unknown outcome (every server stopped), a kill in the
middle of a request, and its exit when stdin closes. Each check prints ok,
FAIL (and what is wrong), or "cannot tell" where the lock does not report what
the check asks (its ready's unreported); the rest are skipped once the driver
is unusable. A built-in driver's ready must also agree with its lock kind's
data. --nodes is the number of masters of a lock over every node. Flags go
before the command; everything after it is the command's. The drivers'
transcripts stay in a folder printed at the end when a check failed (always
with --keep; --dir puts them in DIR).

Exits 0 when every check passed, 1 when one failed, 254 on bad arguments.

Examples:
  splitbrain driver check redis-py
  splitbrain driver check -- python3 my_driver.py
  splitbrain driver check --reply-timeout 2s ./my-driver --verbose
`

// cmdDriver runs splitbrain driver SUBCOMMAND.
func cmdDriver(args []string, stdout, stderr io.Writer) (int, error) {
	if len(args) == 0 || args[0] != "check" {
		return exitUsage, &usageError{"driver wants a subcommand: check (splitbrain driver check COMMAND...)"}
	}
	flags := flag.NewFlagSet("driver check", flag.ContinueOnError)
	flags.SetOutput(io.Discard)
	nodes := flags.Int("nodes", 3, "a whole number from 1 to 9")
	ttl := flags.Duration("ttl", time.Second, "a duration such as 1s")
	reply := flags.Duration("reply-timeout", driver.DefaultReplyTimeout, "a duration such as 10s")
	keep := flags.Bool("keep", false, "no value (or =true, =false)")
	into := flags.String("dir", "", "a folder for the transcripts and logs, kept (default: a temporary one)")
	if err := flags.Parse(args[1:]); err != nil {
		return exitUsage, &usageError{"driver check: " + explainFlagError(flags, err)}
	}
	command := flags.Args()
	switch {
	case len(command) == 0:
		return exitUsage, &usageError{"driver check wants the driver's command (or a built-in driver: " + strings.Join(driver.Builtins, ", ") + ")"}
	case *nodes < 1 || *nodes > 9:
		return exitUsage, &usageError{fmt.Sprintf("--nodes %d: want a whole number from 1 to 9", *nodes)}
	case *ttl < 100*time.Millisecond || *ttl > time.Minute:
		return exitUsage, &usageError{fmt.Sprintf("--ttl %v: want a duration from 100ms to 1m such as 1s", *ttl)}
	case *reply < 100*time.Millisecond || *reply > 10*time.Minute:
		return exitUsage, &usageError{fmt.Sprintf("--reply-timeout %v: want a duration from 100ms to 10m such as 10s", *reply)}
	}
	if err := localNetworkReady(); err != nil {
		return exitInternal, err
	}
	dir := *into
	var err error
	if dir == "" {
		if dir, err = os.MkdirTemp("", "splitbrain-driver-check-"); err != nil {
			return exitInternal, err
		}
	} else {
		*keep = true
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return exitUsage, &usageError{fmt.Sprintf("--dir %s: %v", dir, err)}
		}
	}
	name := strings.Join(command, " ")
	var kind *locks.Kind
	if len(command) == 1 && driver.IsBuiltin(command[0]) {
		kind = locks.ByName(command[0])
		if kind.MinTTL > *ttl {
			// A lock that cannot be asked for the default TTL is checked
			// at its shortest; one asked below it by --ttl is refused.
			given := false
			flags.Visit(func(fl *flag.Flag) { given = given || fl.Name == "ttl" })
			if given {
				_ = os.RemoveAll(dir)
				return exitUsage, &usageError{fmt.Sprintf("--ttl %v: %s cannot be asked for a TTL under %v", *ttl, kind.Name, kind.MinTTL)}
			}
			*ttl = kind.MinTTL
		}
		if command, err = driver.Builtin(command[0], dir); err != nil {
			_ = os.RemoveAll(dir)
			return exitInternal, err
		}
	}
	ctx, out, _, stop := stopContext(stdout, stderr)
	defer stop()
	findings, err := driver.Check(ctx, driver.CheckConfig{Command: command, Name: name, Nodes: *nodes,
		TTL: *ttl, ReplyTimeout: *reply, Dir: dir, Kind: kind}, out)
	if err != nil {
		_ = os.RemoveAll(dir)
		return exitInternal, err
	}
	failed, cannot := 0, 0
	for _, f := range findings {
		switch f.Status {
		case driver.StatusFail:
			failed++
		case driver.StatusCannotTell:
			cannot++
		}
	}
	tell := ""
	if cannot > 0 {
		tell = fmt.Sprintf("; %d the lock does not report (cannot tell)", cannot)
	}
	if failed == 0 {
		fmt.Fprintf(out, "every check passed (%d)%s\n", len(findings)-cannot, tell)
	} else {
		fmt.Fprintf(out, "%d of %d checks failed%s\n", failed, len(findings), tell)
	}
	if failed > 0 || *keep {
		// Kept for the user to read: a failure's details are in them.
		fmt.Fprintf(out, "the drivers' transcripts and the nodes' logs are in %s\n", dir)
	} else {
		_ = os.RemoveAll(dir)
	}
	if ctx.Err() != nil {
		return exitUnknown, nil
	}
	if failed > 0 {
		return exitInvalid, nil
	}
	return exitValid, nil
}
