// Package doclinks holds no code: its tests check the repository's
// Markdown. Every relative link and image in a tracked *.md file must name
// a tracked file (or folder) inside the repository, and every #fragment a
// heading of its target, by GitHub's rules for heading anchors; links that
// leave the tree must be public URLs. README.md and BENCHMARKS.md must stay
// short enough to read (see their limits in doclinks_test.go).
//
// A link that works only in one checkout — to a sibling folder, a file git
// does not track, a heading since renamed — breaks on every clone and on
// GitHub, silently; the test names it by file, line and link.
package doclinks
