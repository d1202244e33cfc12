//go:build unix

package workspace

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"

	"github.com/agentgate/nmhost/mediator"
)

// returnsAtOnce runs do and fails the test if it has not returned within
// the deadline: a named pipe's open waits for a writer that never comes.
// On failure it opens the pipe's other end so the stuck call can end.
func returnsAtOnce(t *testing.T, fifo string, do func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- do() }()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		for _, flag := range []int{os.O_WRONLY, os.O_RDONLY} {
			if f, err := os.OpenFile(fifo, flag|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
		}
		t.Fatalf("the call still waits after 5s")
		return nil
	}
}

func sysErr(e experimentalsys.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

// TestSpecialFilesRefusedAtOnce (issue 22, finding 12): a named pipe, a
// socket and (when this process may make one) a device inside the
// workspace are refused as path_not_allowed by every path that opens a
// name, and no call waits.
func TestSpecialFilesRefusedAtOnce(t *testing.T) {
	w, dir, canary := setup(t, Limits{})
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	names := []string{"pipe"}
	if l, err := net.Listen("unix", filepath.Join(dir, "sock")); err == nil {
		defer l.Close()
		names = append(names, "sock")
	}
	if err := syscall.Mknod(filepath.Join(dir, "null"), syscall.S_IFCHR|0o600, 1<<8|3); err == nil {
		names = append(names, "null")
	}
	fsys := w.SysFS(false, Hooks{})
	for _, name := range names {
		for _, tc := range []struct {
			path string
			do   func() error
		}{
			{"Workspace.Open", func() error { f, err := w.Open(name); closeIf(f); return err }},
			{"ReadFile", func() error { _, err := w.ReadFile(name, 0); return err }},
			{"WriteFile", func() error { return w.WriteFile(name, []byte("x"), false) }},
			{"WriteFile append", func() error { return w.WriteFile(name, []byte("x"), true) }},
			{"sysFS read", func() error {
				_, e := fsys.OpenFile(name, experimentalsys.O_RDONLY, 0)
				return sysErr(e)
			}},
			{"sysFS write", func() error {
				_, e := fsys.OpenFile(name, experimentalsys.O_WRONLY, 0)
				return sysErr(e)
			}},
			{"sysFS create", func() error {
				_, e := fsys.OpenFile(name, experimentalsys.O_CREAT|experimentalsys.O_RDWR, 0o600)
				return sysErr(e)
			}},
		} {
			t.Run(name+"/"+tc.path, func(t *testing.T) {
				err := returnsAtOnce(t, fifo, tc.do)
				if e, ok := err.(experimentalsys.Errno); ok {
					if e != experimentalsys.EPERM {
						t.Fatalf("errno %v; want EPERM", e)
					}
				} else if mediator.CodeOf(err) != mediator.CodePathNotAllowed {
					t.Fatalf("%v; want path_not_allowed", err)
				}
			})
		}
	}
	untouched(t, canary)
}

func closeIf(f *os.File) {
	if f != nil {
		f.Close()
	}
}

// TestPipeSwappedInIsRefused: a name that is a regular file when it is
// checked and a named pipe when it is opened is refused after the open
// (fstat), and the open does not wait. One goroutine keeps swapping the
// two; the readers must each return, with the file or a refusal.
func TestPipeSwappedInIsRefused(t *testing.T) {
	w, dir, canary := setup(t, Limits{})
	name := filepath.Join(dir, "s")
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		for !stop.Load() {
			os.Remove(name)
			syscall.Mkfifo(name, 0o600)
			os.Remove(name)
			os.WriteFile(name, []byte("file"), 0o600)
		}
	})
	var refused, read atomic.Int64
	bad := make(chan error, 1)
	err := returnsAtOnce(t, name, func() error {
		var rg sync.WaitGroup
		for range 2 {
			rg.Go(func() {
				for range 2000 {
					b, err := w.ReadFile("s", 0)
					switch code := mediator.CodeOf(err); {
					case err == nil && (string(b) == "file" || len(b) == 0):
						read.Add(1)
					case code == mediator.CodePathNotAllowed:
						refused.Add(1)
					case code == mediator.CodeNotFound:
					default:
						select {
						case bad <- fmt.Errorf("%q, %v", b, err):
						default:
						}
					}
				}
			})
		}
		rg.Wait()
		return nil
	})
	stop.Store(true)
	wg.Wait()
	select {
	case e := <-bad:
		t.Fatalf("a read returned %v", e)
	default:
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d reads, %d refusals", read.Load(), refused.Load())
	untouched(t, canary)
}

// TestRefusedHook: the WASI file system calls Hooks.Refused with the
// reason code for every refusal it makes to a guest, and not for an
// ordinary failure or for a change the policy refused (the policy records
// those itself).
func TestRefusedHook(t *testing.T) {
	w, dir, canary := setup(t, Limits{MaxBytes: 10, MaxFiles: 8})
	os.Symlink(canary, filepath.Join(dir, "link-out"))
	os.Link(canary, filepath.Join(dir, "hard-link"))
	syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o600)
	w.Mkdir("d", false)
	w.WriteFile("d/f", []byte("12345"), false)
	type call struct {
		op   string
		code mediator.Code
	}
	var calls []call
	hooks := Hooks{Refused: func(op, name string, err error) { calls = append(calls, call{op, mediator.CodeOf(err)}) }}
	rw := w.SysFS(false, hooks)
	ro := w.SysFS(true, hooks)
	policy := w.SysFS(false, Hooks{Refused: hooks.Refused, Change: func(string, string, int64, func() error) error {
		return mediator.Errorf(mediator.CodeUserDenied, "no")
	}})
	open := func(fsys experimentalsys.FS, name string, flag experimentalsys.Oflag) func() experimentalsys.Errno {
		return func() experimentalsys.Errno {
			f, e := fsys.OpenFile(name, flag, 0o600)
			if f != nil {
				f.Close()
			}
			return e
		}
	}
	write := func(n int) func() experimentalsys.Errno {
		return func() experimentalsys.Errno {
			f, e := rw.OpenFile("d/f", experimentalsys.O_WRONLY|experimentalsys.O_APPEND, 0)
			if e != 0 {
				return e
			}
			defer f.Close()
			_, e = f.Write(make([]byte, n))
			return e
		}
	}
	deep := strings.Repeat("x/", MaxDepth) + "x"
	for _, tc := range []struct {
		name  string
		do    func() experimentalsys.Errno
		errno experimentalsys.Errno
		code  mediator.Code // "" : the hook must not be called
	}{
		{"climbs out", open(rw, "../x", experimentalsys.O_RDONLY), experimentalsys.EPERM, mediator.CodePathNotAllowed},
		{"absolute", open(rw, "/etc/passwd", experimentalsys.O_RDONLY), experimentalsys.EPERM, mediator.CodePathNotAllowed},
		{"link out", open(rw, "link-out", experimentalsys.O_RDONLY), experimentalsys.EPERM, mediator.CodePathNotAllowed},
		{"hard link", open(rw, "hard-link", experimentalsys.O_RDONLY), experimentalsys.EPERM, mediator.CodePathNotAllowed},
		{"stat out", func() experimentalsys.Errno { _, e := rw.Stat("../outside"); return e }, experimentalsys.EPERM, mediator.CodePathNotAllowed},
		{"lstat out", func() experimentalsys.Errno { _, e := rw.Lstat("../outside"); return e }, experimentalsys.EPERM, mediator.CodePathNotAllowed},
		{"bad name", func() experimentalsys.Errno { return rw.Mkdir("a\x1b[2J", 0o700) }, experimentalsys.EPERM, mediator.CodePathNotAllowed},
		{"bidi name", open(rw, "a\u202eb", experimentalsys.O_CREAT|experimentalsys.O_WRONLY), experimentalsys.EPERM, mediator.CodePathNotAllowed},
		{"named pipe", noWait(filepath.Join(dir, "pipe"), open(rw, "pipe", experimentalsys.O_RDONLY)), experimentalsys.EPERM, mediator.CodePathNotAllowed},
		{"too deep mkdir", func() experimentalsys.Errno { return rw.Mkdir(deep, 0o700) }, experimentalsys.EPERM, mediator.CodePathNotAllowed},
		{"too deep create", open(rw, deep, experimentalsys.O_CREAT|experimentalsys.O_WRONLY), experimentalsys.EPERM, mediator.CodePathNotAllowed},
		{"too deep rename", func() experimentalsys.Errno { return rw.Rename("d", deep) }, experimentalsys.EPERM, mediator.CodePathNotAllowed},
		{"bytes quota", write(6), experimentalsys.EFAULT, mediator.CodeQuotaExceeded},
		{"entries quota", func() experimentalsys.Errno {
			for i := range 8 {
				if e := rw.Mkdir(fmt.Sprint("q", i), 0o700); e != 0 {
					return e
				}
			}
			return 0
		}, experimentalsys.EFAULT, mediator.CodeQuotaExceeded},
		{"read-only write", open(ro, "d/f", experimentalsys.O_WRONLY), experimentalsys.EROFS, mediator.CodePermissionOutsideSet},
		{"read-only create", open(ro, "new", experimentalsys.O_CREAT|experimentalsys.O_WRONLY), experimentalsys.EROFS, mediator.CodePermissionOutsideSet},
		{"read-only mkdir", func() experimentalsys.Errno { return ro.Mkdir("new", 0o700) }, experimentalsys.EROFS, mediator.CodePermissionOutsideSet},
		{"read-only unlink", func() experimentalsys.Errno { return ro.Unlink("d/f") }, experimentalsys.EROFS, mediator.CodePermissionOutsideSet},
		{"read-only rename", func() experimentalsys.Errno { return ro.Rename("d/f", "g") }, experimentalsys.EROFS, mediator.CodePermissionOutsideSet},
		{"not found", open(rw, "missing", experimentalsys.O_RDONLY), experimentalsys.ENOENT, ""},
		{"stat not found", func() experimentalsys.Errno { _, e := rw.Stat("missing"); return e }, experimentalsys.ENOENT, ""},
		{"read-only read", open(ro, "d/f", experimentalsys.O_RDONLY), 0, ""},
		{"write within quota", write(1), 0, ""},
		{"mkdir exists", func() experimentalsys.Errno { return rw.Mkdir("d", 0o700) }, 0, ""},
		{"rmdir not empty", func() experimentalsys.Errno { return rw.Rmdir("d") }, 0, ""},
		{"policy refuses", func() experimentalsys.Errno { return policy.Mkdir("p", 0o700) }, experimentalsys.EPERM, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls = nil
			e := tc.do()
			ordinary := strings.Contains(tc.name, "exists") || strings.Contains(tc.name, "not empty")
			if ordinary && e == 0 || !ordinary && e != tc.errno {
				t.Errorf("errno %v; want %v", e, tc.errno)
			}
			switch {
			case tc.code == "" && len(calls) != 0:
				t.Errorf("the hook was called: %v", calls)
			case tc.code != "" && (len(calls) != 1 || calls[0].code != tc.code):
				t.Errorf("the hook was called %v; want once with %s", calls, tc.code)
			}
		})
	}
	untouched(t, canary)
}

// noWait runs do with a deadline, answering EAGAIN (which no case wants)
// when it still waits then, after opening the pipe's other end so that it
// ends.
func noWait(fifo string, do func() experimentalsys.Errno) func() experimentalsys.Errno {
	return func() experimentalsys.Errno {
		done := make(chan experimentalsys.Errno, 1)
		go func() { done <- do() }()
		select {
		case e := <-done:
			return e
		case <-time.After(5 * time.Second):
			if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
			<-done
			return experimentalsys.EAGAIN
		}
	}
}
