package driver

import (
	"embed"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The built-in drivers: the locks people run in other languages, each
// from Debian's packages (scripts/setup.sh installs them), shipped inside
// the binary and written into a private folder of the run before they
// start. Each is a lock kind of package locks (one file each).

//go:embed builtin
var builtinFiles embed.FS

// Python is the interpreter of the Python drivers: Debian's, which sees
// Debian's python3-redis and python3-kazoo (another python3 earlier on
// PATH, pyenv's say, may not).
const Python = "/usr/bin/python3"

// PHP is Debian's php-cli. Its drivers run with -d display_errors=stderr:
// by default PHP prints warnings and notices to stdout, which would break
// the protocol.
const PHP = "/usr/bin/php"

// builtinDriver is one built-in driver.
type builtinDriver struct {
	// files are its files in builtin/, written into the run's folder.
	files []string
	// command runs it from dir, where its files are.
	command func(dir string) []string
	// needs are the files its interpreter and libraries install, each
	// with the Debian package that brings it.
	needs []need
	// prepare, if set, readies the driver once its files are written
	// (Curator's classes compiled): it returns the command instead.
	prepare func(dir string) ([]string, error)
}

// need is a file (a glob) a driver needs and the package that brings it.
type need struct{ path, pkg string }

var (
	python      = need{Python, "python3"}
	php         = need{PHP, "php-cli"}
	phpredis    = need{"/usr/lib/php/*/redis.so", "php-redis"}
	symfonyLock = need{"/usr/share/php/Symfony/Component/Lock", "php-symfony-lock"}
	kazooPkg    = need{"/usr/lib/python3/dist-packages/kazoo", "python3-kazoo"}
	// curatorNeeds: Curator and ZooKeeper's client; the JDK is asked for
	// by prepareCurator, with its package.
	curatorNeeds = []need{{"/usr/share/java/curator-recipes.jar", "libcurator-recipes-java"}, {"/usr/share/java/zookeeper.jar", "libzookeeper-java"},
		{"/usr/share/java/slf4j-simple.jar", "libslf4j-java"}}
)

var builtins = map[string]builtinDriver{
	"redis-py": {files: []string{"redis_py.py", "sbdriver.py"},
		command: pythonCommand("redis_py.py"),
		needs:   []need{python, {"/usr/lib/python3/dist-packages/redis", "python3-redis"}}},
	"kazoo": {files: []string{"kazoo_lock.py", "sbdriver.py"},
		command: pythonCommand("kazoo_lock.py"),
		needs:   []need{python, kazooPkg}},
	"kazoo-listener": {files: []string{"kazoo_lock.py", "sbdriver.py"},
		command: pythonCommand("kazoo_lock.py", "listener"),
		needs:   []need{python, kazooPkg}},
	"symfony-redis": {files: []string{"symfony_lock.php", "sbdriver.php"},
		command: phpCommand("symfony_lock.php", "redis"), needs: []need{php, phpredis, symfonyLock}},
	"symfony-redlock": {files: []string{"symfony_lock.php", "sbdriver.php"},
		command: phpCommand("symfony_lock.php", "combined"), needs: []need{php, phpredis, symfonyLock}},
	"laravel": {files: []string{"laravel_lock.php", "sbdriver.php"},
		command: phpCommand("laravel_lock.php"),
		needs: []need{php, phpredis, {"/usr/share/php/Illuminate/Cache", "php-illuminate-cache"},
			{"/usr/share/php/Illuminate/Redis", "php-illuminate-redis"}}},
	"malkusch-redlock": {files: []string{"malkusch_lock.php", "sbdriver.php"},
		command: phpCommand("malkusch_lock.php"), needs: []need{php, phpredis, {"/usr/share/php/Malkusch/Lock", "php-malkusch-lock"}}},
	"tooz-etcd": {files: []string{"tooz_etcd.py", "sbdriver.py"},
		command: pythonCommand("tooz_etcd.py"),
		needs:   []need{python, {"/usr/lib/python3/dist-packages/tooz", "python3-tooz"}}},
	"curator":          {files: []string{"CuratorDriver.java"}, prepare: prepareCurator, needs: curatorNeeds},
	"curator-listener": {files: []string{"CuratorDriver.java"}, prepare: prepareCuratorListener, needs: curatorNeeds},
}

func pythonCommand(file string, args ...string) func(string) []string {
	return func(dir string) []string { return append([]string{Python, "-u", filepath.Join(dir, file)}, args...) }
}

// phpCommand runs a PHP driver with its warnings on stderr.
func phpCommand(file string, args ...string) func(string) []string {
	return func(dir string) []string {
		return append([]string{PHP, "-d", "display_errors=stderr", "-d", "log_errors=0", filepath.Join(dir, file)}, args...)
	}
}

// Builtins are the drivers shipped inside the binary, by name: the lock
// kinds they play.
var Builtins = []string{"redis-py", "kazoo", "kazoo-listener", "curator", "curator-listener", "symfony-redis", "symfony-redlock", "laravel", "malkusch-redlock", "tooz-etcd"}

// Builtin writes built-in driver name into dir (a private folder of the
// run) and returns the command that runs it; it says which Debian package
// to install when one it needs is missing.
func Builtin(name, dir string) ([]string, error) {
	b, ok := builtins[name]
	if !ok {
		return nil, fmt.Errorf("no built-in driver %q; the built-in drivers are %s", name, strings.Join(Builtins, ", "))
	}
	var missing []string
	for _, n := range b.needs {
		if m, _ := filepath.Glob(n.path); len(m) == 0 && !slices.Contains(missing, n.pkg) {
			missing = append(missing, n.pkg)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("driver %s needs Debian's %s (apt-get install %s; scripts/setup.sh installs them)",
			name, strings.Join(missing, ", "), strings.Join(missing, " "))
	}
	for _, f := range b.files {
		data, err := builtinFiles.ReadFile("builtin/" + f)
		if err != nil {
			return nil, fmt.Errorf("driver %s: %w", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o600); err != nil {
			return nil, fmt.Errorf("driver %s: %w", name, err)
		}
	}
	if b.prepare != nil {
		return b.prepare(dir)
	}
	return b.command(dir), nil
}

// IsBuiltin reports whether name is a built-in driver.
func IsBuiltin(name string) bool { return slices.Contains(Builtins, name) }
