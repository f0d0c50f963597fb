// Command splitbrain runs Redlock fault-injection scenarios and checks
// whether mutual exclusion held.
//
// Exit codes follow Jepsen: 0 valid, 1 invalid, 2 unknown, 254 bad
// arguments, 255 internal error; a run of several plays (one per lock a
// scenario lists) exits with the worst of them.
package main

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"splitbrain/checker"
	"splitbrain/cluster"
	"splitbrain/cluster/docker"
	"splitbrain/locks"
	"splitbrain/runner"
	"splitbrain/scenarios/spec"
	"splitbrain/suite"
)

const (
	exitValid    = 0
	exitInvalid  = 1
	exitUnknown  = 2
	exitUsage    = 254
	exitInternal = 255
)

var usage = `splitbrain: Jepsen-style fault injection for the Redlock distributed lock

Usage:
  splitbrain list                       list the built-in scenarios
  splitbrain run SCENARIO [flags]       run a built-in scenario or a scenario file
  splitbrain suite [FILES...|--all] [flags]
                                        run scenarios (default: every built-in), write
                                        the safety matrix (STORE/matrix.html); exit 0
                                        only if each verdict meets its expectation
  splitbrain sweep STORY [flags]        play a story across the values of one parameter
                                        and plot how often each lock broke (STORE/sweep-STORY.html)
  splitbrain matrix DIR... [--out DIR]  assemble the safety matrix from run folders alone
  splitbrain fanout swarm|kubernetes|gather|image [SCENARIOS...|--all] [flags]
                                        play a suite in N tasks on a Docker swarm or a
                                        Kubernetes Indexed Job (docs/fanout.md)
  splitbrain check RUN_DIR [--json]     re-check a stored run (also one cut short by a crash)
  splitbrain shrink RUN_DIR [--budget 5m]
                                        shrink an invalid run of a generated workload to
                                        a minimal scenario file that still violates
  splitbrain doctor                     check what the local and Docker backends need;
                                        exit 0 when the local backend can run
  splitbrain serve [--store DIR] [--addr 127.0.0.1:8040]  browse the runs over HTTP
  splitbrain driver check COMMAND...    check a lock driver (docs/driver-protocol.md)
                                        on real nodes; exit 0 when it conforms

  splitbrain help COMMAND               a command's flags and examples (or COMMAND --help)

Flags of run and suite:
` + runFlagsHelp + `
Examples:
  splitbrain suite                      the built-in suite and its safety matrix
  splitbrain run clock-jump --seed 7    reproduce one counterexample
  splitbrain run my-schedule.yaml --lock redsync --time 30s

Exit codes: 0 valid, 1 invalid, 2 unknown, 254 bad arguments, 255 internal
error. A scenario listing several locks is played once per lock: run exits
255 if a play hit an internal error, else 1 if one is invalid, else 2 if one
is unknown, else 0; suite exits 0 only if every run met its expectation.
`

func main() {
	// go-redis logs every failed dial; under a nemesis that is most of them,
	// and the history already records what matters.
	if !becomeWorker() && supervised(os.Args[1:]) {
		if code, ok := supervise(os.Args[1:]); ok {
			os.Exit(code)
		}
	}
	redis.SetLogger(quietLogger{})
	keepSIGPIPE()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// usageError is a bad command line: exit 254 with a hint.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	var code int
	var err error
	if _, known := commandUsage[args[0]]; known && wantsHelp(args[1:]) {
		args = []string{"help", args[0]}
	}
	switch args[0] {
	case "list":
		code, err = cmdList(args[1:], stdout)
	case "run":
		setMemoryLimit()
		code, err = cmdRun(args[1:], stdout, stderr)
	case "suite":
		code, err = cmdSuite(args[1:], stdout, stderr)
	case "sweep":
		code, err = cmdSweep(args[1:], stdout, stderr)
	case "check":
		code, err = cmdCheck(args[1:], stdout, stderr)
	case "shrink":
		setMemoryLimit()
		code, err = cmdShrink(args[1:], stdout, stderr)
	case "matrix":
		code, err = cmdMatrix(args[1:], stdout)
	case "fanout":
		code, err = cmdFanout(args[1:], stdout, stderr)
	case "doctor":
		code, err = cmdDoctor(args[1:], stdout)
	case "serve":
		code, err = cmdServe(args[1:], stdout, stderr)
	case "driver":
		code, err = cmdDriver(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		if len(args) > 2 {
			err = &usageError{fmt.Sprintf("help takes at most one command, got %q", strings.Join(args[1:], " "))}
			break
		}
		err = printHelp(stdout, strings.Join(args[1:], ""))
	default:
		err = &usageError{fmt.Sprintf("unknown command %q; want list, run, suite, sweep, matrix, fanout, check, shrink, serve, doctor or driver", args[0])}
	}
	var ue *usageError
	switch {
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "splitbrain: %v\nRun 'splitbrain help' for usage.\n", err)
		return exitUsage
	case err != nil:
		fmt.Fprintf(stderr, "splitbrain: %v\n", err)
		if code == 0 {
			code = exitInternal
		}
	}
	return code
}

func cmdList(args []string, stdout io.Writer) (int, error) {
	if len(args) > 0 {
		return exitUsage, &usageError{fmt.Sprintf("list takes no arguments, got %q", strings.Join(args, " "))}
	}
	for _, name := range spec.Builtin() {
		sc, err := spec.Load(name)
		if err != nil {
			return exitInternal, err
		}
		fmt.Fprintf(stdout, "%-30s expect %-9s %-17s %s\n", name, sc.ExpectSummary(), strings.Join(sc.Locks, ","), firstSentence(sc.Description))
	}
	fmt.Fprintln(stdout, "\nLock kinds (lock.kind, --lock):")
	for _, k := range locks.All {
		fenced := "no tokens"
		if k.Fenced {
			fenced = "fenced"
		}
		fmt.Fprintf(stdout, "%-17s %-9s %-26s %-9s %s\n", k.Name, k.Server, k.Shape, fenced, k.About)
	}
	return exitValid, nil
}

// parseInterleaved parses flags that may come before or after the
// positional arguments, as users type them ("run clock-jump --seed 7").
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, &usageError{explainFlagError(fs, err)}
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

type runFlags struct {
	seed      string
	store     string
	backend   string
	json      bool
	all       bool
	runs      int           // suite, sweep: plays per cell
	parallel  int           // suite, sweep: plays side by side
	plan      bool          // suite: print the plays, play none
	shard     string        // suite: play one share (I/N, or env)
	gate      string        // suite: a load gate shared with other suites
	noReplay  bool          // suite: play no missed play again
	param     string        // sweep: the parameter swept
	values    string        // sweep: its values, comma-separated
	shrink    bool          // run: shrink an invalid play
	budget    time.Duration // run --shrink: the shrink's budget
	overrides spec.Overrides
	// lockDrivers are --lock-driver's values: the user's lock drivers.
	lockDrivers lockDriverFlag
	// set are the override flags given, in order, for the rerun command.
	set []string
}

// parseRunFlags parses the flags shared by run and suite and returns the
// positional arguments and the seed.
func parseRunFlags(name string, args []string) (runFlags, []string, int64, error) {
	var f runFlags
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&f.seed, "seed", "", "a whole number such as 42")
	fs.StringVar(&f.store, "store", "store", "a folder for the runs, such as store")
	// Empty: the scenario file's cluster.backend, else local.
	fs.StringVar(&f.backend, "backend", "", "local or docker")
	fs.BoolVar(&f.json, "json", false, "no value (or =true, =false)")
	if name == "suite" {
		fs.BoolVar(&f.all, "all", false, "no value (or =true, =false)")
		fs.BoolVar(&f.plan, "plan", false, "no value (or =true, =false)")
		fs.StringVar(&f.shard, "shard", "", "I/N, the I-th of N shares from 0 (such as 0/4), or env for $"+suite.ShardEnv+"'s")
		fs.StringVar(&f.gate, "gate", "", "a file such as /store/loadgate, the same for each suite that shares the gate")
		fs.BoolVar(&f.noReplay, "no-replay", false, "no value (or =true, =false)")
	}
	if name == "suite" || name == "sweep" {
		fs.IntVar(&f.runs, "runs", 1, "a whole number from 1 to 1000")
		fs.IntVar(&f.parallel, "parallel", suite.DefaultParallel(), "a whole number from 1 to 64")
	}
	if name == "sweep" {
		fs.StringVar(&f.param, "param", "", "a parameter such as rate, ttl or cpu")
		fs.StringVar(&f.values, "values", "", "values separated by commas, such as +0.5%,+1%,+2%")
	}
	if name == "run" {
		fs.BoolVar(&f.shrink, "shrink", false, "no value (or =true, =false)")
		fs.DurationVar(&f.budget, "budget", 5*time.Minute, "a duration such as 5m (0: no bound)")
	}
	fs.StringVar(&f.overrides.Lock, "lock", "", "one of "+strings.Join(locks.Matrix(), ", ")+", or a --lock-driver's name")
	fs.Var(&f.lockDrivers, "lock-driver", "NAME=COMMAND, a lock driver of yours (docs/driver-protocol.md)")
	fs.IntVar(&f.overrides.Clients, "clients", 0, fmt.Sprintf("a whole number from 1 to %d", spec.MaxClients))
	fs.DurationVar(&f.overrides.Duration, "time", 0, "a duration such as 10s or 1m30s")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return f, nil, 0, err
	}
	f.overrides.Drivers = f.lockDrivers.names()
	given := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) {
		given[fl.Name] = true
		switch fl.Name {
		case "lock", "clients", "time":
			f.set = append(f.set, "--"+fl.Name, fl.Value.String())
		}
	})
	if err := f.overrides.Check(func(name string) bool { return given[name] }); err != nil {
		return f, nil, 0, &usageError{err.Error()}
	}
	if given["budget"] && !f.shrink {
		return f, nil, 0, &usageError{"--budget is the budget of --shrink; give --shrink too"}
	}
	if f.budget < 0 {
		return f, nil, 0, &usageError{fmt.Sprintf("--budget %v: want a duration of 0 (no bound) or more, such as 5m", f.budget)}
	}
	if f.backend != "" && !slices.Contains(spec.Backends, f.backend) {
		return f, nil, 0, &usageError{fmt.Sprintf("--backend %q: want one of %s", f.backend, strings.Join(spec.Backends, ", "))}
	}
	if f.store == "" {
		return f, nil, 0, &usageError{"--store is empty; give a folder for the runs"}
	}
	seed, err := parseSeed(f.seed)
	return f, pos, seed, err
}

func cmdRun(args []string, stdout, stderr io.Writer) (int, error) {
	f, pos, seed, err := parseRunFlags("run", args)
	if err != nil {
		return exitUsage, err
	}
	if len(pos) != 1 {
		return exitUsage, &usageError{fmt.Sprintf("run takes one scenario (a built-in name or a .yaml file), got %d; built-ins: %s",
			len(pos), strings.Join(spec.Builtin(), ", "))}
	}
	sc, err := loadScenario(pos[0])
	if err != nil {
		return exitUsage, err
	}
	if err := checkStore(f.store, sc.Name); err != nil {
		return exitUsage, err
	}
	ctx, stdout, stderr, stop := stopContext(stdout, stderr)
	defer stop()
	progress := stdout
	if f.json {
		progress = stderr
	}
	if err := withDrivers(ctx, []*spec.Scenario{sc}, f, progress, true); err != nil {
		return exitUsage, err
	}
	plays := sc.Plays()
	for _, play := range plays {
		if err := refuseUnfit(play); err != nil {
			return exitUsage, err
		}
	}
	var rows []runSummary
	var codes []int
	for i, play := range plays {
		if ctx.Err() != nil {
			// Ctrl-C: the plays not started have no verdict.
			codes = append(codes, exitUnknown)
			break
		}
		if i > 0 && !f.json {
			fmt.Fprintln(stdout)
		}
		out, err := runOne(ctx, play, seed, f, len(plays) > 1, stdout, stderr)
		if out == nil {
			// No run folder was made (no engine, no redis-server): the
			// next lock would fail the same way.
			return exitInternal, err
		}
		switch {
		case err != nil && out.Result.Verdict != checker.Invalid:
			codes = append(codes, exitInternal)
		default:
			codes = append(codes, out.Result.Verdict.ExitCode())
		}
		row := summarize(play, seed, out)
		if err != nil {
			row.Error = err.Error()
		}
		rows = append(rows, row)
		if f.shrink {
			shrinkPlay(ctx, out, play, f, stdout, stderr)
		}
	}
	if f.json {
		if len(plays) == 1 && len(rows) == 1 {
			writeJSON(stdout, rows[0])
		} else {
			writeJSON(stdout, rows)
		}
	}
	return worstExit(codes), nil
}

// worstExit combines the exit codes of several plays: an internal error
// above all, then invalid, then unknown; 0 only when every play is valid.
func worstExit(codes []int) int {
	for _, c := range []int{exitInternal, exitInvalid, exitUnknown} {
		if slices.Contains(codes, c) {
			return c
		}
	}
	return exitValid
}

func loadScenario(nameOrPath string) (*spec.Scenario, error) {
	sc, err := spec.Load(nameOrPath)
	if err != nil {
		return nil, &usageError{err.Error()}
	}
	return sc, nil
}

// runOne runs one scenario and prints its progress and verdict (text mode)
// or only its progress, to stderr (JSON mode).
// multi says the scenario is one of several plays (one per lock): the
// rerun command then names its lock.
func runOne(ctx context.Context, sc *spec.Scenario, seed int64, f runFlags, multi bool, stdout, stderr io.Writer) (*runner.Outcome, error) {
	progress := stderr
	if !f.json {
		progress = stdout
	}
	backend := runner.Backend(f.backend, sc.Backend)
	if err := backendReady(ctx, backend); err != nil {
		return nil, err
	}
	if multi {
		fmt.Fprintf(progress, "splitbrain: scenario %s against %s, seed %d\n", sc.Name, sc.Lock.Kind, seed)
	} else {
		fmt.Fprintf(progress, "splitbrain: scenario %s, seed %d\n", sc.Name, seed)
	}
	out, err := runner.Run(ctx, sc, runner.RunOptions{
		Seed:     seed,
		Store:    f.store,
		Command:  rerunCommand(sc, seed, f, multi),
		Progress: progress,
		Backend:  backend,
	})
	if err != nil {
		fmt.Fprintf(stderr, "splitbrain: %v\n", err)
	}
	if out != nil && !f.json {
		if err != nil && out.Result.Verdict != checker.Invalid {
			// A run whose record could not be written (a full disk), or
			// whose cluster failed, has no verdict to show: what its
			// history would judge is not what the store holds.
			fmt.Fprintf(stdout, "verdict: none, the run FAILED (exit 255): %s\n", firstLineOf(err))
		} else {
			printVerdict(stdout, sc, out)
		}
		report := filepath.Join(out.Dir, "report.html")
		if _, serr := os.Stat(report); serr != nil {
			fmt.Fprintf(stdout, "no report: %s was not written\n", report)
		} else {
			fmt.Fprintf(stdout, "report: %s\n", report)
		}
	}
	return out, err
}

// firstLineOf is err's first line.
func firstLineOf(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

type runSummary struct {
	Scenario   string          `json:"scenario"`
	Lock       string          `json:"lock"`
	Seed       int64           `json:"seed"`
	Dir        string          `json:"dir"`
	Report     string          `json:"report"`
	Verdict    checker.Verdict `json:"verdict"`
	Expect     string          `json:"expect"`
	AsExpected bool            `json:"as_expected"`
	Reason     string          `json:"reason"`
	// Error is why the run failed (exit 255): its verdict, if any, is
	// not one to go by.
	Error string `json:"error,omitempty"`
}

func summarize(sc *spec.Scenario, seed int64, out *runner.Outcome) runSummary {
	return runSummary{sc.Name, sc.Lock.Kind, seed, out.Dir, filepath.Join(out.Dir, "report.html"),
		out.Result.Verdict, string(sc.Expect), out.AsExpected, out.Result.Reason, ""}
}

func writeJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func printVerdict(w io.Writer, sc *spec.Scenario, out *runner.Outcome) {
	res := out.Result
	match := "as expected"
	if !out.AsExpected {
		match = "NOT as expected"
	}
	fmt.Fprintf(w, "verdict: %s (expected %s: %s)\n", strings.ToUpper(string(res.Verdict)), sc.Expect, match)
	if res.Reason != "" {
		fmt.Fprintf(w, "  %s\n", res.Reason)
	}
	for _, v := range res.Violations {
		fmt.Fprintf(w, "  %s\n", v.Text)
	}
	if line := livenessLine(res); line != "" {
		fmt.Fprintf(w, "  %s\n", line)
	}
}

// livenessLine says a play's liveness verdicts and availability in one
// line: "liveness: deadlock freedom valid, fault tolerance unknown; 33 of
// 220 attempts granted, longest wait 1.25s (bound 0.70s)".
func livenessLine(res checker.Result) string {
	l, a := res.Liveness, res.Availability
	if l == nil || a == nil {
		return ""
	}
	line := fmt.Sprintf("liveness: deadlock freedom %s, fault tolerance %s; %d of %d attempts granted",
		l.DeadlockFreedom.Verdict, l.FaultTolerance.Verdict, a.Granted, a.Attempts)
	if a.Longest != nil {
		line += ", longest wait " + checker.Seconds(a.Longest.Length())
		if a.Bound > 0 {
			line += " (bound " + checker.Seconds(a.Bound) + ")"
		}
	}
	return line
}

func rerunCommand(sc *spec.Scenario, seed int64, f runFlags, multi bool) string {
	name := sc.Name
	if !strings.HasPrefix(sc.File, "builtin/") {
		name = sc.File
	}
	parts := []string{"splitbrain", "run", name, "--seed", strconv.FormatInt(seed, 10)}
	for i := 0; i+1 < len(f.set); i += 2 {
		// A suite's --time shortens its generated workloads and leaves a
		// scripted story alone, and run refuses --time on a scripted one:
		// its re-run has none.
		if f.set[i] == "--time" && !sc.Workload.Generated() {
			continue
		}
		parts = append(parts, f.set[i], f.set[i+1])
	}
	for _, d := range f.lockDrivers {
		parts = append(parts, "--lock-driver", d)
	}
	if multi && f.overrides.Lock == "" {
		// This play alone, not every lock the scenario lists.
		parts = append(parts, "--lock", sc.Lock.Kind)
	}
	if f.store != "store" {
		parts = append(parts, "--store", f.store)
	}
	if b := runner.Backend(f.backend, sc.Backend); b != spec.BackendLocal {
		parts = append(parts, "--backend", b)
	}
	return shellCommand(parts...)
}

// backendReady fails before anything of a run is made when the backend
// cannot work here: for docker, when no engine answers or the harness is
// in its private network; for local, when it is not (localNetworkReady).
func backendReady(ctx context.Context, backend string) error {
	// Both backends need it: the local one runs it, the Docker one builds
	// its image from it (and the storage node runs locally).
	if _, err := exec.LookPath("redis-server"); err != nil {
		return cluster.ErrNoRedisServer
	}
	if backend != spec.BackendDocker {
		return localNetworkReady()
	}
	if err := dockerNetworkReady(); err != nil {
		return err
	}
	eng, err := docker.Connect(ctx)
	if err != nil {
		return fmt.Errorf("--backend docker: %w; start the Docker engine (or point DOCKER_HOST at one), or use --backend local", err)
	}
	return eng.Close()
}

// parseSeed reads --seed, or draws a fresh seed from crypto/rand (not from
// the clock: two runs started together must not share a seed).
func parseSeed(s string) (int64, error) {
	if s == "" {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return 0, err
		}
		return int64(binary.LittleEndian.Uint64(b[:]) >> 1), nil
	}
	seed, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, &usageError{fmt.Sprintf("--seed %q: want a whole number such as 42", s)}
	}
	return seed, nil
}

func firstSentence(s string) string {
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i+1]
	}
	return s
}
