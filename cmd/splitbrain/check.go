package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"splitbrain/checker"
	"splitbrain/history"
	"splitbrain/internal/regular"
	"splitbrain/pages"
	"splitbrain/runstore"
)

const checkUsage = `Usage: splitbrain check RUN_DIR [--timeout 30s] [--json]

Re-checks a stored run offline from its history.jsonl and rewrites its
result.json, report.html and porcupine.html. A history cut short by a crash
(a torn or corrupt line) is checked up to that line: a violation in it is
still a violation, but its absence is unknown, never valid.

Flags:
  --timeout D  bound on each porcupine search (default 30s); running out
               makes the verdict unknown
  --json       print the outcome as JSON
  -h, --help   this help

Examples:
  splitbrain check store/clock-jump/latest
  splitbrain check store/random-all-counter/latest --timeout 2m --json

Exit codes: 0 valid, 1 invalid, 2 unknown, 254 bad arguments, 255 internal
error.
`

// memoryLimit is the soft memory limit of check and run, unless
// GOMEMLIMIT sets one. Both hold a whole history in memory while they
// judge it (2 million events of a million-operation run are some 400 MB,
// with the check's and the report's work up to about 600 MB live), and by
// default the garbage collector lets the heap grow to twice what is live
// before collecting: 1.2 GB for that run. Near the limit it collects
// sooner instead; a larger history goes past it (the limit is soft) with
// the collector's share of the CPU capped. See BENCHMARKS.md.
const memoryLimit = 896 << 20

func setMemoryLimit() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(memoryLimit)
	}
}

// collectAtTheLimit makes check collect garbage only near its memory
// limit, unless GOGC or GOMEMLIMIT say otherwise. check holds a history
// and judges it once: the collector's proportional pacing would mark the
// whole history (400 MB of events at a million operations) each time the
// check's and the report's garbage doubled what was live, three times in
// all, where near the limit it marks once or twice, for the same peak.
// run keeps the default: it lives long and holds little until its end.
func collectAtTheLimit() {
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetGCPercent(-1)
	}
}

// checkSummary is check's --json output.
type checkSummary struct {
	Dir        string             `json:"dir"`
	Report     string             `json:"report"`
	Verdict    checker.Verdict    `json:"verdict"`
	Reason     string             `json:"reason"`
	Incomplete string             `json:"incomplete,omitempty"`
	Events     int                `json:"events"`
	Properties []checker.Property `json:"properties,omitempty"`
}

func cmdCheck(args []string, stdout, stderr io.Writer) (int, error) {
	flags := flag.NewFlagSet("check", flag.ContinueOnError)
	flags.SetOutput(io.Discard)
	timeout := flags.Duration("timeout", checker.DefaultTimeout, "a duration such as 30s (0: no bound)")
	asJSON := flags.Bool("json", false, "no value (or =true, =false)")
	help := flags.Bool("help", false, "")
	pos, err := parseInterleaved(flags, args)
	if err != nil {
		return exitUsage, err
	}
	if *help {
		fmt.Fprint(stdout, checkUsage)
		return exitValid, nil
	}
	if len(pos) != 1 {
		return exitUsage, &usageError{fmt.Sprintf("check takes one run folder (such as store/clock-jump/latest), got %d", len(pos))}
	}
	if *timeout < 0 {
		return exitUsage, &usageError{fmt.Sprintf("--timeout %v: want a duration of 0 (no bound) or more, such as 30s", *timeout)}
	}
	setMemoryLimit()
	collectAtTheLimit()
	dir := pos[0]
	path := filepath.Join(dir, runstore.HistoryFile)
	if fi, err := os.Stat(path); err != nil {
		return exitUsage, &usageError{fmt.Sprintf("%s is not a run folder: %v", dir, err)}
	} else if !fi.Mode().IsRegular() {
		return exitUsage, &usageError{fmt.Sprintf("%s is not a run folder: %s is a %s, not a file", dir, path, regular.Kind(fi.Mode()))}
	}

	events, err := history.ReadFile(path)
	opts := []checker.Option{checker.WithTimeout(*timeout)}
	incomplete := ""
	var le *history.LineError
	switch {
	case err == nil:
	case errors.Is(err, history.ErrTooLarge):
		return exitUsage, &usageError{fmt.Sprintf("%v; a run of a million operations writes some 200 MB", err)}
	case errors.Is(err, history.ErrNotFile):
		// Replaced after the stat above: refused all the same.
		return exitUsage, &usageError{fmt.Sprintf("%s is not a run folder: %v", dir, err)}
	case errors.As(err, &le) && errors.Is(err, history.ErrTruncated):
		incomplete = fmt.Sprintf("%s ends in a line cut short at line %d, as a crash leaves it; the %d event(s) before it were checked",
			runstore.HistoryFile, le.Line, len(events))
	case errors.As(err, &le) && errors.Is(err, history.ErrUnreadable) && len(events) == 0:
		return exitInternal, fmt.Errorf("%s: %w", path, le.Err)
	case errors.As(err, &le) && errors.Is(err, history.ErrUnreadable):
		incomplete = fmt.Sprintf("%s could not be read past line %d (%v); the %d event(s) before it were checked",
			runstore.HistoryFile, le.Line-1, le.Err, len(events))
	case errors.As(err, &le) && errors.Is(err, history.ErrLineTooLong):
		// Not read to its end: a line without one would be held whole.
		incomplete = fmt.Sprintf("%s:%d is not read to its end (%v); the %d event(s) before it were checked",
			runstore.HistoryFile, le.Line, le.Err, len(events))
	case errors.As(err, &le):
		incomplete = fmt.Sprintf("%s:%d is not a history event (%v); the %d event(s) before it were checked",
			runstore.HistoryFile, le.Line, le.Err, len(events))
	default:
		return exitInternal, err
	}
	if incomplete == "" {
		incomplete = history.Unfinished(events)
	}
	if incomplete != "" {
		opts = append(opts, checker.Incomplete(incomplete))
		fmt.Fprintf(stderr, "splitbrain: %s\n", incomplete)
	}
	meta, err := checkMeta(dir)
	// The liveness promises the play expected decide its verdict, as
	// when it was run.
	opts = append(opts, checker.CheckOptions(meta.Expect)...)
	res := checker.Check(events, opts...)

	switch {
	case errors.Is(err, fs.ErrNotExist):
		fmt.Fprintf(stderr, "splitbrain: %s has no %s (the run did not finish); the report's header is rebuilt from the folder's name\n",
			dir, runstore.ResultFile)
	case err != nil:
		fmt.Fprintf(stderr, "splitbrain: %v; the report's header is rebuilt from the folder's name\n", err)
	}
	if err := pages.Write(dir, meta, events, res); err != nil {
		fmt.Fprintf(stderr, "splitbrain: %v\n", err)
		if res.Verdict == checker.Valid {
			return exitInternal, nil
		}
	}
	report := filepath.Join(dir, runstore.ReportFile)
	if *asJSON {
		writeJSON(stdout, checkSummary{Dir: dir, Report: report, Verdict: res.Verdict, Reason: res.Reason,
			Incomplete: incomplete, Events: len(events), Properties: res.Properties})
		return res.Verdict.ExitCode(), nil
	}
	fmt.Fprintf(stdout, "checked %d event(s) of %s in %s\n", len(events), path, checker.Seconds(int64(res.CheckTime)))
	fmt.Fprintf(stdout, "verdict: %s\n  %s\n", strings.ToUpper(string(res.Verdict)), res.Reason)
	for _, p := range res.Properties {
		role := ""
		if !p.Decides {
			role = " (explains, does not decide)"
		}
		fmt.Fprintf(stdout, "  %s: %s%s\n", p.Name, p.Verdict, role)
	}
	for _, v := range res.Violations {
		fmt.Fprintf(stdout, "  %s\n", v.Text)
	}
	fmt.Fprintf(stdout, "report: %s\n", report)
	return res.Verdict.ExitCode(), nil
}

// checkMeta keeps what the run recorded about itself; a run that crashed
// before writing result.json gets what its folder's name says.
func checkMeta(dir string) (runstore.Meta, error) {
	meta, err := runstore.ReadMeta(dir)
	if err == nil {
		return meta, nil
	}
	abs, aerr := filepath.Abs(dir)
	if aerr != nil {
		abs = dir
	}
	if resolved, rerr := filepath.EvalSymlinks(abs); rerr == nil {
		abs = resolved
	}
	return runstore.Meta{
		Scenario: filepath.Base(filepath.Dir(abs)),
		Command:  shellCommand("splitbrain", "check", dir),
	}, err
}
