//go:build !race

package gobuild

// Race says whether this program was built with -race.
const Race = false
