package main

import "splitbrain/internal/shell"

// shellCommand joins args into one command line for a POSIX shell (a
// rerun command is pasted into one).
func shellCommand(args ...string) string { return shell.Command(args...) }
