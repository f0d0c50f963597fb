package main

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

	"splitbrain/driver"
	"splitbrain/internal/shell"
	"splitbrain/locks"
	"splitbrain/scenarios/fit"
	"splitbrain/scenarios/spec"
	"splitbrain/suite"
)

// A user's lock driver as columns of the landscape: --lock-driver
// NAME=COMMAND (run and suite, repeatable) describes the driver (its
// ready: the kinds of server it claims, package driver's Columns) and adds
// one lock kind per claim to every story (spec.Scenario.Drivers); a file's
// lock.kind driver is described the same way. Nothing starts a server for
// a driver before its claims are known: a story that needs a server it
// cannot use is n/a with the reason.

// lockDriverFlag is --lock-driver's values, as given.
type lockDriverFlag []string

func (l *lockDriverFlag) String() string { return strings.Join(*l, " ") }

func (l *lockDriverFlag) Set(v string) error {
	if _, _, err := splitLockDriver(v); err != nil {
		return err
	}
	*l = append(*l, v)
	return nil
}

// driverName is what a user's driver may be called: it names a column,
// run folders and files.
var driverName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,39}$`)

// splitLockDriver reads NAME=COMMAND: the name, and the command's words
// (split at spaces; single quotes keep a word's spaces, as a shell's do).
func splitLockDriver(v string) (string, []string, error) {
	name, cmd, ok := strings.Cut(v, "=")
	switch {
	case !ok || cmd == "":
		return "", nil, fmt.Errorf("want NAME=COMMAND, such as mylock='php -d display_errors=stderr my_driver.php'; got %q", v)
	case !driverName.MatchString(name):
		return "", nil, fmt.Errorf("driver name %q: want a lower-case letter, then up to 39 lower-case letters, digits or '-'", name)
	case locks.ByName(name) != nil:
		return "", nil, fmt.Errorf("driver name %q is a built-in lock kind's; choose another", name)
	}
	words := strings.Fields(cmd)
	if strings.ContainsAny(cmd, `'"\`) {
		if words, ok = shell.Split(strings.Join(strings.Fields(cmd), " ")); !ok {
			return "", nil, fmt.Errorf("driver %s: command %q: want words apart by spaces, a word with spaces in single quotes", name, cmd)
		}
	}
	if len(words) == 1 && driver.IsBuiltin(words[0]) {
		return "", nil, fmt.Errorf("driver %s: %s is a built-in lock kind: give --lock %s", name, words[0], words[0])
	}
	return name, words, nil
}

// driverNames are the names --lock-driver gives, for --lock's check
// before the drivers are described.
func (l lockDriverFlag) names() []string {
	var out []string
	for _, v := range l {
		name, _, _ := splitLockDriver(v)
		out = append(out, name)
	}
	return out
}

// describeDrivers asks each --lock-driver what it claims and makes its
// lock kinds, saying on progress what each driver is.
func describeDrivers(ctx context.Context, l lockDriverFlag, progress io.Writer) ([]*locks.Kind, error) {
	var out []*locks.Kind
	for _, v := range l {
		name, cmd, err := splitLockDriver(v)
		if err != nil {
			return nil, &usageError{"--lock-driver " + err.Error()}
		}
		ready, note, err := driver.Describe(ctx, cmd, name, nil)
		if err != nil {
			return nil, &usageError{fmt.Sprintf("--lock-driver %s: %v", name, err)}
		}
		kinds := driver.UserKinds(name, cmd, ready)
		printDriver(progress, name, ready, note, kinds)
		out = append(out, kinds...)
	}
	return out, nil
}

func printDriver(w io.Writer, name string, ready driver.Message, note string, kinds []*locks.Kind) {
	var cols []string
	for _, k := range kinds {
		cols = append(cols, fmt.Sprintf("%s (%s)", k.Name, columnText(k)))
	}
	lib := ready.Versions()
	if lib == "" {
		lib = "library not named in its ready"
	}
	fmt.Fprintf(w, "driver %s: %s; %s\n", name, lib, strings.Join(cols, ", "))
	if note != "" {
		fmt.Fprintf(w, "driver %s: %s\n", name, note)
	}
}

// columnText says what a lock kind runs on: "redis, independent masters",
// "zookeeper", with its fencing and what it does not report.
func columnText(k *locks.Kind) string {
	s := k.Server
	if k.Shape != locks.Ensemble {
		s += ", " + k.Shape.String()
		if k.Sentinel {
			s += " or through Sentinel"
		}
	}
	if k.Fenced {
		s += ", fenced"
	}
	if len(k.Unreported) > 0 {
		s += ", cannot tell the outcome of " + strings.Join(k.Unreported, " and ")
	}
	return s
}

// describeFileDriver makes the lock kind of a file's lock.kind driver:
// its program's ready, the lock its lock.server and lock.deployment
// choose (else the first it claims). described caches the readies by
// command, so a suite of files naming one driver starts it once.
func describeFileDriver(ctx context.Context, sc *spec.Scenario, described map[string]driver.Message, progress io.Writer) error {
	if !slices.Contains(sc.Locks, locks.Driver.Name) || sc.KindOf(locks.Driver.Name) != locks.Driver {
		return nil
	}
	key := shell.Command(sc.Lock.Command...)
	ready, seen := described[key]
	if !seen {
		var note string
		var err error
		if ready, note, err = driver.Describe(ctx, sc.Lock.Command, locks.Driver.Name, nil); err != nil {
			return &usageError{fmt.Sprintf("%s: lock.command: %v", sc.File, err)}
		}
		described[key] = ready
		if note != "" {
			fmt.Fprintf(progress, "driver %s (%s): %s\n", locks.Driver.Name, key, note)
		}
	}
	cols := driver.Columns(ready)
	i := slices.IndexFunc(cols, func(c driver.Column) bool {
		return (sc.Lock.Server == "" || c.Server == sc.Lock.Server) && (sc.Lock.Deployment == "" || c.Deployment == sc.Lock.Deployment)
	})
	if i < 0 {
		var claims []string
		for _, c := range cols {
			claims = append(claims, c.Server+" "+c.Deployment)
		}
		return &usageError{fmt.Sprintf("%s:%d: lock.server %s %s: the driver claims %s in its ready; want one of those",
			sc.File, sc.Lock.ServerLine, sc.Lock.Server, sc.Lock.Deployment, strings.Join(claims, ", "))}
	}
	sc.Drivers = append(sc.Drivers, driver.UserKind(locks.Driver.Name, sc.Lock.Command, ready, cols[i]))
	return nil
}

// refuseUnfit refuses a play of a user's driver that its story does not
// fit — a story that needs a server the driver's lock cannot use — before
// anything starts.
func refuseUnfit(sc *spec.Scenario) error {
	if k := sc.LockKind(); k == nil || !k.User {
		return nil
	}
	if ok, why := fit.Lock(sc, sc.Lock.Kind); !ok {
		return &usageError{fmt.Sprintf("%s against %s: the story does not fit the lock: %s", sc.Name, sc.Lock.Kind, why)}
	}
	return nil
}

// withDrivers describes the drivers of the command line (--lock-driver)
// and of the files (lock.kind driver) and gives every scenario their lock
// kinds; then it applies the command line's overrides. For run (run is
// true) a --lock-driver without --lock plays the story against the user's
// driver alone, every lock it claims.
func withDrivers(ctx context.Context, scs []*spec.Scenario, f runFlags, progress io.Writer, run bool) error {
	user, err := describeDrivers(ctx, f.lockDrivers, progress)
	if err != nil {
		return err
	}
	described := map[string]driver.Message{}
	for _, sc := range scs {
		if err := describeFileDriver(ctx, sc, described, progress); err != nil {
			return err
		}
		sc.Drivers = append(sc.Drivers, user...)
	}
	o := f.overrides
	if o.Lock != "" && len(scs) > 0 && scs[0].KindOf(o.Lock) == nil {
		var names []string
		for _, k := range user {
			names = append(names, k.Name)
		}
		return &usageError{fmt.Sprintf("--lock %s: not a lock of the --lock-driver drivers, which are %s", o.Lock, strings.Join(names, ", "))}
	}
	if !run {
		return nil
	}
	for _, sc := range scs {
		if err := sc.Override(o); err != nil {
			return &usageError{err.Error()}
		}
		if o.Lock == "" && len(user) > 0 {
			sc.Locks = nil
			for _, k := range user {
				sc.Locks = append(sc.Locks, k.Name)
			}
			sc.Lock.Kind = sc.Locks[0]
			sc.Expect, _ = sc.ExpectFor(sc.Lock.Kind)
		}
	}
	return nil
}

// suiteLocks are a suite's columns: every built-in kind of the matrix,
// then the files' drivers and the user's (--lock-driver), each once; or
// --lock's alone.
func suiteLocks(scs []*spec.Scenario, only string) []string {
	if only != "" {
		return []string{only}
	}
	out := locks.Matrix()
	for _, sc := range scs {
		for _, k := range sc.Drivers {
			if !slices.Contains(out, k.Name) {
				out = append(out, k.Name)
			}
		}
	}
	return out
}

// nothingToPlay is the refusal of a suite whose every cell is n/a: why,
// for the first few.
func nothingToPlay(plan suite.Plan) error {
	var b strings.Builder
	fmt.Fprintf(&b, "nothing to play: every one of the %d cells is n/a", len(plan.Cells))
	for i, c := range plan.Cells {
		if i == 5 {
			fmt.Fprintf(&b, "\n  … and %d more", len(plan.Cells)-i)
			break
		}
		fmt.Fprintf(&b, "\n  %s against %s: %s", c.Scenario.Name, c.Lock, c.NA)
	}
	return &usageError{b.String()}
}
