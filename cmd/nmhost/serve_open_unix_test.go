//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestServeOpenKeepsTheTokenOutOfArgv: --open hands the desktop's opener
// (here a stand-in earlier on PATH that records its arguments) the path of
// an owner-only file that forwards to the URL; the token is in the file,
// never in a process's arguments, which every user can read. The file goes
// when serve stops.
func TestServeOpenKeepsTheTokenOutOfArgv(t *testing.T) {
	dir := t.TempDir()
	bin := t.TempDir()
	// The opener writes its arguments into a named pipe: reading it waits
	// for the opener to run, and ends when it has written them all.
	record := filepath.Join(t.TempDir(), "opener-argv")
	if err := syscall.Mkfifo(record, 0o600); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\nfor a in \"$0\" \"$@\"; do printf '%s\\n' \"$a\"; done > \"$OPENER_RECORD\"\n"
	for _, name := range []string{"xdg-open", "open"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sp := startServe(t, append(hostEnv(dir), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "OPENER_RECORD="+record), "--port", "0", "--open")
	cmd, stderr, m := sp.cmd, sp.stderr, sp.url
	link, token := m[0], m[2]

	recorded := make(chan []byte, 1)
	go func() {
		b, _ := os.ReadFile(record) // opening blocks until the opener opens it
		recorded <- b
	}()
	var argv []string
	select {
	case b := <-recorded:
		argv = strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	case <-time.After(10 * time.Second):
		// Unblock the reader before failing.
		if f, err := os.OpenFile(record, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		t.Fatalf("the opener never ran; stderr:\n%s", stderr.String())
	}
	if len(argv) != 2 || filepath.Base(argv[0]) != "xdg-open" && filepath.Base(argv[0]) != "open" {
		t.Fatalf("the opener ran as %q; want the opener and one path", argv)
	}
	for _, a := range argv {
		if strings.Contains(a, token) {
			t.Fatalf("the token is in the opener's arguments: %q", argv)
		}
	}
	launcher := argv[1]
	if filepath.Dir(launcher) != dir {
		t.Errorf("the launcher %s is not in the data dir %s", launcher, dir)
	}
	fi, err := os.Lstat(launcher)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Errorf("launcher mode %v; want a regular file, 0600", fi.Mode())
	}
	page, err := os.ReadFile(launcher)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), `content="0;url=`+link+`"`) || !strings.Contains(string(page), `location.replace("`+link+`")`) {
		t.Errorf("the launcher does not forward to %s:\n%s", link, page)
	}

	cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGINT: %v; stderr:\n%s", err, stderr.String())
	}
	if _, err := os.Lstat(launcher); !os.IsNotExist(err) {
		t.Errorf("the launcher outlived serve: %v", err)
	}
}
