package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"splitbrain/cluster"
	"splitbrain/cluster/docker"
	"splitbrain/driver"
	"splitbrain/internal/netns"
)

// check is one line of doctor's report.
type check struct {
	status string // ok, MISSING, optional (missing but not needed), no
	name   string
	detail string
}

// cmdDoctor says what each backend needs and whether this machine has it.
// It exits 0 when the local backend can run; the Docker backend is
// reported on its own, as it is needed only for --backend docker.
func cmdDoctor(args []string, stdout io.Writer) (int, error) {
	if len(args) > 0 {
		return exitUsage, &usageError{fmt.Sprintf("doctor takes no arguments, got %q", strings.Join(args, " "))}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	fmt.Fprintln(stdout, "local backend (the default)")
	local := localChecks(ctx)
	printChecks(stdout, append(local, chromiumCheck(), redisPyCheck(ctx)))
	fmt.Fprintln(stdout, "docker backend (--backend docker)")
	dock := dockerChecks(ctx, allOK(local))
	printChecks(stdout, dock)

	localOK, dockerOK := allOK(local), allOK(dock)
	if localOK {
		fmt.Fprintln(stdout, "local backend: ready")
	} else {
		fmt.Fprintln(stdout, "local backend: NOT ready: install what is MISSING above (scripts/setup.sh does it on Debian/Ubuntu)")
	}
	if dockerOK {
		fmt.Fprintln(stdout, "docker backend: ready")
	} else {
		fmt.Fprintln(stdout, "docker backend: not available: see the lines above")
	}
	if !localOK {
		return exitInvalid, nil
	}
	return exitValid, nil
}

// localChecks are what the local backend cannot run without: redis-server,
// the clock shim and a private network. The Docker image is built from the same two.
func localChecks(ctx context.Context) []check {
	var out []check
	if path, err := exec.LookPath("redis-server"); err != nil {
		out = append(out, check{"MISSING", "redis-server", "not in PATH: apt-get install -y redis-server"})
	} else {
		detail := path
		if real, err := filepath.EvalSymlinks(path); err == nil && real != path {
			detail += " -> " + real
		}
		v, err := exec.CommandContext(ctx, path, "--version").Output()
		if err != nil {
			out = append(out, check{"MISSING", "redis-server", detail + ": does not run: " + err.Error()})
		} else {
			out = append(out, check{"ok", "redis-server", detail + ", " + strings.TrimSpace(string(v))})
		}
	}
	return append(out, shimCheck(ctx), networkCheck(ctx))
}

// networkCheck starts a child in a network namespace of its own, as the
// supervisor starts the worker of a local play (network.go): the local
// backend refuses to start without one, unless told to play unprotected.
func networkCheck(ctx context.Context) check {
	if os.Getenv(ownNetworkEnv) == "1" {
		return check{"ok", "network ns", ownNetworkEnv + "=1: this network namespace is the harness's alone (a container made for it)"}
	}
	cmd := exec.CommandContext(ctx, selfPath(), "help")
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	netns.Isolate(cmd.SysProcAttr)
	err := cmd.Run()
	switch {
	case err == nil:
		return check{"ok", "network ns", "the local plays run in a network namespace of their own, out of other users' reach"}
	case os.Getenv(sharedLoopbackEnv) == "1":
		return check{"ok", "network ns", "none (" + netns.Explain(err) + "); " + sharedLoopbackEnv + "=1 plays on the shared loopback, NOT protected from other users"}
	}
	return check{"MISSING", "network ns", netns.Explain(err) + "; or set " + sharedLoopbackEnv + "=1 to play unprotected"}
}

// shimCheck compiles the clock shim (once; later runs reuse it), which proves
// more than finding cc.
func shimCheck(ctx context.Context) check {
	cache, err := cluster.DefaultCacheDir()
	if err != nil {
		return check{"MISSING", "cc", err.Error()}
	}
	lib, err := cluster.BuildShim(ctx, cache)
	switch {
	case errors.Is(err, cluster.ErrNoCompiler):
		return check{"MISSING", "cc", "no C compiler for the clock shim: apt-get install -y gcc"}
	case err != nil:
		return check{"MISSING", "cc", "the clock shim does not build: " + err.Error()}
	}
	return check{"ok", "cc", "clock shim built: " + lib}
}

func chromiumCheck() check {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if path, err := exec.LookPath(name); err == nil {
			return check{"ok", "chromium", path + " (for the report tests in a real browser)"}
		}
	}
	return check{"optional", "chromium", "not found: only the report tests in a real browser need it (apt-get install -y chromium)"}
}

// redisPyCheck: the redis-py lock driver runs on Debian's python3 with
// Debian's python3-redis; only its lock kind needs them.
func redisPyCheck(ctx context.Context) check {
	out, err := exec.CommandContext(ctx, driver.Python, "-c", "import redis; print(redis.__version__)").Output()
	if err != nil {
		return check{"optional", "python3-redis", "not importable by " + driver.Python + ": only the redis-py lock needs it (apt-get install -y python3-redis)"}
	}
	return check{"ok", "python3-redis", strings.TrimSpace(string(out)) + " (for the redis-py lock driver)"}
}

func dockerChecks(ctx context.Context, canBuild bool) []check {
	var out []check
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	eng, err := docker.Connect(cctx)
	cancel()
	if err != nil {
		out = append(out, check{"no", "engine", err.Error() +
			" (start the engine, or set DOCKER_HOST; this user must be allowed to use its socket)"})
	} else {
		defer eng.Close()
		info, err := eng.Info(ctx)
		if err != nil {
			out = append(out, check{"no", "engine", err.Error()})
			eng = nil
		} else {
			out = append(out, check{"ok", "engine", fmt.Sprintf("Docker %s at %s, API %s negotiated (the engine speaks up to %s)",
				info.ServerVersion, info.Host, info.APIVersion, info.ServerAPI)})
		}
	}
	if path, err := exec.LookPath("ldd"); err != nil {
		out = append(out, check{"no", "ldd", "not in PATH, needed to build the image: apt-get install -y libc-bin"})
	} else {
		out = append(out, check{"ok", "ldd", path})
	}
	if !canBuild {
		return append(out, check{"no", "image", "cannot be built without redis-server and cc (see above)"})
	}
	tag, err := docker.ImageTag(ctx, docker.ImageConfig{})
	switch {
	case err != nil:
		out = append(out, check{"no", "image", "cannot be built: " + err.Error()})
	case eng == nil:
		out = append(out, check{"ok", "image", tag + " can be built from this redis-server once an engine answers"})
	default:
		out = append(out, imageCheck(ctx, eng, tag))
	}
	return out
}

func imageCheck(ctx context.Context, eng *docker.Engine, tag string) check {
	imgs, err := eng.Images(ctx)
	if err != nil {
		return check{"no", "image", err.Error()}
	}
	for _, im := range imgs {
		if im.Tag == tag {
			return check{"ok", "image", tag + " built, matches this redis-server"}
		}
	}
	stale := ""
	if len(imgs) > 0 {
		stale = fmt.Sprintf(" (%d older splitbrain image(s) present)", len(imgs))
	}
	return check{"ok", "image", tag + " not built yet: the first --backend docker run builds it, no registry needed" + stale}
}

func allOK(cs []check) bool {
	for _, c := range cs {
		if c.status != "ok" && c.status != "optional" {
			return false
		}
	}
	return true
}

func printChecks(w io.Writer, cs []check) {
	for _, c := range cs {
		fmt.Fprintf(w, "  %-9s %-13s %s\n", c.status, c.name, c.detail)
	}
}
