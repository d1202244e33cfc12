package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ownTop are the top-level directories the sandbox makes anew rather than
// binding the host's: its own /proc (of its PID namespace), a minimal
// /dev, and a /tmp and /run of its own in memory. The host's /tmp and
// /run hold other programs' Unix sockets (the session bus, the SSH and
// GnuPG agents, a container engine's), which a read-only mount does not
// close: connect(2) on a socket needs no write to the file system.
var ownTop = []string{"proc", "dev", "tmp", "run", "lost+found", strings.TrimPrefix(WorkspacePath, "/")}

// mounts are bwrap's arguments for the file system: every other
// top-level entry of the host's / read-only (a symbolic link as a link),
// the sandbox's own /proc, /dev, /tmp and /run, the hidden paths covered
// (a directory by an empty tmpfs, a file by /dev/null), the workspace
// read-write at /workspace, the init program and the proxy's socket
// directory (b.net, or none), then / remounted read-only.
// canReach says whether the sandbox's user could reach a host path at
// all: one it cannot is invisible already, and bwrap could not mount
// over it.
func mounts(l Limits, hidden []string, canReach func(string) bool, b binds) ([]string, error) {
	ents, err := os.ReadDir("/")
	if err != nil {
		return nil, err
	}
	var a []string
	for _, e := range ents {
		n := e.Name()
		if slices.Contains(ownTop, n) {
			continue
		}
		p := "/" + n
		if e.Type()&os.ModeSymlink != 0 {
			t, err := os.Readlink(p)
			if err != nil {
				return nil, err
			}
			a = append(a, "--symlink", t, p)
			continue
		}
		a = append(a, "--ro-bind", p, p)
	}
	a = append(a, "--proc", "/proc", "--dev", "/dev",
		"--perms", "1777", "--size", strconv.FormatInt(l.Tmp, 10), "--tmpfs", "/tmp",
		"--tmpfs", "/run")
	for _, h := range hidden {
		// A link is hidden where it leads: bwrap mounts over the target.
		if t, err := filepath.EvalSymlinks(h); err == nil {
			h = t
		}
		if underOwn(h) || !canReach(h) {
			continue
		}
		fi, err := os.Stat(h)
		if err != nil {
			continue // nothing there to hide, and / is read-only: nothing can appear
		}
		if fi.IsDir() {
			a = append(a, "--perms", "0000", "--tmpfs", h)
		} else {
			a = append(a, "--ro-bind", "/dev/null", h)
		}
	}
	a = append(a, "--bind", b.ws, WorkspacePath, "--ro-bind", b.init, initPath)
	if b.net != "" {
		a = append(a, "--ro-bind", b.net, netDir)
	}
	return append(a, "--remount-ro", "/"), nil
}

// binds are the host paths bwrap binds in: the workspace, the host's
// own executable (the init) and the proxy's socket directory ("" for
// none).
type binds struct{ ws, init, net string }

// underOwn reports whether a host path is under a directory the sandbox
// makes anew, where the host's file is not visible anyway.
func underOwn(p string) bool {
	first, _, _ := strings.Cut(strings.TrimPrefix(p, "/"), "/")
	return slices.Contains(ownTop, first)
}

// reachableBy returns whether uid/gid could walk to a path: every
// directory above it searchable by them. As the host's own user the
// answer is always yes.
func reachableBy(uid, gid int) func(string) bool {
	if uid == os.Getuid() {
		return func(string) bool { return true }
	}
	return func(p string) bool {
		for d := filepath.Dir(p); ; d = filepath.Dir(d) {
			var st unix.Stat_t
			if err := unix.Stat(d, &st); err != nil {
				return false
			}
			m := st.Mode
			ok := m&0o001 != 0 || int(st.Uid) == uid && m&0o100 != 0 || int(st.Gid) == gid && m&0o010 != 0
			if !ok {
				return false
			}
			if d == "/" {
				return true
			}
		}
	}
}
