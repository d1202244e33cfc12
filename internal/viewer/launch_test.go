package viewer

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestLaunchKeepsTheTokenOutOfArgv: `nmhost serve --open` must not put the
// token in the opener's arguments, which every user can read. The opener
// gets the path of an owner-only file that forwards to the URL.
func TestLaunchKeepsTheTokenOutOfArgv(t *testing.T) {
	dir := t.TempDir()
	token, err := LoadOrCreateToken(dir)
	if err != nil {
		t.Fatal(err)
	}
	link := "http://127.0.0.1:8765/#token=" + token.String()
	var argv []string
	path, err := Launch(dir, link, func(a []string) error { argv = a; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(argv) < 2 || argv[len(argv)-1] != path {
		t.Fatalf("the opener got %q; want the launcher's path %s last", argv, path)
	}
	if want := OpenerArgv(runtime.GOOS, path); strings.Join(argv, "\x00") != strings.Join(want, "\x00") {
		t.Errorf("argv %q; want %q", argv, want)
	}
	for _, a := range argv {
		if strings.Contains(a, token.String()) {
			t.Errorf("the opener's argument %q carries the token", a)
		}
	}
	if filepath.Dir(path) != dir || !strings.HasSuffix(path, ".html") {
		t.Errorf("launcher %s; want an .html file in %s", path, dir)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.Mode().IsRegular() || (runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600) {
		t.Errorf("launcher mode %v; want a regular file, 0600", fi.Mode())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{
		`<meta http-equiv="refresh" content="0;url=` + link + `">`,
		`location.replace("` + link + `")`,
		`<a href="` + link + `">`,
		`<meta name="referrer" content="no-referrer">`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the launcher lacks %s:\n%s", want, page)
		}
	}

	// Each start writes its own file: two viewers of one data dir do not
	// overwrite each other's.
	other, err := Launch(dir, link, func([]string) error { return nil })
	if err != nil || other == path {
		t.Errorf("second launcher %s %v; want a new file", other, err)
	}
}

func TestLaunchReportsAFailedOpener(t *testing.T) {
	dir := t.TempDir()
	path, err := Launch(dir, "http://127.0.0.1:1/#token=x", func([]string) error { return errors.New("no desktop") })
	if err == nil || !strings.Contains(err.Error(), "no desktop") {
		t.Fatalf("err %v; want the opener's error", err)
	}
	// The path comes back anyway, so the caller can remove the file.
	if _, statErr := os.Stat(path); statErr != nil {
		t.Fatalf("launcher %q: %v", path, statErr)
	}
}
