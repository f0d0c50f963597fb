package pages

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"net/url"
	"path"
	"strings"
	"time"

	"splitbrain/checker"
	"splitbrain/runstore"
)

// WriteIndex regenerates store/index.html and store/index.json from the
// run folders. The runner calls it after each run (Write does when the run
// folder is in a store).
func WriteIndex(store string) error {
	idx, err := runstore.BuildIndex(store)
	if err != nil {
		return err
	}
	var page bytes.Buffer
	if err := RenderIndex(&page, idx); err != nil {
		return err
	}
	return runstore.SaveIndex(store, idx, page.Bytes())
}

var indexTemplate = parsePage("index.html.tmpl")

type indexView struct {
	CSS       template.CSS
	JS        template.JS
	Runs      []indexRow
	Scenarios []string
	Counts    []verdictCount
	Matrices  []string
}

type verdictCount struct {
	Verdict, Label string
	N              int
}

type indexRow struct {
	runstore.IndexEntry
	Label    string
	When     string
	Dur      string
	Href     string
	Folder   string
	History  string
	Expected string
}

// verdictLabel names a verdict for people.
func verdictLabel(v string) string {
	if v == runstore.VerdictNone {
		return "no result"
	}
	return v
}

// RenderIndex writes the index page; its links are relative to the store.
func RenderIndex(w io.Writer, idx runstore.Index) error {
	css, js, err := pageAssets([]string{"base.css", "index.css"}, []string{"index.js"})
	if err != nil {
		return err
	}
	v := indexView{CSS: css, JS: js, Matrices: idx.Matrices}
	counts := map[string]int{}
	seen := map[string]bool{}
	for _, e := range idx.Runs {
		counts[e.Verdict]++
		if !seen[e.Scenario] {
			seen[e.Scenario] = true
			v.Scenarios = append(v.Scenarios, e.Scenario)
		}
		row := indexRow{IndexEntry: e, Label: verdictLabel(e.Verdict), Dur: e.Duration.Round(time.Millisecond).String(),
			Folder: relHref(e.Dir) + "/"}
		if !e.Started.IsZero() {
			row.When = e.Started.UTC().Format("2006-01-02 15:04:05")
		}
		if e.HasReport {
			row.Href = relHref(e.Dir, runstore.ReportFile)
		}
		if e.HasHistory {
			row.History = relHref(e.Dir, runstore.HistoryFile)
		}
		switch {
		case e.Verdict == runstore.VerdictNone || e.Expect == "":
		case e.AsExpected:
			row.Expected = "yes"
		default:
			row.Expected = "no"
		}
		v.Runs = append(v.Runs, row)
	}
	checker.SortNatural(v.Scenarios)
	for _, verdict := range []string{string(checker.Invalid), string(checker.Unknown), string(checker.Valid), runstore.VerdictNone} {
		v.Counts = append(v.Counts, verdictCount{Verdict: verdict, Label: verdictLabel(verdict), N: counts[verdict]})
	}
	if err := indexTemplate.Execute(w, v); err != nil {
		return fmt.Errorf("pages: rendering the index: %w", err)
	}
	return nil
}

// relHref joins slash path segments into a relative URL, escaping each
// segment: a folder name may hold '#', '?' or '%'.
func relHref(parts ...string) string {
	var segs []string
	for _, p := range parts {
		for _, s := range strings.Split(p, "/") {
			segs = append(segs, url.PathEscape(s))
		}
	}
	// "./" keeps a first segment with a colon from reading as a scheme.
	return "./" + path.Join(segs...)
}
