package main

import (
	"regexp"
	"strings"
)

// shellSafe matches words a POSIX shell takes as typed: no space, quote,
// $, `, glob, ~ or other character it would expand or split on.
var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

// shellQuote makes s one word for a POSIX shell: a rerun command is meant
// to be pasted into one, and a scenario path or store holding a space,
// a quote or $(…) must come back as that path, not as a command run.
// Words that need nothing are left as typed so the usual command stays
// readable.
func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	// Inside single quotes nothing is special but the quote itself,
	// which is closed, escaped and reopened.
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// shellCommand joins args into one command line for a POSIX shell.
func shellCommand(args ...string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = shellQuote(a)
	}
	return strings.Join(quoted, " ")
}
