package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"splitbrain/checker"
	"splitbrain/locks"
	"splitbrain/runstore"
	"splitbrain/scenarios/spec"
	"splitbrain/suite"
)

type planOut struct {
	Seed  int64 `json:"seed"`
	Plays []struct {
		Play     int    `json:"play"`
		Scenario string `json:"scenario"`
		Lock     string `json:"lock"`
		Seed     int64  `json:"seed"`
		Backend  string `json:"backend"`
		Command  string `json:"command"`
	} `json:"plays"`
	NA []struct{ Scenario, Lock, Why string } `json:"na"`
}

// suite --plan prints the plays without playing one, each with its seed,
// backend and the command that plays it alone; N shares of the plan are
// disjoint and together the plan. Played as two shares into one store —
// the second told its share through $SPLITBRAIN_SHARD, as an engine tells
// its tasks — and gathered with the suite's arguments, the suite is whole;
// gathered with one share only, or against another seed's plan, the
// gather says which plays have no run folder, or none of the plan, and
// exits 255.
//
// The story is the test's own, on one node: what is tested is the plan,
// the shares and the gathering, not the locks (every built-in cell is
// played by the runner package's tests), so its 13 plays start a Redis
// server each, and the consensus locks are n/a — a built-in story would
// start three ZooKeeper or etcd members for each of five of its cells.
// A node timeout of a second: at Redlock's default 50 ms, fenced-simple's
// first acquire was refused under a fresh-clone CI's load.
func TestSuitePlanSharesAndGather(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	story := filepath.Join(t.TempDir(), "shares.yaml")
	const src = "name: shares\nexpect: safe\ncluster: {nodes: 1}\nlock: {ttl: 3s, node_timeout: 1s}\nworkload: {clients: 2}\nsteps:\n" +
		"  - acquire: {client: c1, expect: acquired}\n  - acquire: {client: c2, expect: refused}\n" +
		"  - release: {client: c1}\n  - acquire: {client: c2, expect: acquired}\n"
	writeFile(t, story, src)
	plan := func(args ...string) planOut {
		t.Helper()
		res := e.run(append([]string{"suite", story, "--seed", "4", "--plan", "--json"}, args...)...)
		var p planOut
		if err := json.Unmarshal([]byte(res.stdout), &p); res.code != 0 || err != nil {
			t.Fatalf("--plan: exit %d, %v", res.code, err)
		}
		return p
	}
	sc, err := spec.Load(story)
	if err != nil {
		t.Fatal(err)
	}
	cells := suite.NewPlan([]*spec.Scenario{sc}, locks.Matrix(), spec.BackendLocal)
	n, na := cells.Played()
	share0, share1 := (n+1)/2, n/2
	whole := plan()
	if len(whole.Plays) != n || len(whole.NA) != na || n < 2 {
		t.Fatalf("%d plays and %d n/a cells, want the story's %d and %d", len(whole.Plays), len(whole.NA), n, na)
	}
	for i, p := range whole.Plays {
		if p.Play != i || p.Seed != 4 || p.Backend != "local" || p.Command != "splitbrain run "+story+" --seed 4 --lock "+p.Lock {
			t.Errorf("play %d: %+v", i, p)
		}
	}
	seen := map[int]int{}
	deal := suite.Deal(suite.Jobs(cells.Cells, 1), 2)
	for _, sh := range []string{"0/2", "1/2"} {
		for _, p := range plan("--shard", sh).Plays {
			seen[p.Play]++
			if deal[p.Play] != int(sh[0]-'0') {
				t.Errorf("share %s has play %d, which the deal gives share %d", sh, p.Play, deal[p.Play])
			}
		}
	}
	for i := range whole.Plays {
		if seen[i] != 1 {
			t.Errorf("play %d is in %d shares, want 1", i, seen[i])
		}
	}
	if res := e.run("suite", story, "--shard", "2/2"); res.code != 254 || !strings.Contains(res.stderr, "want 0 to 1") {
		t.Errorf("--shard 2/2: exit %d, %s", res.code, res.stderr)
	}

	store := filepath.Join(t.TempDir(), "shares")
	res := e.runFor(3*time.Minute, "suite", story, "--seed", "4", "--shard", "0/2", "--store", store)
	if res.code != 0 || !strings.Contains(res.stdout, fmt.Sprintf("share 0/2: %d of the suite's %d plays", share0, n)) {
		t.Fatalf("share 0/2: exit %d", res.code)
	}
	if runs, err := suite.FindRuns(filepath.Join(store, "shard-0-of-2")); err != nil || len(runs) != share0 {
		t.Errorf("share 0/2 made %d run folders in its store (%v), want %d", len(runs), err, share0)
	}
	gather := func(seed string) result {
		return e.run("fanout", "gather", store, story, "--seed", seed)
	}
	if res := gather("4"); res.code != 255 || strings.Count(res.stdout, "MISSED THE PLAN: no run folder: shares against") != share1 {
		t.Errorf("gathered with one share: exit %d, want 255 and %d plays without a run folder", res.code, share1)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := e.command(ctx, "suite", story, "--seed", "4", "--shard", "env", "--store", store)
	cmd.Env = append(cmd.Env, suite.ShardEnv+"=1/2")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil || !strings.Contains(out.String(), fmt.Sprintf("share 1/2: %d of the suite's %d plays", share1, n)) {
		t.Fatalf("share 1/2 from $%s: %v\n%s", suite.ShardEnv, err, out.String())
	}
	if res := gather("4"); res.code != 0 || strings.Contains(res.stdout, "MISSED") {
		t.Fatalf("gathered whole: exit %d", res.code)
	}
	m, err := runstore.ReadMatrix(store)
	if err != nil {
		t.Fatal(err)
	}
	played := 0
	for _, c := range m.Cells {
		if c.NA == "" && (c.Runs != 1 || c.Met != 1 || c.Plays[0].Seed != 4) {
			t.Errorf("%s against %s: %d plays, %d met", c.Scenario, c.Lock, c.Runs, c.Met)
		}
		played += c.Runs
	}
	if played != n || m.Partial != "" || m.Seed != 4 || len(m.Cells) != len(cells.Cells) {
		t.Errorf("gathered %d plays in %d cells, seed %d, partial %q", played, len(m.Cells), m.Seed, m.Partial)
	}
	// fanout compare: the gathered matrix agrees with itself, and not
	// with one whose scripted play has another verdict.
	if res := e.run("fanout", "compare", store, store, story, "--seed", "4"); res.code != 0 || !strings.Contains(res.stdout, "0 differences") {
		t.Errorf("compared with itself: exit %d\n%s", res.code, res.stdout)
	}
	other := t.TempDir()
	changed := m
	changed.Cells = slices.Clone(m.Cells)
	for i, c := range changed.Cells {
		if c.NA == "" {
			c.Plays = slices.Clone(c.Plays)
			c.Plays[0].Verdict = checker.Invalid
			changed.Cells[i] = c
			b, err := json.Marshal(changed)
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(other, runstore.MatrixJSON), string(b))
			want := fmt.Sprintf("shares against %s, seed 4: valid/true (verdict/as expected) against invalid/true", c.Lock)
			if res := e.run("fanout", "compare", store, other, story, "--seed", "4"); res.code != 1 || !strings.Contains(res.stdout, want) || !strings.Contains(res.stdout, "1 difference (") {
				t.Errorf("compared with a changed verdict: exit %d, want 1 and %q\n%s", res.code, want, res.stdout)
			}
			break
		}
	}
	if res := e.run("fanout", "compare", store); res.code != 254 || !strings.Contains(res.stderr, "fanout compare wants two folders") {
		t.Errorf("compare with one folder: exit %d, %s", res.code, res.stderr)
	}
	if res := gather("5"); res.code != 255 || strings.Count(res.stdout, "MISSED THE PLAN: a run folder of no play of the plan") != n {
		t.Errorf("gathered against another seed's plan: exit %d, want 255 and %d run folders of no play", res.code, n)
	}
	// A share's replay of a play (suite.StoodStill) is that play's second
	// run folder, not a play made twice: the gather keeps the plan whole
	// and the replay decides the cell, the first inside it.
	var firstDir string
	for _, c := range m.Cells {
		if c.NA == "" {
			firstDir = filepath.Join(store, filepath.FromSlash(c.Plays[0].Dir))
			break
		}
	}
	rec, err := runstore.ReadRecord(firstDir)
	if err != nil {
		t.Fatal(err)
	}
	rec.Meta.ReplayOf, rec.Meta.Started = filepath.Base(firstDir), rec.Meta.Started.Add(time.Minute)
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(firstDir+"-replay", 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(firstDir+"-replay", runstore.ResultFile), string(b))
	if res := gather("4"); res.code != 0 || strings.Contains(res.stdout, "MISSED") {
		t.Fatalf("gathered with a replay: exit %d\n%s", res.code, res.stdout)
	}
	if m, err = runstore.ReadMatrix(store); err != nil {
		t.Fatal(err)
	}
	replayed := 0
	for _, c := range m.Cells {
		replayed += c.Replayed
		for _, p := range c.Plays {
			if p.First != nil && (c.Runs != 1 || p.Dir != filepath.ToSlash(mustRel(t, store, firstDir+"-replay"))) {
				t.Errorf("%s against %s: %d plays, the deciding one %s", c.Scenario, c.Lock, c.Runs, p.Dir)
			}
		}
	}
	if replayed != 1 {
		t.Errorf("%d replays in the gathered matrix, want 1", replayed)
	}
}

func mustRel(t *testing.T, base, target string) string {
	t.Helper()
	rel, err := filepath.Rel(base, target)
	if err != nil {
		t.Fatal(err)
	}
	return rel
}

// A task of a job on an engine (--shard env) ends 0 once it has played
// its share, also when a play missed its expectation: Swarm's replicated
// job would play a task that exits 1 again, and the gather step judges
// the plays. Played alone (--shard I/N), the same share exits 1.
func TestShardTaskEndsZero(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir := t.TempDir()
	story := filepath.Join(dir, "wrong-claim.yaml")
	// A claim the play contradicts: one client alone cannot break the lock.
	const src = "name: wrong-claim\nexpect: violation\ncluster: {nodes: 1}\nlock: {kind: single, ttl: 2s}\n" +
		"workload: {clients: 1}\nsteps:\n  - acquire: {client: c1, expect: acquired}\n  - release: {client: c1}\n"
	writeFile(t, story, src)
	for _, tc := range []struct {
		name  string
		shard string
		env   string
		code  int
	}{
		{"a task", "env", "0/1", 0},
		{"alone", "0/1", "", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := e.command(ctx, "suite", story, "--lock", "single", "--seed", "4", "--shard", tc.shard, "--store", filepath.Join(t.TempDir(), "store"))
			if tc.env != "" {
				cmd.Env = append(cmd.Env, suite.ShardEnv+"="+tc.env)
			}
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.code || !strings.Contains(out.String(), "0 of 1 plays met their expectation") {
				t.Errorf("exit %d, want %d\n%s", code, tc.code, out.String())
			}
			if tc.shard == "env" && !strings.Contains(out.String(), "the task still ends 0") {
				t.Errorf("a task that ends 0 with a missed play does not say so\n%s", out.String())
			}
		})
	}
}

// TestSuiteLockTimeFitsItsDeployment: a suite's --time with --lock applies
// to that lock's deployment alone. 400 ms fits the independent masters'
// clock faults (200 ms at least) and not the ensemble's (500 ms), so the
// suite plays random-clock-counter against redlock and refuses it against
// zookeeper; before, it refused both, for the ensemble's faults.
func TestSuiteLockTimeFitsItsDeployment(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	res := e.run("suite", "random-clock-counter", "--lock", "redlock", "--time", "400ms", "--seed", "4", "--plan", "--json")
	var p planOut
	if err := json.Unmarshal([]byte(res.stdout), &p); res.code != 0 || err != nil {
		t.Fatalf("--lock redlock --time 400ms: exit %d, %v\n%s", res.code, err, res.stderr)
	}
	if len(p.Plays) != 1 || p.Plays[0].Lock != "redlock" || !strings.Contains(p.Plays[0].Command, "--time 400ms") {
		t.Errorf("--lock redlock --time 400ms plans %+v; want one play of redlock at --time 400ms", p.Plays)
	}
	res = e.run("suite", "random-clock-counter", "--lock", "zookeeper", "--time", "400ms", "--plan")
	if res.code != 254 || !strings.Contains(res.stderr, "(500ms)") {
		t.Errorf("--lock zookeeper --time 400ms: exit %d, %s; want it refused as a usage error (254) for the ensemble's faults", res.code, res.stderr)
	}
}
