package doclinks

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unicode"
)

// maxLines bounds the pages a newcomer reads first (issue 32: the README
// in five minutes); the rest lives under docs/.
var maxLines = map[string]int{
	"README.md":     300,
	"BENCHMARKS.md": 400,
}

func TestLinksResolve(t *testing.T) {
	root := repoRoot(t)
	files, err := trackedFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	var docs []string
	for f := range files {
		if strings.HasSuffix(f, ".md") {
			docs = append(docs, f)
		}
	}
	sort.Strings(docs)
	if len(docs) == 0 {
		t.Fatal("no *.md file found under " + root)
	}
	problems, err := check(root, docs, files)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
	t.Logf("%d Markdown files checked", len(docs))
}

func TestLengths(t *testing.T) {
	root := repoRoot(t)
	for name, limit := range maxLines {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		if n := bytes.Count(b, []byte("\n")); n > limit {
			t.Errorf("%s has %d lines, more than %d: move detail into docs/ and link it", name, n, limit)
		}
	}
}

// TestCheckFindsBrokenLinks holds the checker itself to account: each case
// is a small tree with one page, and the problems it must report.
func TestCheckFindsBrokenLinks(t *testing.T) {
	other := "# Other page\n\n## Two words: and more — here\n\n## Dup\n\n## Dup\n\n### `code` *em* [link](x.md)\n\n```\n# not a heading\n```\n"
	cases := []struct {
		name string
		page string
		want []string // substrings of the problems, in order
	}{
		{"fine", "[a](other.md) [b](other.md#other-page) [c](#top) ![i](pic.png) [d](https://example.com/x) [e](sub/) [f](other.md#two-words-and-more--here)\n\n# Top\n", nil},
		{"duplicate headings", "[a](other.md#dup) [b](other.md#dup-1) [c](other.md#code-em-link)\n", nil},
		{"missing file", "text\n[a](nothere.md)\n", []string{"page.md:2: nothere.md: no such file"}},
		{"link text wrapped", "text [a\nlink `with\ncode`](gone.md#x) and\n[another](other.md#nope)\n", []string{"page.md:3: gone.md#x: no such file", "page.md:4: other.md#nope: no heading"}},
		{"missing image", "![i](docs/pic.png)\n", []string{"page.md:1: docs/pic.png: no such file"}},
		{"untracked file", "[a](untracked.md)\n", []string{"page.md:1: untracked.md: git does not track untracked.md"}},
		{"outside the tree", "[a](../shared/DESIGN.md)\n", []string{"page.md:1: ../shared/DESIGN.md: leaves the repository"}},
		{"absolute path", "[a](/etc/passwd)\n", []string{"page.md:1: /etc/passwd: an absolute path"}},
		{"other scheme", "[a](file:///etc/passwd)\n", []string{"page.md:1: file:///etc/passwd: not a public URL"}},
		{"missing anchor", "[a](other.md#nope)\n", []string{`page.md:1: other.md#nope: no heading "nope" in other.md`}},
		{"missing own anchor", "# Top\n[a](#bottom)\n", []string{`page.md:2: #bottom: no heading "bottom" in page.md`}},
		{"third duplicate", "[a](other.md#dup-2)\n", []string{`no heading "dup-2"`}},
		{"code is not a link", "`[a](nothere.md)`\n\n```\n[b](nothere.md)\n```\n", nil},
		{"heading in a fence", "[a](other.md#not-a-heading)\n", []string{`no heading "not-a-heading"`}},
		{"reference definition", "[x][y]\n\n[y]: gone.md\n", []string{"page.md:3: gone.md: no such file"}},
		{"html image", "<img src=\"gone.png\" alt=\"x\">\n", []string{"page.md:1: gone.png: no such file"}},
		{"line anchor in a source file", "[a](main.go#L12) [b](main.go#top)\n", []string{`main.go#top: a fragment into main.go`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			write := func(name, text string) {
				p := filepath.Join(root, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			write("page.md", c.page)
			write("other.md", other)
			write("pic.png", "")
			write("main.go", "package main\n")
			write("sub/file.txt", "")
			write("untracked.md", "")
			tracked := map[string]bool{"page.md": true, "other.md": true, "pic.png": true, "main.go": true, "sub/file.txt": true}
			got, err := check(root, []string{"page.md"}, tracked)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %d problems, want %d:\n%s", len(got), len(c.want), strings.Join(got, "\n"))
			}
			for i, w := range c.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, got[i], w)
				}
			}
		})
	}
}

func TestSlug(t *testing.T) {
	for _, c := range []struct{ heading, want string }{
		{"Two commands", "two-commands"},
		{"ZooKeeper and etcd: the control group", "zookeeper-and-etcd-the-control-group"},
		{"Check, end to end", "check-end-to-end"},
		{"A fourth machine: the load's shape (2026-11-27, later)", "a-fourth-machine-the-loads-shape-2026-11-27-later"},
		{"`make suite` — the matrix", "make-suite--the-matrix"},
		{"Package tour (main, 2026-11-27)", "package-tour-main-2026-11-27"},
		{"snake_case and **bold**", "snake_case-and-bold"},
		{"[Locks](locks.md) and more", "locks-and-more"},
		{"Ünïcode Straße", "ünïcode-straße"},
	} {
		if got := slug(c.heading); got != c.want {
			t.Errorf("slug(%q) = %q, want %q", c.heading, got, c.want)
		}
	}
}

// repoRoot walks up from the test's folder to the one holding go.mod.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's folder")
		}
		dir = parent
	}
}

// trackedFiles lists what a clone holds: git's index, or, outside a git
// checkout (an exported tarball), every file under root but .git.
func trackedFiles(root string) (map[string]bool, error) {
	files := map[string]bool{}
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = root
	out, err := cmd.Output()
	if err == nil {
		for _, f := range strings.Split(string(out), "\x00") {
			if f != "" {
				files[f] = true
			}
		}
		return files, nil
	}
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	return files, err
}

var (
	// [text](target) and ![alt](target), an optional "title" after the target.
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	// [label]: target
	refDef = regexp.MustCompile(`(?m)^ {0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?`)
	// <img src="..."> and <a href="...">
	htmlRef   = regexp.MustCompile(`<(?:img|a|source)\s[^>]*?(?:src|href)\s*=\s*"([^"]*)"`)
	htmlID    = regexp.MustCompile(`<a\s[^>]*?(?:id|name)\s*=\s*"([^"]*)"`)
	codeSpan  = regexp.MustCompile("(`+)[^`]*?(`+)")
	heading   = regexp.MustCompile(`^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	fence     = regexp.MustCompile("^ {0,3}(```|~~~)")
	lineFrag  = regexp.MustCompile(`^L\d+(-L\d+)?$`)
	urlScheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)
	// a link in a heading, which its anchor spells by its text
	linkInHeading = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
)

// check returns the problems of the Markdown files docs (paths relative to
// root, slash-separated), each "file:line: link: what is wrong". A link's
// target must be in tracked (files, or a folder holding some).
func check(root string, docs []string, tracked map[string]bool) ([]string, error) {
	anchors := map[string]map[string]bool{} // by file, computed once
	anchorsOf := func(file string) (map[string]bool, error) {
		if a, ok := anchors[file]; ok {
			return a, nil
		}
		a, err := readAnchors(filepath.Join(root, filepath.FromSlash(file)))
		anchors[file] = a
		return a, err
	}
	isFolder := func(p string) bool {
		for f := range tracked {
			if strings.HasPrefix(f, p+"/") {
				return true
			}
		}
		return false
	}
	var problems []string
	for _, doc := range docs {
		links, err := readLinks(filepath.Join(root, filepath.FromSlash(doc)))
		if err != nil {
			return nil, err
		}
		for _, l := range links {
			bad := func(format string, args ...any) {
				problems = append(problems, fmt.Sprintf("%s:%d: %s: %s", doc, l.line, l.target, fmt.Sprintf(format, args...)))
			}
			target := l.target
			switch {
			case strings.HasPrefix(target, "http://"), strings.HasPrefix(target, "https://"), strings.HasPrefix(target, "mailto:"):
				continue
			case urlScheme.MatchString(target):
				bad("not a public URL (http, https or mailto) nor a path in the repository")
				continue
			case strings.HasPrefix(target, "/"):
				bad("an absolute path; write it relative to %s", doc)
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			if i := strings.IndexByte(file, '?'); i >= 0 {
				file = file[:i]
			}
			if file == "" {
				file = doc
			} else {
				file = path.Clean(path.Join(path.Dir(doc), file))
			}
			if file == ".." || strings.HasPrefix(file, "../") {
				bad("leaves the repository (a clone has no %s)", file)
				continue
			}
			if !tracked[file] && !isFolder(file) && file != "." {
				if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(file))); err == nil {
					bad("git does not track %s: a clone would not have it", file)
				} else {
					bad("no such file in the repository")
				}
				continue
			}
			if frag == "" {
				continue
			}
			if !strings.HasSuffix(file, ".md") {
				if !lineFrag.MatchString(frag) {
					bad("a fragment into %s, which has no headings (only #L12 or #L12-L20 resolve there)", file)
				}
				continue
			}
			a, err := anchorsOf(file)
			if err != nil {
				return nil, err
			}
			if !a[strings.ToLower(frag)] {
				bad("no heading %q in %s", frag, file)
			}
		}
	}
	return problems, nil
}

type link struct {
	line   int
	target string
}

// readLinks lists the link targets of a Markdown file outside code: fenced
// blocks and code spans are skipped, as GitHub renders them as text. Links
// are found per paragraph, since a link's text may wrap onto the next line;
// each is numbered by the line its target is on.
func readLinks(file string) ([]link, error) {
	var links []link
	var para []string
	start := 0
	flush := func() {
		text := strings.Join(para, "\n")
		// Code spans may wrap too; blank them out but keep their newlines,
		// so that offsets still count lines.
		text = codeSpan.ReplaceAllStringFunc(text, func(c string) string {
			return strings.Map(func(r rune) rune {
				if r == '\n' {
					return r
				}
				return 'x'
			}, c)
		})
		for _, re := range []*regexp.Regexp{inlineLink, refDef, htmlRef} {
			for _, m := range re.FindAllStringSubmatchIndex(text, -1) {
				n := start + strings.Count(text[:m[2]], "\n")
				links = append(links, link{line: n, target: text[m[2]:m[3]]})
			}
		}
		para = para[:0]
	}
	err := eachTextLine(file, func(n int, text string) {
		if strings.TrimSpace(text) == "" || (len(para) > 0 && start+len(para) != n) {
			flush() // a blank line, or a fence in between, ends a paragraph
		}
		if strings.TrimSpace(text) == "" {
			return
		}
		if len(para) == 0 {
			start = n
		}
		para = append(para, text)
	})
	flush()
	sort.SliceStable(links, func(i, j int) bool { return links[i].line < links[j].line })
	return links, err
}

// readAnchors lists the fragments a Markdown file answers to: its headings'
// slugs, numbered as GitHub numbers repeated ones, and explicit <a id=...>.
func readAnchors(file string) (map[string]bool, error) {
	anchors := map[string]bool{}
	seen := map[string]int{}
	err := eachTextLine(file, func(_ int, text string) {
		for _, m := range htmlID.FindAllStringSubmatch(text, -1) {
			anchors[strings.ToLower(m[1])] = true
		}
		m := heading.FindStringSubmatch(text)
		if m == nil {
			return
		}
		s := slug(m[2])
		if k := seen[s]; k > 0 {
			anchors[fmt.Sprintf("%s-%d", s, k)] = true
		} else {
			anchors[s] = true
		}
		seen[s]++
	})
	return anchors, err
}

// eachTextLine calls fn with each line (numbered from 1) outside fenced
// code blocks.
func eachTextLine(file string, fn func(n int, text string)) error {
	f, err := os.Open(file)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("reading a tracked file: %w", err)
		}
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var open string // the fence that opened the current code block
	for n := 1; sc.Scan(); n++ {
		text := sc.Text()
		if m := fence.FindStringSubmatch(text); m != nil {
			switch {
			case open == "":
				open = m[1]
			case open == m[1]:
				open = ""
			}
			continue
		}
		if open == "" {
			fn(n, text)
		}
	}
	return sc.Err()
}

// slug is GitHub's anchor for a heading: the rendered text (links to their
// text, code and emphasis marks gone), lower-cased, every character but
// letters, digits, marks, '-', '_' and spaces dropped, each space a '-'.
func slug(h string) string {
	h = linkInHeading.ReplaceAllString(h, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
