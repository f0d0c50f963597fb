package runner_test

import (
	"context"
	"path/filepath"
	"testing"

	"splitbrain/checker"
	"splitbrain/scenarios/spec"
)

// examplesDir holds scenario files written as a user would write them,
// each a combination no built-in covers. Any file added there is run here.
const examplesDir = "../examples"

// Every scenario file in examples/ parses, runs to the end (no harness
// error, no step that did not go as scripted, so no unknown verdict) and
// meets its expect. A play whose steps did not go as scripted (on a loaded
// machine a reply slower than the node timeout can refuse a step; CI once
// refused backward-clock-extend's extension) is played again, up to three
// times: an unknown verdict is never a wrong one, and three in a row fail.
func TestExamples(t *testing.T) {
	t.Parallel()
	var files []string
	for _, pattern := range []string{"*.yaml", "*.yml"} {
		m, err := filepath.Glob(filepath.Join(examplesDir, pattern))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Fatalf("no scenario files in %s", examplesDir)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			sc, err := spec.Load(file)
			if err != nil {
				t.Fatal(err)
			}
			out := runScenario(t, context.Background(), sc, 1)
			for try := 2; try <= 3 && out.Result.Verdict == checker.Unknown; try++ {
				t.Logf("play %d: verdict unknown (%s); playing again", try-1, out.Result.Reason)
				out = runScenario(t, context.Background(), sc, 1)
			}
			res := out.Result
			if res.Verdict == checker.Unknown {
				t.Fatalf("verdict unknown: %s", res.Reason)
			}
			if !out.AsExpected {
				t.Errorf("verdict %s (%s), want %s", res.Verdict, res.Reason, sc.Expect)
			}
		})
	}
}
