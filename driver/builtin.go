package driver

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

//go:embed builtin/redis_py.py
var redisPy []byte

// Python is the interpreter of the Python drivers: Debian's, which sees
// Debian's python3-redis (another python3 earlier on PATH may not).
const Python = "/usr/bin/python3"

// Builtins are the drivers shipped inside the binary, by name.
var Builtins = []string{"redis-py"}

// Builtin writes built-in driver name into dir (a private folder of the
// run) and returns the command that runs it.
func Builtin(name, dir string) ([]string, error) {
	switch name {
	case "redis-py":
		path := filepath.Join(dir, "redis_py.py")
		if err := os.WriteFile(path, redisPy, 0o600); err != nil {
			return nil, fmt.Errorf("driver %s: %w", name, err)
		}
		if _, err := os.Stat(Python); err != nil {
			return nil, fmt.Errorf("driver %s needs %s with Debian's python3-redis (apt-get install python3-redis; scripts/setup.sh installs it): %w", name, Python, err)
		}
		return []string{Python, "-u", path}, nil
	}
	return nil, fmt.Errorf("no built-in driver %q; the built-in drivers are %s", name, strings.Join(Builtins, ", "))
}

// IsBuiltin reports whether name is a built-in driver.
func IsBuiltin(name string) bool { return slices.Contains(Builtins, name) }
