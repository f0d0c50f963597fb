package spec

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
)

//go:embed builtin/*.yaml
var builtin embed.FS

// Builtin lists the names of the built-in scenarios, sorted.
func Builtin() []string {
	entries, _ := fs.ReadDir(builtin, "builtin")
	var out []string
	for _, e := range entries {
		out = append(out, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	// File names sort "clock-jump-control.yaml" before "clock-jump.yaml";
	// a scenario should come before its control.
	sort.Strings(out)
	return out
}

// ErrUnknownScenario means a name is neither built in nor a readable file.
var ErrUnknownScenario = errors.New("unknown scenario")

// Load finds a scenario by built-in name or by file path.
func Load(nameOrPath string) (*Scenario, error) {
	if !strings.ContainsAny(nameOrPath, "/.") {
		data, err := builtin.ReadFile(path.Join("builtin", nameOrPath+".yaml"))
		if err != nil {
			return nil, fmt.Errorf("%w %q; built-in scenarios: %s (or give a path to a .yaml file)",
				ErrUnknownScenario, nameOrPath, strings.Join(Builtin(), ", "))
		}
		return Parse(data, "builtin/"+nameOrPath+".yaml")
	}
	data, err := readFile(nameOrPath)
	if err != nil {
		return nil, err
	}
	return Parse(data, nameOrPath)
}
