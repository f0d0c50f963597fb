package storeserver

import (
	"net/http"
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
	h, err := New(store)
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

func TestStoreHandler(t *testing.T) {
	parent := t.TempDir()
	store := filepath.Join(parent, "store")
	run := writeRun(t, store, "clock-jump", time.Date(2026, 11, 22, 7, 0, 0, 0, time.UTC), clockJump(), meta("clock-jump", "violation"))
	secret := filepath.Join(parent, "secret.txt")
	if err := os.WriteFile(secret, []byte("do not serve"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(parent, filepath.Join(store, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(run, "leak.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(store, ".index.html.tmp-1"), []byte("do not serve"), 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := New(store)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	runPath := "/clock-jump/" + filepath.Base(run)

	tests := []struct {
		method, target string
		code           int
		body, ctype    string
	}{
		{"GET", "/", 200, "splitbrain runs", "text/html"},
		{"GET", "/index.html", 200, `data-verdict="invalid"`, "text/html"},
		{"HEAD", "/", 200, "", "text/html"},
		{"GET", runPath + "/report.html", 200, "both believed", "text/html"},
		{"GET", runPath + "/history.jsonl", 200, `"f":"acquire"`, "text/plain"},
		{"GET", "/clock-jump/latest/result.json", 200, `"verdict": "invalid"`, "application/json"},
		{"GET", "/latest/report.html", 200, "both believed", "text/html"},
		// Out of the store, however it is spelled.
		{"GET", "/../secret.txt", 404, "", ""},
		{"GET", "/%2e%2e/secret.txt", 404, "", ""},
		{"GET", "/clock-jump/..%2f..%2fsecret.txt", 404, "", ""},
		{"GET", "/clock-jump/%2E%2E/%2E%2E/secret.txt", 404, "", ""},
		{"GET", "/..%5csecret.txt", 404, "", ""},
		{"GET", "/escape/secret.txt", 404, "", ""},
		{"GET", runPath + "/leak.txt", 404, "", ""},
		{"GET", "/.index.html.tmp-1", 404, "", ""},
		{"GET", "/clock-jump/%00", 404, "", ""},
		{"POST", "/", 405, "", ""},
		{"PUT", runPath + "/report.html", 405, "", ""},
	}
	for _, tt := range tests {
		req := httptest.NewRequest(tt.method, tt.target, nil)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		body := rec.Body.String()
		if rec.Code != tt.code {
			t.Errorf("%s %s: %d, want %d (%.80q)", tt.method, tt.target, rec.Code, tt.code, body)
			continue
		}
		if strings.Contains(body, "do not serve") {
			t.Errorf("%s %s served a file it must not", tt.method, tt.target)
		}
		if tt.body != "" && !strings.Contains(body, tt.body) {
			t.Errorf("%s %s: body lacks %q", tt.method, tt.target, tt.body)
		}
		if tt.ctype != "" && !strings.HasPrefix(rec.Header().Get("Content-Type"), tt.ctype) {
			t.Errorf("%s %s: Content-Type %q, want %s", tt.method, tt.target, rec.Header().Get("Content-Type"), tt.ctype)
		}
		if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
			t.Errorf("%s %s: Content-Security-Policy %q", tt.method, tt.target, csp)
		}
	}
}

var _ http.Handler = (*Handler)(nil)
