// Package shell writes command lines for a POSIX shell, and reads back the
// ones it wrote: a re-run command is meant to be pasted into a shell, so a
// scenario path or store holding a space, a quote or $(…) must come back
// as that path, not as a command run — and a command read from a stored
// run folder (which anyone who could write there may have crafted) is
// shown only if it reads back as one this package would write.
package shell

import (
	"regexp"
	"strings"
	"unicode"
)

// safe matches words a POSIX shell takes as typed: no space, quote, $, `,
// glob, ~ or other character it would expand or split on.
var safe = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

// Quote makes s one word for a POSIX shell. Words that need nothing are
// left as typed so the usual command stays readable.
func Quote(s string) string {
	if safe.MatchString(s) {
		return s
	}
	// Inside single quotes nothing is special but the quote itself,
	// which is closed, escaped and reopened.
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Command joins args into one command line.
func Command(args ...string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = Quote(a)
	}
	return strings.Join(quoted, " ")
}

// Split reads back a line Command wrote: words separated by one space,
// each safe as typed or single-quoted as Quote quotes. ok is false for any
// other line, and for a word with a control character (a terminal would
// act on an escape sequence).
func Split(line string) (words []string, ok bool) {
	for line != "" {
		var w string
		quoted := strings.HasPrefix(line, "'")
		if quoted {
			var b strings.Builder
			rest := line[1:]
			for {
				i := strings.IndexByte(rest, '\'')
				if i < 0 {
					return nil, false
				}
				b.WriteString(rest[:i])
				rest = rest[i+1:]
				if strings.HasPrefix(rest, `\''`) {
					b.WriteByte('\'')
					rest = rest[3:]
					continue
				}
				break
			}
			w, line = b.String(), rest
		} else {
			i := strings.IndexByte(line, ' ')
			if i < 0 {
				i = len(line)
			}
			w, line = line[:i], line[i:]
			if !safe.MatchString(w) {
				return nil, false
			}
		}
		// A quoted word Quote would have left bare was not written here.
		if strings.IndexFunc(w, unicode.IsControl) >= 0 || quoted && Quote(w) == w {
			return nil, false
		}
		words = append(words, w)
		if line != "" {
			if !strings.HasPrefix(line, " ") || len(line) == 1 {
				return nil, false
			}
			line = line[1:]
		}
	}
	return words, len(words) > 0
}
