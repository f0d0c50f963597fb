package driver

import "slices"

// Runtime is what a built-in driver runs on, for an image that must hold
// it (the runner image of splitbrain fanout, which carries this machine's
// interpreters and libraries): at most one of the three.
type Runtime struct {
	// PythonModules: the driver is Python (Python); these are the
	// modules it imports from outside the standard library.
	PythonModules []string
	// PHP: the driver is PHP (PHP), with its extensions and include path.
	PHP bool
	// Jars: the driver is Java, compiled with javac at its first start
	// and run on this class path.
	Jars []string
}

// RuntimeOf says what built-in driver name runs on; false for a name that
// is no built-in driver.
func RuntimeOf(name string) (Runtime, bool) {
	switch name {
	case "redis-py":
		return Runtime{PythonModules: []string{"redis", "redis.sentinel", "redis.exceptions", "redis.lock"}}, true
	case "kazoo", "kazoo-listener":
		return Runtime{PythonModules: []string{"kazoo", "kazoo.client", "kazoo.exceptions", "kazoo.recipe.lock", "kazoo.security"}}, true
	case "tooz-etcd":
		// tooz finds its etcd driver through stevedore's entry points,
		// which read tooz's metadata (copied with each package).
		return Runtime{PythonModules: []string{"tooz", "tooz.coordination", "tooz.drivers.etcd3gw", "etcd3gw", "stevedore",
			"requests.adapters", "requests.exceptions", "urllib3.exceptions", "tenacity"}}, true
	case "symfony-redis", "symfony-redlock", "laravel", "malkusch-redlock":
		return Runtime{PHP: true}, true
	case "curator", "curator-listener":
		return Runtime{Jars: slices.Clone(curatorJars)}, true
	}
	return Runtime{}, false
}
