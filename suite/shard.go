package suite

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// A suite outgrows one machine: its plays are self-contained (scenario,
// lock, seed and backend make one run folder), so N workers can share
// them out. Each worker is given the same arguments and its Shard; it
// plays the share of the plan (Jobs) that is its own, and the run folders
// of all the shares assemble into one matrix (Rebuild).

// Job is one play of a suite: the Run-th play (from 0) of cell Cell.
type Job struct {
	Cell, Run int
	// Ensemble: the play starts an ensemble (three JVMs or etcd
	// members), the plays the deal spreads evenly over the shares.
	Ensemble bool
}

// Jobs is a suite's plan: the plays of the cells that fit, runs each, in
// the order a suite starts them — every cell's first run, then every
// cell's second, each round in PlayOrder — so that a suite cut short has
// a matrix as wide as possible. Play plays it (or a share), and
// `suite --plan` prints it; both read it from here.
func Jobs(cells []Cell, runs int) []Job {
	round := PlayOrder(cells)
	jobs := make([]Job, 0, len(round)*max(runs, 1))
	for run := range max(runs, 1) {
		for _, i := range round {
			jobs = append(jobs, Job{Cell: i, Run: run, Ensemble: ensemble(cells[i])})
		}
	}
	return jobs
}

// ShardEnv is the environment variable `--shard env` reads its I/N from:
// an engine that starts N copies of one command (a Swarm job's tasks, a
// Kubernetes Indexed Job's pods) gives each its index there, since it
// cannot give each its own arguments.
const ShardEnv = "SPLITBRAIN_SHARD"

// Shard is the I-th (from 0) of N disjoint shares of a suite's plays. The
// zero Shard is the whole suite.
type Shard struct{ I, N int }

// MaxShards bounds N: more shares than a suite of --runs 1000 has plays
// in one lock column is a typo, not a fleet.
const MaxShards = 10000

// ParseShard reads a shard as I/N: I from 0 to N-1, the index an engine
// gives (a Kubernetes completion index, a Swarm job's task slot, a GitHub
// Actions matrix's job-index all count from 0).
func ParseShard(s string) (Shard, error) {
	is, ns, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(is))
	n, err2 := strconv.Atoi(strings.TrimSpace(ns))
	switch {
	case !ok || err1 != nil || err2 != nil:
		return Shard{}, fmt.Errorf("%q: want I/N, the I-th of N shares counting from 0, such as 0/4", s)
	case n < 1 || n > MaxShards:
		return Shard{}, fmt.Errorf("%q: N %d, want 1 to %d shares", s, n, MaxShards)
	case i < 0 || i >= n:
		return Shard{}, fmt.Errorf("%q: I %d, want 0 to %d (shares count from 0)", s, i, n-1)
	}
	return Shard{I: i, N: n}, nil
}

// Whole reports whether the shard is the whole suite (0/1, or none).
func (s Shard) Whole() bool { return s.N <= 1 }

func (s Shard) String() string {
	if s.Whole() {
		return "the whole suite"
	}
	return fmt.Sprintf("%d/%d", s.I, s.N)
}

// Deal says which share of n each job of a plan is dealt to: the
// ensemble plays round robin first, in the plan's order, then the others
// round robin from the share after the last ensemble play's. Every share
// gets as many plays as any other and as many ensemble plays, within one
// of each; dealt in the plan's order — each round longest first — every
// share gets about the same mix of long and short plays and of every run.
// (A plain k mod N deal left the ensembles, which the plan spreads about
// n/h apart, bunched on some shares when n/h came near N: 16 of 53 on
// one share of four, 10 on another.)
func Deal(jobs []Job, n int) []int {
	out := make([]int, len(jobs))
	next := 0
	for _, ens := range []bool{true, false} {
		for k, j := range jobs {
			if j.Ensemble == ens {
				out[k] = next % max(n, 1)
				next++
			}
		}
	}
	return out
}

// Share keeps the jobs of the plan that are this shard's (Deal), in
// order.
func (s Shard) Share(jobs []Job) []Job {
	if s.Whole() {
		return jobs
	}
	var out []Job
	for k, share := range Deal(jobs, s.N) {
		if share == s.I {
			out = append(out, jobs[k])
		}
	}
	return out
}

// Dir is where the shard's plays go in store: a store of its own,
// STORE/shard-I-of-N, so that N workers may share one store (a volume) and
// none overwrites another's index, matrix or latest links; the whole
// suite's is store itself. `splitbrain matrix STORE` finds every share's
// run folders under it.
func (s Shard) Dir(store string) string {
	if s.Whole() {
		return store
	}
	return filepath.Join(store, fmt.Sprintf("shard-%d-of-%d", s.I, s.N))
}

// PlannedPlay is one play of a plan: what makes its run folder.
type PlannedPlay struct {
	// Index is the play's place in the whole plan (Jobs), from 0.
	Index   int
	Cell    Cell
	Run     int
	Seed    int64
	Backend string
}

// Plays lists the plays of the plan for a suite seeded with seed, runs
// each — shard's share of them, or all for the zero Shard — each with the
// seed it derives (PlaySeed) and the backend it plays on.
func (p Plan) Plays(seed int64, runs int, shard Shard) []PlannedPlay {
	var out []PlannedPlay
	jobs := Jobs(p.Cells, runs)
	deal := Deal(jobs, shard.N)
	for k, j := range jobs {
		if !shard.Whole() && deal[k] != shard.I {
			continue
		}
		c := p.Cells[j.Cell]
		out = append(out, PlannedPlay{Index: k, Cell: c, Run: j.Run, Seed: PlaySeed(seed, j.Run), Backend: p.Backend(c)})
	}
	return out
}
