// Package search holds what the checkers share around porcupine: how long
// a search may run, the batching of pieces into partitions, and the
// failing window a checker hands over for porcupine's visualization.
package search

import (
	"fmt"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"splitbrain/checker/paired"
)

// Config is how the checkers search.
type Config struct {
	// Timeout bounds each porcupine search; 0 means no bound.
	Timeout time.Duration
	// Run runs porcupine; tests replace it to reach the timeout path
	// without depending on scheduling.
	Run func(porcupine.Model, []porcupine.Operation, time.Duration) (porcupine.CheckResult, porcupine.LinearizationInfo)
}

// Quiet runs porcupine without the linearization info a visualization
// needs: that info costs memory for every partition, and only the failing
// window is ever drawn (the Window is checked again, verbosely).
func Quiet(m porcupine.Model, ops []porcupine.Operation, timeout time.Duration) (porcupine.CheckResult, porcupine.LinearizationInfo) {
	return porcupine.CheckOperationsTimeout(m, ops, timeout), porcupine.LinearizationInfo{}
}

// Window is a failing window to draw: only that window, because
// porcupine's page for a whole long history can reach hundreds of MB.
type Window struct {
	Model       porcupine.Model
	Ops         []porcupine.Operation
	Annotations []porcupine.Annotation
	Timeout     time.Duration
}

// MaxWindowOps bounds the operations drawn: porcupine's page grows with
// them, and the first failing pieces explain the failure.
const MaxWindowOps = 2000

// BatchOps is the size a batch of pieces grows to: small enough that
// porcupine's n² cache stays small, large enough that a long history makes
// few goroutines.
const BatchOps = 512

// Batch concatenates consecutive pieces of one key into partitions of at
// most n operations (a larger piece stays whole).
func Batch(pieces [][]porcupine.Operation, n int) [][]porcupine.Operation {
	var out [][]porcupine.Operation
	var cur []porcupine.Operation
	for _, p := range pieces {
		if len(cur) > 0 && len(cur)+len(p) > n {
			out = append(out, cur)
			cur = nil
		}
		if cur == nil && len(p) >= n {
			out = append(out, p)
			continue
		}
		cur = append(cur, p...)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// DescribeMeta describes an operation's metadata for porcupine's page.
func DescribeMeta(info interface{}) string {
	switch m := info.(type) {
	case string:
		return m
	case fmt.Stringer:
		return m.String()
	}
	return ""
}

// FaultAnnotations shades the faults active in [from, to].
func FaultAnnotations(faults []paired.FaultWindow, from, to int64) []porcupine.Annotation {
	var anns []porcupine.Annotation
	for _, f := range faults {
		if f.End < from || f.Start > to {
			continue
		}
		anns = append(anns, porcupine.Annotation{
			Tag:             "nemesis",
			Start:           max(f.Start, from),
			End:             min(f.End, to),
			Description:     f.Label(),
			Details:         paired.FaultWhen(f) + detailSuffix(f.Detail),
			BackgroundColor: faultColor(f.Kind),
		})
	}
	return anns
}

func detailSuffix(d string) string {
	if d == "" {
		return ""
	}
	return " — " + d
}

func faultColor(kind string) string {
	switch {
	case strings.Contains(kind, "clock"):
		return "#fff1b8"
	case strings.Contains(kind, "cut"), strings.Contains(kind, "partition"), strings.Contains(kind, "delay"):
		return "#ffd6d6"
	}
	return "#dde7ff"
}
