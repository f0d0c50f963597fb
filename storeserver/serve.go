// Package storeserver serves a store over HTTP, read-only, for `splitbrain
// serve`: the run folders' files, and the index page drawn afresh for each
// request of "/".
package storeserver

import (
	"bytes"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"strings"

	"splitbrain/pages"
	"splitbrain/runstore"
)

// Handler serves a store over HTTP, read-only: the run files and an
// index built afresh for each request of "/". Nothing outside the store is
// reachable: ".." and hidden names are refused, and files are opened
// through an os.Root, which also refuses symlinks that lead out of it.
type Handler struct {
	store string
	root  *os.Root
	files http.Handler
}

// New opens store for serving. Close releases it.
func New(store string) (*Handler, error) {
	root, err := os.OpenRoot(store)
	if err != nil {
		return nil, fmt.Errorf("storeserver: serving the store: %w", err)
	}
	return &Handler{store: store, root: root, files: http.FileServerFS(notFoundFS{root.FS()})}, nil
}

// notFoundFS answers every failure to open as "not found": a symlink out
// of the store is none of the client's business, not a server error.
type notFoundFS struct{ fs.FS }

func (n notFoundFS) Open(name string) (fs.File, error) {
	f, err := n.FS.Open(name)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	if d, ok := f.(fs.ReadDirFile); ok {
		return listedDir{d}, nil
	}
	return f, nil
}

// listedDir is a folder whose listing names only what can be served:
// not hidden names (the store's temporary files, which allowedPath
// refuses), and not symbolic links, which may lead anywhere (os.Root
// serves those that stay in the store when asked for by name).
type listedDir struct{ fs.ReadDirFile }

func (d listedDir) ReadDir(n int) ([]fs.DirEntry, error) {
	for {
		entries, err := d.ReadDirFile.ReadDir(n)
		shown := entries[:0]
		for _, e := range entries {
			if !strings.HasPrefix(e.Name(), ".") && e.Type()&fs.ModeSymlink == 0 {
				shown = append(shown, e)
			}
		}
		// For n > 0 an empty slice must come with an error: a batch of
		// nothing but hidden names is followed by the next.
		if len(shown) > 0 || err != nil || n <= 0 {
			return shown, err
		}
	}
}

// Close releases the store.
func (h *Handler) Close() error { return h.root.Close() }

// pagePolicy keeps served pages to their own inline styles and scripts:
// nothing is fetched from anywhere.
const pagePolicy = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr.Set("Content-Security-Policy", pagePolicy)
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Referrer-Policy", "no-referrer")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hdr.Set("Allow", "GET, HEAD")
		http.Error(w, "the store is read-only", http.StatusMethodNotAllowed)
		return
	}
	p := r.URL.Path
	if !allowedPath(p) || !allowedPath(r.URL.RawPath) {
		http.NotFound(w, r)
		return
	}
	if p == "/" || p == "/"+runstore.IndexFile {
		h.serveIndex(w, r)
		return
	}
	switch {
	case strings.HasSuffix(p, ".jsonl"), strings.HasSuffix(p, ".log"):
		hdr.Set("Content-Type", "text/plain; charset=utf-8")
	case strings.HasSuffix(p, ".json"):
		hdr.Set("Content-Type", "application/json")
	}
	h.files.ServeHTTP(w, r)
}

// allowedPath refuses what could climb out of the store or reach files the
// store keeps for itself (temporary files, dot-files): a "..", a hidden
// segment, a backslash or a NUL, decoded or not.
func allowedPath(p string) bool {
	if strings.ContainsAny(p, "\\\x00") {
		return false
	}
	lower := strings.ToLower(p)
	if strings.Contains(lower, "%2e") || strings.Contains(lower, "%5c") || strings.Contains(lower, "%00") {
		return false
	}
	for _, seg := range strings.Split(p, "/") {
		if strings.HasPrefix(seg, ".") {
			return false
		}
	}
	return true
}

func (h *Handler) serveIndex(w http.ResponseWriter, r *http.Request) {
	idx, err := runstore.BuildIndex(h.store)
	if err != nil {
		http.Error(w, "cannot read the store", http.StatusInternalServerError)
		return
	}
	var page bytes.Buffer
	if err := pages.RenderIndex(&page, idx); err != nil {
		http.Error(w, "cannot render the index", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(page.Bytes())
}
