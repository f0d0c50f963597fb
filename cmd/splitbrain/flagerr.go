package main

import (
	"errors"
	"flag"
	"fmt"
	"regexp"
	"strings"
)

// flagNamed finds the flag an error of the flag package is about: it names
// it as -NAME after "flag", "for" or a colon.
var flagNamed = regexp.MustCompile(`(?:flag|for|:) -{1,2}([A-Za-z][\w-]*)`)

// explainFlagError turns the flag package's terse errors ("invalid value
// "two" for flag -clients: parse error") into ones that say what the flag
// wants, taken from its usage string, or which flags there are.
func explainFlagError(fs *flag.FlagSet, err error) string {
	msg := err.Error()
	if errors.Is(err, flag.ErrHelp) {
		return msg
	}
	m := flagNamed.FindStringSubmatch(msg)
	if m == nil {
		return msg + "; flags of " + fs.Name() + ": " + flagList(fs)
	}
	if fl := fs.Lookup(m[1]); fl != nil && fl.Usage != "" {
		return fmt.Sprintf("%s; --%s wants %s", msg, fl.Name, fl.Usage)
	}
	return fmt.Sprintf("%s; flags of %s: %s", msg, fs.Name(), flagList(fs))
}

func flagList(fs *flag.FlagSet) string {
	var names []string
	fs.VisitAll(func(fl *flag.Flag) { names = append(names, "--"+fl.Name) })
	return strings.Join(names, ", ")
}
