package driver

import "testing"

// Every built-in driver says what it runs on, and only one thing.
func TestRuntimeOfEveryBuiltin(t *testing.T) {
	t.Parallel()
	for _, name := range Builtins {
		r, ok := RuntimeOf(name)
		kinds := 0
		for _, has := range []bool{len(r.PythonModules) > 0, r.PHP, len(r.Jars) > 0} {
			if has {
				kinds++
			}
		}
		if !ok || kinds != 1 {
			t.Errorf("%s: runtime %+v (%v), want exactly one", name, r, ok)
		}
	}
	if _, ok := RuntimeOf("mine"); ok {
		t.Error("a driver of the user's has a runtime")
	}
}
