package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"splitbrain/suite"
)

// suiteShard reads --shard: I/N, or env for the I/N in $SPLITBRAIN_SHARD
// (an engine that starts N copies of one command can give each its index
// only there). Empty: the whole suite.
func suiteShard(v string) (suite.Shard, error) {
	if v == "" {
		return suite.Shard{}, nil
	}
	from := "--shard"
	if v == "env" {
		env, ok := os.LookupEnv(suite.ShardEnv)
		if !ok || env == "" {
			return suite.Shard{}, &usageError{fmt.Sprintf("--shard env: $%s is not set; give it I/N (such as 0/4), or give --shard I/N", suite.ShardEnv)}
		}
		v, from = env, "--shard env: $"+suite.ShardEnv
	}
	s, err := suite.ParseShard(v)
	if err != nil {
		return suite.Shard{}, &usageError{fmt.Sprintf("%s %v", from, err)}
	}
	return s, nil
}

type planJSON struct {
	Seed  int64      `json:"seed"`
	Runs  int        `json:"runs"`
	Shard string     `json:"shard,omitempty"`
	Plays []planPlay `json:"plays"`
	NA    []planNA   `json:"na"`
}

type planPlay struct {
	Play     int    `json:"play"`
	Shard    string `json:"shard,omitempty"`
	Scenario string `json:"scenario"`
	Lock     string `json:"lock"`
	Run      int    `json:"run"`
	Seed     int64  `json:"seed"`
	Backend  string `json:"backend"`
	Command  string `json:"command"`
}

type planNA struct {
	Scenario string `json:"scenario"`
	Lock     string `json:"lock"`
	Why      string `json:"why"`
}

// printPlan prints the plays a suite would make, or shard's share of
// them, without playing any: each play's place in the plan, run, story,
// lock, seed, backend and the command that plays it alone; then the cells
// that are n/a and why. The plan depends on the arguments and the seed
// alone, so N workers given the same ones and each its --shard play every
// play once.
func printPlan(w io.Writer, plan suite.Plan, seed int64, shard suite.Shard, f runFlags) (int, error) {
	out := planJSON{Seed: seed, Runs: f.runs, Plays: []planPlay{}, NA: []planNA{}}
	if !shard.Whole() {
		out.Shard = shard.String()
	}
	for _, p := range plan.Plays(seed, f.runs, shard) {
		pp := planPlay{Play: p.Index, Scenario: p.Cell.Scenario.Name, Lock: p.Cell.Lock, Run: p.Run, Seed: p.Seed, Backend: p.Backend,
			Command: rerunCommand(p.Cell.Scenario, p.Seed, f, true)}
		if !shard.Whole() {
			pp.Shard = shard.String()
		}
		out.Plays = append(out.Plays, pp)
	}
	for _, c := range plan.Cells {
		if c.NA != "" {
			out.NA = append(out.NA, planNA{c.Scenario.Name, c.Lock, c.NA})
		}
	}
	if f.json {
		writeJSON(w, out)
		return exitValid, nil
	}
	played, na := plan.Played()
	fmt.Fprintf(w, "splitbrain suite --plan: %d stories × %d locks = %d cells (%d played, %d n/a), %d run(s) each: %d plays, seed %d\n",
		len(plan.Scenarios), len(plan.Locks), len(plan.Cells), played, na, f.runs, played*f.runs, seed)
	if !shard.Whole() {
		fmt.Fprintf(w, "share %s: %d of them (play k is share k mod %d's)\n", shard, len(out.Plays), shard.N)
	}
	fmt.Fprintf(w, "%-5s %-3s %-30s %-16s %-20s %-7s %s\n", "PLAY", "RUN", "SCENARIO", "LOCK", "SEED", "BACKEND", "ALONE")
	for _, p := range out.Plays {
		fmt.Fprintf(w, "%-5d %-3d %-30s %-16s %-20d %-7s %s\n", p.Play, p.Run, p.Scenario, p.Lock, p.Seed, p.Backend, p.Command)
	}
	for _, n := range out.NA {
		fmt.Fprintf(w, "n/a: %s against %s: %s\n", n.Scenario, n.Lock, strings.TrimSpace(n.Why))
	}
	return exitValid, nil
}
