// Command splitbrain runs Redlock fault-injection scenarios and checks
// whether mutual exclusion held.
//
// Exit codes follow Jepsen: 0 valid, 1 invalid, 2 unknown, 254 bad
// arguments, 255 internal error.
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
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"

	"splitbrain/checker"
	"splitbrain/docker"
	"splitbrain/scenarios"
)

const (
	exitValid    = 0
	exitInvalid  = 1
	exitUnknown  = 2
	exitUsage    = 254
	exitInternal = 255
)

const usage = `splitbrain: Jepsen-style fault injection for the Redlock distributed lock

Usage:
  splitbrain list                       list the built-in scenarios
  splitbrain run SCENARIO [flags]       run a built-in scenario or a scenario file
  splitbrain suite [flags]              run every built-in scenario; exit 0 only
                                        if each verdict meets its expectation
  splitbrain check RUN_DIR [--json]     re-check a stored run (also one cut short by a crash)
  splitbrain doctor                     check what the local and Docker backends need;
                                        exit 0 when the local backend can run
  splitbrain serve [--store DIR] [--addr 127.0.0.1:8040]  browse the runs over HTTP

Flags of run and suite:
  --seed N        seed of the workload's and the nemesis's random draws
                  (default: a fresh random seed, printed and stored)
  --store DIR     where runs are written (default: store)
  --backend NAME  where the Redis nodes run: local (default), or docker
                  (containers of an image built here from redis-server)
  --json          print the outcome as JSON instead of text

Exit codes: 0 valid, 1 invalid, 2 unknown, 254 bad arguments, 255 internal error.
`

func main() {
	// go-redis logs every failed dial; under a nemesis that is most of them,
	// and the history already records what matters.
	redis.SetLogger(quietLogger{})
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
	switch args[0] {
	case "list":
		code, err = cmdList(args[1:], stdout)
	case "run":
		code, err = cmdRun(args[1:], stdout, stderr)
	case "suite":
		code, err = cmdSuite(args[1:], stdout, stderr)
	case "check":
		code, err = cmdCheck(args[1:], stdout, stderr)
	case "doctor":
		code, err = cmdDoctor(args[1:], stdout)
	case "serve":
		code, err = cmdServe(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return exitValid
	default:
		err = &usageError{fmt.Sprintf("unknown command %q; want list, run, suite, check, serve or doctor", args[0])}
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
	for _, name := range scenarios.Builtin() {
		sc, err := scenarios.Load(name)
		if err != nil {
			return exitInternal, err
		}
		fmt.Fprintf(stdout, "%-22s expect %-9s %s\n", name, sc.Expect, firstSentence(sc.Description))
	}
	return exitValid, nil
}

// parseInterleaved parses flags that may come before or after the
// positional arguments, as users type them ("run clock-jump --seed 7").
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, &usageError{err.Error()}
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
	seed    string
	store   string
	backend string
	json    bool
}

// parseRunFlags parses the flags shared by run and suite and returns the
// positional arguments and the seed.
func parseRunFlags(name string, args []string) (runFlags, []string, int64, error) {
	var f runFlags
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&f.seed, "seed", "", "")
	fs.StringVar(&f.store, "store", "store", "")
	fs.StringVar(&f.backend, "backend", "local", "")
	fs.BoolVar(&f.json, "json", false, "")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return f, nil, 0, err
	}
	if !slices.Contains(scenarios.Backends, f.backend) {
		return f, nil, 0, &usageError{fmt.Sprintf("--backend %q: want one of %s", f.backend, strings.Join(scenarios.Backends, ", "))}
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
			len(pos), strings.Join(scenarios.Builtin(), ", "))}
	}
	sc, err := loadScenario(pos[0])
	if err != nil {
		return exitUsage, err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	out, err := runOne(ctx, sc, seed, f, stdout, stderr)
	if out == nil {
		return exitInternal, err
	}
	if f.json {
		writeJSON(stdout, summarize(sc, seed, out))
	}
	if err != nil && out.Result.Verdict != checker.Invalid {
		return exitInternal, nil
	}
	return out.Result.Verdict.ExitCode(), nil
}

func cmdSuite(args []string, stdout, stderr io.Writer) (int, error) {
	f, pos, seed, err := parseRunFlags("suite", args)
	if err != nil {
		return exitUsage, err
	}
	if len(pos) != 0 {
		return exitUsage, &usageError{fmt.Sprintf("suite runs every built-in scenario and takes no scenario, got %q", strings.Join(pos, " "))}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var rows []runSummary
	code := exitValid
	for _, name := range scenarios.Builtin() {
		if ctx.Err() != nil {
			code = exitUnknown
			break
		}
		sc, err := scenarios.Load(name)
		if err != nil {
			return exitInternal, err
		}
		out, err := runOne(ctx, sc, seed, f, stdout, stderr)
		if out == nil {
			return exitInternal, err
		}
		row := summarize(sc, seed, out)
		rows = append(rows, row)
		if !row.AsExpected && code == exitValid {
			code = exitInvalid
		}
		if !f.json {
			fmt.Fprintln(stdout)
		}
	}
	if f.json {
		writeJSON(stdout, rows)
		return code, nil
	}
	fmt.Fprintf(stdout, "%-22s %-10s %-8s %-4s %s\n", "SCENARIO", "EXPECT", "VERDICT", "OK", "REPORT")
	for _, r := range rows {
		ok := "yes"
		if !r.AsExpected {
			ok = "NO"
		}
		fmt.Fprintf(stdout, "%-22s %-10s %-8s %-4s %s\n", r.Scenario, r.Expect, r.Verdict, ok, r.Report)
	}
	met := 0
	for _, r := range rows {
		if r.AsExpected {
			met++
		}
	}
	fmt.Fprintf(stdout, "%d of %d scenarios met their expectation (seed %d)\n", met, len(scenarios.Builtin()), seed)
	return code, nil
}

func loadScenario(nameOrPath string) (*scenarios.Scenario, error) {
	sc, err := scenarios.Load(nameOrPath)
	if err != nil {
		return nil, &usageError{err.Error()}
	}
	return sc, nil
}

// runOne runs one scenario and prints its progress and verdict (text mode)
// or only its progress, to stderr (JSON mode).
func runOne(ctx context.Context, sc *scenarios.Scenario, seed int64, f runFlags, stdout, stderr io.Writer) (*scenarios.Outcome, error) {
	progress := stderr
	if !f.json {
		progress = stdout
	}
	if err := backendReady(ctx, f.backend); err != nil {
		return nil, err
	}
	fmt.Fprintf(progress, "splitbrain: scenario %s, seed %d\n", sc.Name, seed)
	out, err := scenarios.Run(ctx, sc, scenarios.RunOptions{
		Seed:     seed,
		Store:    f.store,
		Command:  rerunCommand(sc, seed, f),
		Progress: progress,
		Backend:  f.backend,
	})
	if err != nil {
		fmt.Fprintf(stderr, "splitbrain: %v\n", err)
	}
	if out != nil && !f.json {
		printVerdict(stdout, sc, out)
		fmt.Fprintf(stdout, "report: %s\n", filepath.Join(out.Dir, "report.html"))
	}
	return out, err
}

type runSummary struct {
	Scenario   string          `json:"scenario"`
	Seed       int64           `json:"seed"`
	Dir        string          `json:"dir"`
	Report     string          `json:"report"`
	Verdict    checker.Verdict `json:"verdict"`
	Expect     string          `json:"expect"`
	AsExpected bool            `json:"as_expected"`
	Reason     string          `json:"reason"`
}

func summarize(sc *scenarios.Scenario, seed int64, out *scenarios.Outcome) runSummary {
	return runSummary{sc.Name, seed, out.Dir, filepath.Join(out.Dir, "report.html"),
		out.Result.Verdict, string(sc.Expect), out.AsExpected, out.Result.Reason}
}

func writeJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func printVerdict(w io.Writer, sc *scenarios.Scenario, out *scenarios.Outcome) {
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
}

func rerunCommand(sc *scenarios.Scenario, seed int64, f runFlags) string {
	name := sc.Name
	if !strings.HasPrefix(sc.File, "builtin/") {
		name = sc.File
	}
	parts := []string{"splitbrain", "run", name, "--seed", strconv.FormatInt(seed, 10)}
	if f.store != "store" {
		parts = append(parts, "--store", f.store)
	}
	if f.backend != scenarios.BackendLocal {
		parts = append(parts, "--backend", f.backend)
	}
	return strings.Join(parts, " ")
}

// backendReady fails before anything of a run is made when the backend
// cannot work here: for docker, when no engine answers.
func backendReady(ctx context.Context, backend string) error {
	if backend != scenarios.BackendDocker {
		return nil
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
