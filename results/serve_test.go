package results

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A folder's listing names what can be served and nothing else: no
// hidden name (the store's temporary files) and no symbolic link (which
// may lead anywhere; the latest links are reached by name).
func TestStoreListingsHideHiddenAndLinks(t *testing.T) {
	parent := t.TempDir()
	store := filepath.Join(parent, "store")
	run := writeRun(t, store, "clock-jump", time.Date(2026, 11, 22, 7, 0, 0, 0, time.UTC), clockJump(), meta("clock-jump", "violation"))
	for _, p := range []string{filepath.Join(run, ".result.json.tmp-1"), filepath.Join(store, "clock-jump", ".hidden")} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(parent, "elsewhere"), filepath.Join(run, "leak.txt")); err != nil {
		t.Fatal(err)
	}
	h, err := NewStoreHandler(store)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	for _, tt := range []struct {
		dir           string
		shown, hidden []string
	}{
		{"/clock-jump/", []string{filepath.Base(run)}, []string{"latest", ".hidden"}},
		{"/clock-jump/" + filepath.Base(run) + "/", []string{"report.html", "history.jsonl"}, []string{"leak.txt", ".result.json.tmp-1"}},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", tt.dir, nil))
		body := rec.Body.String()
		if rec.Code != 200 {
			t.Errorf("GET %s: %d %.100q", tt.dir, rec.Code, body)
			continue
		}
		for _, name := range tt.shown {
			if !strings.Contains(body, ">"+name) {
				t.Errorf("GET %s: the listing lacks %s:\n%s", tt.dir, name, body)
			}
		}
		for _, name := range tt.hidden {
			if strings.Contains(body, name) {
				t.Errorf("GET %s: the listing shows %s:\n%s", tt.dir, name, body)
			}
		}
	}
}
