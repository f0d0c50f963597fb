package private

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestLsMode(t *testing.T) {
	for m, want := range map[os.FileMode]string{
		os.ModeDir | 0o755:                  "drwxr-xr-x",
		os.ModeDir | os.ModeSticky | 0o777:  "drwxrwxrwt",
		os.ModeDir | os.ModeSticky | 0o776:  "drwxrwxrwT",
		os.ModeDir | os.ModeSetgid | 0o2775: "drwxrwsr-x",
	} {
		if got := LsMode(m); got != want {
			t.Errorf("LsMode(%v) = %s, want %s", m, got, want)
		}
	}
}

// Check under each rule: a folder of this user's passes, a link passes
// only where followed, a folder others write in is refused (or, secret,
// tightened), a file is no folder.
func TestCheck(t *testing.T) {
	tmp := t.TempDir()
	mkdir := func(name string, perm os.FileMode) string {
		p := filepath.Join(tmp, name)
		if err := os.Mkdir(p, perm); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, perm); err != nil {
			t.Fatal(err)
		}
		return p
	}
	own := mkdir("own", 0o755)
	open := mkdir("open", 0o777|os.ModeSticky)
	secret := mkdir("secret", 0o700)
	loose := mkdir("loose", 0o755)
	link := filepath.Join(tmp, "link")
	if err := os.Symlink(own, link); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(tmp, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		rule Rule
		want Problem // 0: private
	}{
		{own, Rule{}, 0},
		{open, Rule{}, Writable},
		{link, Rule{}, Link},
		{link, Rule{FollowLink: true}, 0},
		{link, Rule{FollowLink: true, Secret: true}, Link},
		{file, Rule{}, NotFolder},
		{secret, Rule{Secret: true}, 0},
		{loose, Rule{Secret: true}, 0}, // tightened
		{file, Rule{Secret: true}, NotFolder},
	} {
		err := Check(tc.path, tc.rule)
		var pe *Error
		switch {
		case tc.want == 0 && err != nil:
			t.Errorf("Check(%s, %+v) = %v, want private", filepath.Base(tc.path), tc.rule, err)
		case tc.want != 0 && (!errors.As(err, &pe) || pe.Problem != tc.want):
			t.Errorf("Check(%s, %+v) = %v, want problem %d", filepath.Base(tc.path), tc.rule, err, tc.want)
		}
	}
	if fi, err := os.Stat(loose); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("a secret folder of mode 0755 was not tightened: %v %v", fi.Mode(), err)
	}
	if err := Check(filepath.Join(tmp, "missing"), Rule{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Check of a missing folder: %v, want not exist", err)
	}
}

// CheckAbove (issue 33, hardening 3): a folder above that another user
// owns, or may write in without the sticky bit, or a link of theirs on
// the way, is refused, naming it; sticky folders such as /tmp, and this
// user's own links, are not.
func TestCheckAbove(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make folders of another user (the project's machines and CI run as root)")
	}
	const other = 65534
	tmp := t.TempDir()
	mk := func(path string, perm os.FileMode, uid int) string {
		t.Helper()
		if err := os.MkdirAll(path, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, perm); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(path, uid, uid); err != nil {
			t.Fatal(err)
		}
		return path
	}
	theirs := mk(filepath.Join(tmp, "theirs"), 0o755, other)
	open := mk(filepath.Join(tmp, "open"), 0o777, 0)
	sticky := mk(filepath.Join(tmp, "sticky"), 0o777|os.ModeSticky, 0)
	own := mk(filepath.Join(tmp, "own"), 0o755, 0)
	theirLink := filepath.Join(sticky, "their-link")
	if err := os.Symlink(own, theirLink); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(theirLink, other, other); err != nil {
		t.Fatal(err)
	}
	ownLink := filepath.Join(own, "to-theirs")
	if err := os.Symlink(theirs, ownLink); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		store string
		at    string
		want  Problem // 0: safe
	}{
		{filepath.Join(own, "store"), "", 0},
		{filepath.Join(sticky, "store"), "", 0},
		{filepath.Join(own, "not", "made", "yet", "store"), "", 0},
		{filepath.Join(theirs, "store"), theirs, Owner},
		{filepath.Join(theirs, "deeper", "store"), theirs, Owner},
		{filepath.Join(open, "store"), open, Writable},
		{filepath.Join(theirLink, "store"), theirLink, LinkOfOther},
		// This user's link, followed: where it leads is another user's.
		{filepath.Join(ownLink, "store"), theirs, Owner},
	} {
		err := CheckAbove(tc.store)
		var pe *Error
		switch {
		case tc.want == 0 && err != nil:
			t.Errorf("CheckAbove(%s) = %v, want safe", tc.store, err)
		case tc.want != 0 && (!errors.As(err, &pe) || pe.Problem != tc.want || pe.Path != tc.at):
			t.Errorf("CheckAbove(%s) = %v, want problem %d at %s", tc.store, err, tc.want, tc.at)
		}
	}
}

// Append and WriteFile refuse a link where the file should be, and leave
// what it points to as it was.
func TestNoWriteThroughLink(t *testing.T) {
	tmp := t.TempDir()
	victim := filepath.Join(tmp, "victim")
	if err := os.WriteFile(victim, []byte("before"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(tmp, "n1.log")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	if f, err := Append(link); err == nil {
		f.Close()
		t.Errorf("Append through a link succeeded")
	}
	if err := WriteFile(link, []byte("after"), 0o644); err == nil {
		t.Errorf("WriteFile through a link succeeded")
	}
	if b, _ := os.ReadFile(victim); string(b) != "before" {
		t.Errorf("the link's target now holds %q", b)
	}
	f, err := Append(filepath.Join(tmp, "plain.log"))
	if err != nil {
		t.Fatalf("Append of a new file: %v", err)
	}
	f.Close()
}
