package workspace

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"

	"github.com/agentgate/nmhost/mediator"
)

const testQuota = 1 << 20 // 1 MiB: the attacks of issue 22, scaled down

// onDisk is what dir really holds: the bytes of its regular files and
// its entries, counted without the package.
func onDisk(t *testing.T, dir string) (bytes, entries int64) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		entries++
		if d.Type().IsRegular() {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			bytes += fi.Size()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return bytes, entries
}

// agrees checks the ledger against the disk, and the disk against the
// quota.
func agrees(t *testing.T, w *Workspace, dir string, maxBytes int64) {
	t.Helper()
	b, n := onDisk(t, dir)
	if b > maxBytes {
		t.Errorf("%d bytes on disk in a workspace of %d", b, maxBytes)
	}
	if ub, un := w.Usage(); ub != b || un != n {
		t.Errorf("the ledger says %d bytes, %d entries; the disk holds %d, %d", ub, un, b, n)
	}
}

// TestTwoHandlesOneFile (issue 22, finding 2): a file opened twice,
// truncated through one handle and rewritten through the other, is
// counted from its real size, so the workspace never holds more than its
// quota.
func TestTwoHandlesOneFile(t *testing.T) {
	w, dir, canary := setup(t, Limits{MaxBytes: testQuota})
	fsys := w.SysFS(false, Hooks{})
	full := make([]byte, testQuota)
	for i := range 4 {
		name := fmt.Sprintf("f%d", i)
		a, e := fsys.OpenFile(name, experimentalsys.O_CREAT|experimentalsys.O_RDWR, 0o600)
		if e != 0 {
			t.Fatalf("open: %v", e)
		}
		a.Pwrite(full, 0) // fills the quota while the workspace is empty
		b, e := fsys.OpenFile(name, experimentalsys.O_RDWR, 0o600)
		if e != 0 {
			t.Fatalf("second open: %v", e)
		}
		if e := a.Truncate(0); e != 0 {
			t.Fatalf("truncate: %v", e)
		}
		b.Pwrite(full, 0) // the old code booked nothing: b had seen the bytes
		a.Close()
		b.Close()
		agrees(t, w, dir, testQuota)
	}
	// Whatever the handles did, a new file cannot pass the quota either.
	if err := w.WriteFile("more", full, false); err == nil {
		agrees(t, w, dir, testQuota)
	}
	agrees(t, w, dir, testQuota)
	untouched(t, canary)
}

// fill writes chunk-sized new files named prefix-N until the quota
// refuses one, which it returns (nil: the quota never refused).
func fill(w *Workspace, prefix string, chunk int) error {
	data := make([]byte, chunk)
	for i := range 4 * testQuota / chunk {
		if err := w.WriteFile(fmt.Sprintf("%s-%d", prefix, i), data, false); err != nil {
			return err
		}
	}
	return nil
}

// TestConcurrentOpensShareOneQuota (issue 22, finding 3): twelve
// goroutines each open the workspace, as twelve shell calls would, and
// once all have opened it (the order the old per-value counter lost)
// each fills it; together they hold no more than one quota.
func TestConcurrentOpensShareOneQuota(t *testing.T) {
	_, dir, canary := setup(t, Limits{MaxBytes: testQuota})
	const n = 12
	var opened, wg sync.WaitGroup
	opened.Add(n)
	start := make(chan struct{})
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			w, err := Open(dir, Limits{MaxBytes: testQuota})
			opened.Done()
			if err != nil {
				errs[i] = err
				return
			}
			defer w.Close()
			<-start
			errs[i] = fill(w, fmt.Sprintf("g%d", i), 64<<10)
		})
	}
	opened.Wait()
	close(start)
	wg.Wait()
	for i, err := range errs {
		if mediator.CodeOf(err) != mediator.CodeQuotaExceeded {
			t.Errorf("writer %d ended with %v; want quota_exceeded", i, err)
		}
	}
	w, err := Open(dir, Limits{MaxBytes: testQuota})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	agrees(t, w, dir, testQuota)
	untouched(t, canary)
}

const helperEnv = "NMHOST_WORKSPACE_HELPER"

// TestSecondProcessSharesTheQuota: another process (this test binary
// again) and this one fill one workspace at once; together they hold no
// more than its quota. Both open it before either writes, the order the
// old per-process counter lost.
func TestSecondProcessSharesTheQuota(t *testing.T) {
	if dir := os.Getenv(helperEnv); dir != "" {
		helperProcess(dir)
		return
	}
	if !crossProcess {
		t.Skip("no file lock across processes on this platform")
	}
	w, dir, canary := setup(t, Limits{MaxBytes: testQuota})
	cmd := exec.Command(os.Args[0], "-test.run=^TestSecondProcessSharesTheQuota$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+dir)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := bufio.NewScanner(outPipe)
	if !scanFor(out, "ready") {
		t.Fatalf("the helper did not open the workspace: %v", cmd.Wait())
	}
	fmt.Fprintln(in, "go")
	ourErr := fill(w, "parent", 32<<10)
	theirs := "(nothing)"
	for out.Scan() {
		if s, ok := strings.CutPrefix(out.Text(), "code "); ok {
			theirs = s
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v", err)
	}
	if mediator.CodeOf(ourErr) != mediator.CodeQuotaExceeded || theirs != string(mediator.CodeQuotaExceeded) {
		t.Errorf("the writers ended with %v and %s; want quota_exceeded for both", ourErr, theirs)
	}
	agrees(t, w, dir, testQuota)
	untouched(t, canary)
}

func scanFor(s *bufio.Scanner, want string) bool {
	for s.Scan() {
		if s.Text() == want {
			return true
		}
	}
	return false
}

// helperProcess is the second process: it opens the workspace, says
// "ready", waits for "go", fills it, and says how the quota stopped it.
func helperProcess(dir string) {
	w, err := Open(dir, Limits{MaxBytes: testQuota})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Println("ready")
	bufio.NewScanner(os.Stdin).Scan()
	err = fill(w, "child", 32<<10)
	fmt.Println("code " + string(mediator.CodeOf(err)))
	w.Close()
	os.Exit(0)
}

// TestEntriesAreCountedExactly (issue 22, finding 4): mkdir -p books each
// directory it makes, and rm -r gives back exactly what it removed, so
// the count matches the disk and never goes below zero.
func TestEntriesAreCountedExactly(t *testing.T) {
	w, dir, canary := setup(t, Limits{MaxFiles: 10})
	steps := []struct {
		name string
		do   func() error
		code mediator.Code
	}{
		{"mkdir -p four", func() error { return w.Mkdir("a/b/c/d", true) }, ""},
		{"mkdir -p over the quota", func() error { return w.Mkdir("e/f/g/h/i/j/k", true) }, mediator.CodeQuotaExceeded},
		{"mkdir -p under an existing one", func() error { return w.Mkdir("a/b/x/y", true) }, ""},
		{"files", func() error {
			return errors.Join(w.WriteFile("a/b/c/d/f", []byte("12345"), false), w.WriteFile("top", []byte("xy"), false))
		}, ""},
		{"rm -r", func() error { return w.Remove("a", true) }, ""},
		{"rm -r again", func() error { return w.Remove("a", true) }, ""},
		{"mkdir -p after", func() error { return w.Mkdir("p/q", true) }, ""},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if err := st.do(); mediator.CodeOf(err) != st.code {
				t.Fatalf("%v; want %q", err, st.code)
			}
			agrees(t, w, dir, DefaultMaxBytes)
		})
	}
	if _, err := os.Lstat(filepath.Join(dir, "e")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused mkdir -p made something: %v", err)
	}
	// The quota still holds after all that: 3 entries now, 7 more fit.
	for i := range 7 {
		if err := w.WriteFile(strconv.Itoa(i), nil, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WriteFile("one-too-many", nil, false); mediator.CodeOf(err) != mediator.CodeQuotaExceeded {
		t.Fatalf("the 11th entry: %v", err)
	}
	untouched(t, canary)
}

// TestCountNeverNegative: entries put in the workspace behind its back
// and then removed by rm -r cannot take the count below zero (which would
// give an agent more than its quota afterwards).
func TestCountNeverNegative(t *testing.T) {
	w, dir, canary := setup(t, Limits{MaxFiles: 3})
	os.MkdirAll(filepath.Join(dir, "x", "y", "z"), 0o700)
	os.WriteFile(filepath.Join(dir, "x", "f"), []byte("abc"), 0o600)
	if err := w.Remove("x", true); err != nil {
		t.Fatal(err)
	}
	if b, n := w.Usage(); b != 0 || n != 0 {
		t.Fatalf("usage %d bytes, %d entries; want 0, 0", b, n)
	}
	for i := range 3 {
		w.WriteFile(strconv.Itoa(i), nil, false)
	}
	if err := w.WriteFile("3", nil, false); mediator.CodeOf(err) != mediator.CodeQuotaExceeded {
		t.Fatalf("the 4th entry: %v", err)
	}
	untouched(t, canary)
}

// TestOpenReadsTheLedger: opening a workspace believes its ledger and
// does not walk it (what is added behind its back is not counted); an old
// workspace with no ledger, one with a ledger left dirty by a crash, and
// one whose directory was made again are counted once, and a count that
// finds too much refuses the workspace.
func TestOpenReadsTheLedger(t *testing.T) {
	w, dir, canary := setup(t, Limits{})
	defer untouched(t, canary)
	w.WriteFile("a", []byte("abc"), false)
	os.WriteFile(filepath.Join(dir, "behind"), []byte("12345"), 0o600)
	reopen := func(t *testing.T, lim Limits) (int64, int64, error) {
		t.Helper()
		w2, err := Open(dir, lim)
		if err != nil {
			return 0, 0, err
		}
		defer w2.Close()
		b, n := w2.Usage()
		return b, n, nil
	}
	if b, n, err := reopen(t, Limits{}); err != nil || b != 3 || n != 1 {
		t.Fatalf("reopened: %d bytes, %d entries, %v; want the ledger's 3, 1", b, n, err)
	}
	ledger := dir + LedgerSuffix
	for _, tc := range []struct {
		name  string
		spoil func()
	}{
		{"no ledger", func() { os.Remove(ledger) }},
		{"torn", func() { os.WriteFile(ledger, []byte("nmhost-workspace-ledger v1 cl"), 0o600) }},
		{"dirty", func() {
			os.WriteFile(ledger, usage{bytes: 1, entries: 1}.record(stateDirty, w.ledger.id), 0o600)
		}},
		{"another directory", func() {
			os.WriteFile(ledger, usage{bytes: 1, entries: 1}.record(stateClean, w.ledger.id+1), 0o600)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.spoil()
			if b, n, err := reopen(t, Limits{}); err != nil || b != 8 || n != 2 {
				t.Fatalf("%d bytes, %d entries, %v; want 8, 2 counted", b, n, err)
			}
		})
	}
	t.Run("too many entries", func(t *testing.T) {
		os.Remove(ledger)
		if _, _, err := reopen(t, Limits{MaxFiles: 1}); mediator.CodeOf(err) != mediator.CodeQuotaExceeded {
			t.Fatalf("%v; want quota_exceeded", err)
		}
	})
	t.Run("too deep", func(t *testing.T) {
		os.Remove(ledger)
		os.MkdirAll(filepath.Join(dir, strings.Repeat("d/", MaxDepth+1)), 0o700)
		if _, _, err := reopen(t, Limits{}); mediator.CodeOf(err) != mediator.CodePathNotAllowed {
			t.Fatalf("%v; want path_not_allowed", err)
		}
	})
	// A crash mid-change (the ledger left dirty) is repaired by the next
	// change of an open workspace too.
	t.Run("dirty under an open workspace", func(t *testing.T) {
		os.RemoveAll(filepath.Join(dir, "d"))
		os.WriteFile(ledger, usage{bytes: 1 << 30, entries: 1}.record(stateDirty, w.ledger.id), 0o600)
		if err := w.WriteFile("c", []byte("x"), false); err != nil {
			t.Fatal(err)
		}
		agrees(t, w, dir, DefaultMaxBytes)
	})
}

// TestRenameOverBooksTheReplaced: a rename over an existing file gives
// back what it replaced; a rename onto the same name changes nothing. (Go
// refuses a rename over an existing directory.)
func TestRenameOverBooksTheReplaced(t *testing.T) {
	w, dir, canary := setup(t, Limits{MaxBytes: 100, MaxFiles: 4})
	w.WriteFile("a", make([]byte, 30), false)
	w.WriteFile("b", make([]byte, 60), false)
	w.Mkdir("d", false)
	w.Mkdir("e", false)
	for _, tc := range []struct {
		name, from, to string
	}{
		{"file over file", "a", "b"},
		{"onto itself", "b", "b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := w.Rename(tc.from, tc.to); err != nil {
				t.Fatal(err)
			}
			agrees(t, w, dir, 100)
		})
	}
	// What was given back is usable again, and no more.
	if err := w.WriteFile("c", make([]byte, 70), false); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile("f", make([]byte, 1), false); mediator.CodeOf(err) != mediator.CodeQuotaExceeded {
		t.Fatalf("past the quota: %v", err)
	}
	untouched(t, canary)
}
