package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"

	"github.com/agentgate/nmhost/mediator"
)

// setup is a workspace beside an outside directory holding a canary file
// whose content and time must never change.
func setup(t *testing.T, lim Limits) (*Workspace, string, string) {
	t.Helper()
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	os.MkdirAll(outside, 0o700)
	canary := filepath.Join(outside, "canary.txt")
	if err := os.WriteFile(canary, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base, "ws")
	w, err := Open(dir, lim)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w, dir, canary
}

func untouched(t *testing.T, canary string) {
	t.Helper()
	b, err := os.ReadFile(canary)
	if err != nil || string(b) != "secret" {
		t.Fatalf("the canary outside the workspace was touched: %q %v", b, err)
	}
}

func TestHostilePaths(t *testing.T) {
	w, dir, canary := setup(t, Limits{})
	// Planted inside by someone else: links out, absolute and relative,
	// and a hard link to the outside file.
	os.Symlink(canary, filepath.Join(dir, "abs-link"))
	os.Symlink("../outside/canary.txt", filepath.Join(dir, "rel-link"))
	os.Symlink("../outside", filepath.Join(dir, "dir-link"))
	if err := os.Link(canary, filepath.Join(dir, "hard-link")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		code mediator.Code
	}{
		{"../outside/canary.txt", mediator.CodePathNotAllowed},
		{"a/../../outside/canary.txt", mediator.CodePathNotAllowed},
		{"..", mediator.CodePathNotAllowed},
		{canary, mediator.CodePathNotAllowed},
		{"/etc/passwd", mediator.CodePathNotAllowed},
		{`C:\Windows\win.ini`, mediator.CodePathNotAllowed},
		{`..\outside\canary.txt`, mediator.CodePathNotAllowed},
		{"abs-link", mediator.CodePathNotAllowed},
		{"rel-link", mediator.CodePathNotAllowed},
		{"dir-link/canary.txt", mediator.CodePathNotAllowed},
		{"hard-link", mediator.CodePathNotAllowed},
		{"a\x00b", mediator.CodePathNotAllowed},
		{strings.Repeat("a/", 600), mediator.CodePathNotAllowed},
		{"", mediator.CodePathNotAllowed},
		{"missing.txt", mediator.CodeNotFound},
	} {
		t.Run(strings.ReplaceAll(mediator.Truncate(tc.name, 40), "/", "|"), func(t *testing.T) {
			if _, err := w.ReadFile(tc.name, 0); mediator.CodeOf(err) != tc.code {
				t.Errorf("read: %v; want %s", err, tc.code)
			}
			if tc.code == mediator.CodeNotFound {
				return
			}
			if err := w.WriteFile(tc.name, []byte("owned"), false); mediator.CodeOf(err) != tc.code {
				t.Errorf("write: %v; want %s", err, tc.code)
			}
			if err := w.WriteFile(tc.name, []byte("owned"), true); mediator.CodeOf(err) != tc.code {
				t.Errorf("append: %v; want %s", err, tc.code)
			}
			w.Remove(tc.name, true)
			w.Rename(tc.name, "moved")
			w.Rename("moved", tc.name)
			untouched(t, canary)
		})
	}
	if _, err := os.Stat(canary); err != nil {
		t.Fatal(err)
	}
}

// TestSymlinkSwapRace: one goroutine keeps swapping a directory of the
// workspace for a link to the outside; others keep reading and writing a
// file under it. Every operation either works inside or is refused; the
// outside file is never read or changed.
func TestSymlinkSwapRace(t *testing.T) {
	w, dir, canary := setup(t, Limits{})
	os.WriteFile(filepath.Join(filepath.Dir(canary), "f.txt"), []byte("secret"), 0o600)
	outsideF := filepath.Join(filepath.Dir(canary), "f.txt")
	d := filepath.Join(dir, "d")
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			os.RemoveAll(d)
			os.Mkdir(d, 0o700)
			os.WriteFile(filepath.Join(d, "f.txt"), []byte("inside"), 0o600)
			os.RemoveAll(d)
			os.Symlink(filepath.Dir(canary), d)
		}
	}()
	var leaked atomic.Int64
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3000 {
				if b, err := w.ReadFile("d/f.txt", 0); err == nil && string(b) == "secret" {
					leaked.Add(1)
				}
				w.WriteFile("d/f.txt", []byte("owned"), false)
			}
		}()
	}
	for range 3000 {
		w.ReadDir("d")
	}
	stop.Store(true)
	wg.Wait()
	if leaked.Load() != 0 {
		t.Fatalf("%d reads returned the outside file", leaked.Load())
	}
	untouched(t, canary)
	if b, _ := os.ReadFile(outsideF); string(b) != "secret" {
		t.Fatalf("the outside file became %q", b)
	}
}

func TestQuotas(t *testing.T) {
	w, _, _ := setup(t, Limits{MaxBytes: 100, MaxFiles: 3})
	if err := w.WriteFile("a", make([]byte, 60), false); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile("b", make([]byte, 50), false); mediator.CodeOf(err) != mediator.CodeQuotaExceeded {
		t.Fatalf("bytes: %v", err)
	}
	// Replacing a file counts only what it grows by.
	if err := w.WriteFile("a", make([]byte, 90), false); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile("a", make([]byte, 20), true); mediator.CodeOf(err) != mediator.CodeQuotaExceeded {
		t.Fatalf("append: %v", err)
	}
	w.Mkdir("d", false)
	w.WriteFile("d/c", nil, false)
	if err := w.WriteFile("e", nil, false); mediator.CodeOf(err) != mediator.CodeQuotaExceeded {
		t.Fatalf("files: %v", err)
	}
	// Removing frees what it held.
	if err := w.Remove("d", true); err != nil {
		t.Fatal(err)
	}
	if b, f := w.Usage(); b != 90 || f != 1 {
		t.Fatalf("usage %d bytes %d files", b, f)
	}
	// A reopened workspace counts what is there.
	w2, err := Open(w.root.Name(), Limits{MaxBytes: 100, MaxFiles: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	if b, f := w2.Usage(); b != 90 || f != 1 {
		t.Fatalf("reopened usage %d bytes %d files", b, f)
	}
}

// TestWorkspacesStayApart: two sessions' workspaces, used at once, never
// see each other's files.
func TestWorkspacesStayApart(t *testing.T) {
	base := t.TempDir()
	a, _ := Open(filepath.Join(base, "a"), Limits{})
	b, _ := Open(filepath.Join(base, "b"), Limits{})
	defer a.Close()
	defer b.Close()
	var wg sync.WaitGroup
	for i, w := range []*Workspace{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 100 {
				w.WriteFile(filepath.Join("n", string(rune('a'+i))+string(rune('0'+j%10))), []byte{byte(i)}, false)
				w.Mkdir("n", true)
			}
		}()
	}
	wg.Wait()
	for _, name := range []string{"../b/n/b0", "../a/n/a0"} {
		if _, err := a.ReadFile(name, 0); mediator.CodeOf(err) != mediator.CodePathNotAllowed {
			t.Errorf("%s: %v", name, err)
		}
	}
	ents, _ := a.ReadDir("n")
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "a") {
			t.Errorf("workspace a holds %s", e.Name())
		}
	}
}

// TestRefusedChangeGivesBackItsQuota: a write, a pwrite, a truncate and a
// create the policy refuses book nothing, so writes up to the quota still
// succeed afterwards.
func TestRefusedChangeGivesBackItsQuota(t *testing.T) {
	w, _, canary := setup(t, Limits{MaxBytes: 100, MaxFiles: 2})
	refuse := true
	var asked []string
	fsys := w.SysFS(false, Hooks{Change: func(op, name string, n int64, do func() error) error {
		asked = append(asked, op)
		if refuse && op != "create" {
			return mediator.Errorf(mediator.CodeUserDenied, "no")
		}
		return do()
	}})
	f, e := fsys.OpenFile("a.txt", experimentalsys.O_CREAT|experimentalsys.O_RDWR, 0o600)
	if e != 0 {
		t.Fatalf("open: %v", e)
	}
	defer f.Close()
	for _, tc := range []struct {
		name   string
		change func() experimentalsys.Errno
	}{
		{"write", func() experimentalsys.Errno { _, e := f.Write(make([]byte, 80)); return e }},
		{"pwrite", func() experimentalsys.Errno { _, e := f.Pwrite(make([]byte, 80), 10); return e }},
		{"truncate", func() experimentalsys.Errno { return f.Truncate(90) }},
		{"create", func() experimentalsys.Errno {
			refuse = true
			_, e := w.SysFS(false, Hooks{Change: func(string, string, int64, func() error) error {
				return mediator.Errorf(mediator.CodeUserDenied, "no")
			}}).OpenFile("b.txt", experimentalsys.O_CREAT|experimentalsys.O_WRONLY, 0o600)
			return e
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if e := tc.change(); e != experimentalsys.EPERM {
				t.Fatalf("errno %v; want EPERM", e)
			}
			if b, n := w.Usage(); b != 0 || n != 1 {
				t.Fatalf("usage after a refused %s: %d bytes, %d files; want 0, 1", tc.name, b, n)
			}
		})
	}
	refuse = false
	if n, e := f.Write(make([]byte, 100)); e != 0 || n != 100 {
		t.Fatalf("a write up to the quota: %d, %v", n, e)
	}
	if err := w.WriteFile("b.txt", nil, false); err != nil {
		t.Fatalf("a file up to the quota: %v", err)
	}
	if _, e := f.Write([]byte("x")); e != experimentalsys.EFAULT {
		t.Fatalf("past the quota: %v", e)
	}
	if b, n := w.Usage(); b != 100 || n != 2 {
		t.Fatalf("usage %d bytes, %d files", b, n)
	}
	if strings.Count(strings.Join(asked, ","), "write") < 2 {
		t.Fatalf("the hook was asked %v", asked)
	}
	untouched(t, canary)
}
