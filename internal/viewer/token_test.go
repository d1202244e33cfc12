package viewer

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

func TestTokenIsCreatedPrivateAndKept(t *testing.T) {
	dir := t.TempDir()
	a, err := LoadOrCreateToken(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.String()) != 43 || strings.ContainsAny(a.String(), "+/=") {
		t.Fatalf("token %q is not 32 bytes of base64url", a)
	}
	fi, err := os.Stat(filepath.Join(dir, TokenFile))
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %#o; want 0600", fi.Mode().Perm())
	}
	b, err := LoadOrCreateToken(dir)
	if err != nil || b != a {
		t.Fatalf("second start: %q %v; want the same token", b, err)
	}
	if other, _ := LoadOrCreateToken(t.TempDir()); other == a {
		t.Fatal("two data dirs got one token")
	}
	if (Token{}).Matches("") || (Token{}).Matches(a.String()) {
		t.Fatal("the zero Token matched")
	}
}

func TestConcurrentFirstStartsAgreeOnOneToken(t *testing.T) {
	dir := t.TempDir()
	var wg sync.WaitGroup
	toks := make([]Token, 8)
	errs := make([]error, 8)
	for i := range toks {
		wg.Go(func() { toks[i], errs[i] = LoadOrCreateToken(dir) })
	}
	wg.Wait()
	for i := range toks {
		if errs[i] != nil || toks[i] != toks[0] {
			t.Fatalf("start %d: %q %v; start 0: %q", i, toks[i], errs[i], toks[0])
		}
	}
}

func TestUntrustworthyTokenFilesAreRefused(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("mode bits and symlinks are Unix checks")
	}
	good := strings.Repeat("A", 43) + "\n"
	cases := []struct {
		name  string
		setup func(t *testing.T, path string)
		want  string
	}{
		{"readable by others", func(t *testing.T, p string) { write(t, p, good, 0o644) }, "mode"},
		{"writable by group", func(t *testing.T, p string) { write(t, p, good, 0o620) }, "mode"},
		{"symlink to a private file", func(t *testing.T, p string) {
			target := filepath.Join(t.TempDir(), "elsewhere")
			write(t, target, good, 0o600)
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
		}, "symlink"},
		{"dangling symlink", func(t *testing.T, p string) {
			if err := os.Symlink(filepath.Join(t.TempDir(), "missing"), p); err != nil {
				t.Fatal(err)
			}
		}, "symlink"},
		{"directory", func(t *testing.T, p string) { os.Mkdir(p, 0o700) }, "regular"},
		{"empty", func(t *testing.T, p string) { write(t, p, "", 0o600) }, "token"},
		{"short", func(t *testing.T, p string) { write(t, p, "abc\n", 0o600) }, "token"},
		{"not base64url", func(t *testing.T, p string) { write(t, p, strings.Repeat("+", 43), 0o600) }, "token"},
		{"too long", func(t *testing.T, p string) { write(t, p, strings.Repeat("A", 86), 0o600) }, "token"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, TokenFile)
			c.setup(t, path)
			tok, err := LoadOrCreateToken(dir)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("LoadOrCreateToken = %q, %v; want an error about %s", tok, err, c.want)
			}
			if tok != (Token{}) {
				t.Fatalf("a refused file still produced a token")
			}
		})
	}
}

func write(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // past the umask
		t.Fatal(err)
	}
}
