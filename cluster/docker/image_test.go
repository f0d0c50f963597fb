package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"splitbrain/cluster"
)

func TestParseLdd(t *testing.T) {
	tests := []struct {
		name    string
		out     string
		want    []string
		wantErr string
	}{
		{
			name: "debian redis-server",
			out: "\tlinux-vdso.so.1 (0x00007ffc5b5f9000)\n" +
				"\tlibatomic.so.1 => /lib/x86_64-linux-gnu/libatomic.so.1 (0x00007f2136f80000)\n" +
				"\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f213601e000)\n" +
				"\t/lib64/ld-linux-x86-64.so.2 (0x00007f2136f9e000)\n",
			want: []string{"/lib/x86_64-linux-gnu/libatomic.so.1", "/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"},
		},
		{
			name: "old glibc prints an empty vdso target",
			out:  "\tlinux-gate.so.1 =>  (0xb7f0b000)\n\tlibc.so.6 => /lib/libc.so.6 (0xb7d8c000)\n",
			want: []string{"/lib/libc.so.6"},
		},
		{name: "static", out: "\tstatically linked\n", want: nil},
		{
			name:    "missing library",
			out:     "\tlibc.so.6 => /lib/libc.so.6 (0x1)\n\tliblzf.so.1 => not found\n",
			wantErr: "line 2: library liblzf.so.1 not found",
		},
		{
			name:    "relative target",
			out:     "\tlibc.so.6 => libc.so.6 (0x1)\n",
			wantErr: `resolves to a relative path "libc.so.6"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseLdd([]byte(tt.out))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// hostRootfs lists the image's files for this machine's redis-server.
func hostRootfs(t *testing.T) []rootfsFile {
	t.Helper()
	redis, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal(cluster.ErrNoRedisServer)
	}
	ctx := context.Background()
	shim, err := cluster.BuildShim(ctx, testCacheDir)
	if err != nil {
		t.Fatal(err)
	}
	files, err := rootfsFiles(ctx, redis, imageBinary(cluster.Redis), shim)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestRootfsHoldsRedisItsLibrariesLoaderAndShim(t *testing.T) {
	files := hostRootfs(t)
	byDest := map[string]rootfsFile{}
	for _, f := range files {
		byDest[f.dest] = f
	}
	redis := byDest[imageBinary(cluster.Redis)]
	if redis.src == "" {
		t.Fatalf("no %s in %v", imageBinary(cluster.Redis), files)
	}
	// Debian's redis-server is a link; the image must hold the real binary.
	if info, err := os.Lstat(redis.src); err != nil || info.Mode()&os.ModeSymlink != 0 {
		t.Errorf("%s comes from %s, want the resolved file (%v)", imageBinary(cluster.Redis), redis.src, err)
	}
	if _, ok := byDest[imageShim]; !ok {
		t.Errorf("no clock shim at %s", imageShim)
	}
	interp, err := elfInterp(redis.src)
	if err != nil || interp == "" {
		t.Fatalf("loader of %s: %q, %v", redis.src, interp, err)
	}
	if _, ok := byDest[interp]; !ok {
		t.Errorf("no loader %s in the image", interp)
	}
	if !slices.ContainsFunc(files, func(f rootfsFile) bool { return strings.Contains(f.dest, "/libc.so") }) {
		t.Errorf("no libc in %v", files)
	}
}

func TestRootfsTarIsDeterministic(t *testing.T) {
	t.Parallel()
	files := hostRootfs(t)
	var a, b bytes.Buffer
	if err := writeRootfs(&a, files); err != nil {
		t.Fatal(err)
	}
	if err := writeRootfs(&b, files); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("two writes of the same files differ")
	}
	// Every parent comes before its children, and redis-server is there
	// under its own name.
	tr := tar.NewReader(&a)
	seen := map[string]bool{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(hdr.Name, "/")
		if dir := filepath.Dir(name); dir != "." && !seen[dir] {
			t.Errorf("%s comes before its folder %s", name, dir)
		}
		seen[name] = true
	}
	for _, want := range []string{"usr/bin/redis-server", "data", "tmp", "splitbrain"} {
		if !seen[want] {
			t.Errorf("no %s in the rootfs", want)
		}
	}

	// Another content gives another tar.
	other := filepath.Join(t.TempDir(), "lib")
	if err := os.WriteFile(other, []byte("not the same"), 0o644); err != nil {
		t.Fatal(err)
	}
	changed := slices.Clone(files)
	changed[len(changed)-1].src = other
	var c bytes.Buffer
	if err := writeRootfs(&c, changed); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a.Bytes(), c.Bytes()) {
		t.Error("a changed file left the tar unchanged")
	}
}

func TestNodeIPs(t *testing.T) {
	tests := []struct {
		name    string
		sn      subnet
		n       int
		want    []string
		wantErr string
	}{
		{"skips the gateway", subnet{"172.18.0.0/16", "172.18.0.1"}, 3, []string{"172.18.0.2", "172.18.0.3", "172.18.0.4"}, ""},
		{"gateway elsewhere", subnet{"10.9.0.0/29", "10.9.0.6"}, 5, []string{"10.9.0.1", "10.9.0.2", "10.9.0.3", "10.9.0.4", "10.9.0.5"}, ""},
		{"too small", subnet{"10.9.0.0/29", "10.9.0.1"}, 6, nil, "has room for 5 nodes, want 6"},
		{"bad subnet", subnet{"nope", "10.9.0.1"}, 1, nil, `subnet "nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := nodeIPs(tt.sn, tt.n)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestOwnerLiveness(t *testing.T) {
	self, err := currentOwner()
	if err != nil {
		t.Fatal(err)
	}
	dead := deadOwner(t)
	zombie := zombieOwner(t)
	tests := []struct {
		name string
		o    owner
		want liveness
	}{
		{"this process", self, ownerAlive},
		{"an exited process", dead, ownerDead},
		// An orphaned harness stays a zombie until init waits for it.
		{"an exited process not yet waited for", zombie, ownerDead},
		{"same pid, another start (pid reused)", owner{PID: self.PID, Start: self.Start + 1, Boot: self.Boot, Host: self.Host}, ownerDead},
		{"an earlier boot", owner{PID: self.PID, Start: self.Start, Boot: "earlier", Host: self.Host}, ownerDead},
		{"another host", owner{PID: dead.PID, Start: dead.Start, Boot: "x", Host: self.Host + "-other"}, ownerElsewhere},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.o.liveness(self); got != tt.want {
				t.Errorf("liveness = %v, want %v", got, tt.want)
			}
			back, ok := ownerFromLabels(tt.o.labels())
			if !ok || back != tt.o {
				t.Errorf("labels round trip: %+v, %v; want %+v", back, ok, tt.o)
			}
		})
	}
	if _, ok := ownerFromLabels(map[string]string{labelOwnerPID: "12"}); ok {
		t.Error("incomplete owner labels accepted")
	}
}
