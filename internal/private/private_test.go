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
