package workspace

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/agentgate/nmhost/mediator"
)

// Limits bound one workspace. The zero value takes the defaults.
type Limits struct {
	// MaxBytes bounds the bytes of all its files. Default 64 MiB: room for
	// an agent's notes and downloads, not for filling the disk.
	MaxBytes int64
	// MaxFiles bounds its files and directories. Default 10,000.
	MaxFiles int64
}

// Default limits; docs/permissions.md ("Workspaces") states them.
const (
	DefaultMaxBytes = 64 << 20
	DefaultMaxFiles = 10_000
	// MaxNameLen bounds a name as an agent or the shell gives it.
	MaxNameLen = 1024
)

// Workspace is one session's directory. Every method takes a name
// relative to it ("notes/a.txt"; a leading "/" is refused, "." is the
// workspace itself) and resolves it through os.Root: "..", symbolic links
// that point out and a directory swapped for a link mid-operation all
// fail, and a file with a second hard link is refused, since the other
// name may be outside. Named pipes, sockets and devices are refused
// without waiting.
//
// What it holds is counted in its ledger (ledger.go), one per directory,
// shared by every Workspace value, handle and process that opens it:
// every change takes the ledger's lock, measures what it changes, checks
// the quotas before writing, and books what it did.
type Workspace struct {
	root   *os.Root
	limits Limits
	ledger ledger
	dir    string // as Open was given it, for a sandbox to bind (Program)
}

// Open opens (creating it, owner-only) the workspace at dir. It reads the
// ledger beside dir (dir + LedgerSuffix); it walks the directory only when
// there is no ledger to believe (see openLedger).
func Open(dir string, lim Limits) (*Workspace, error) {
	if lim.MaxBytes <= 0 {
		lim.MaxBytes = DefaultMaxBytes
	}
	if lim.MaxFiles <= 0 {
		lim.MaxFiles = DefaultMaxFiles
	}
	made := false
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("workspace %s: %w", dir, err)
		}
		made = true
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", dir, err)
	}
	w := &Workspace{root: root, limits: lim, dir: dir}
	if err := w.openLedger(dir, made); err != nil {
		w.Close()
		return nil, fmt.Errorf("workspace %s: %w", dir, err)
	}
	return w, nil
}

// Close releases the workspace's directory and its ledger.
func (w *Workspace) Close() error {
	l := &w.ledger
	l.mu.Lock()
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
	l.mu.Unlock()
	return w.root.Close()
}

// Usage is what the workspace holds now, as its ledger counts it: the
// bytes of its regular files and its entries of every kind (zero when the
// ledger cannot be read).
func (w *Workspace) Usage() (bytes, files int64) {
	u, _ := w.readUsage()
	return u.bytes, u.entries
}

// Clean checks a name an agent or the shell gave and returns it in the
// form os.Root takes: relative, slash-separated, cleaned. An absolute
// name, a NUL or another control character, a bidirectional control,
// invalid UTF-8 (badName), an over-long name or one that climbs out
// ("../x", "a/../../x") is path_not_allowed before anything is touched;
// os.Root checks again on every component as it opens.
func Clean(name string) (string, error) {
	switch {
	case name == "":
		return "", notAllowed(name, "an empty name")
	case len(name) > MaxNameLen:
		return "", notAllowed(name, fmt.Sprintf("longer than %d bytes", MaxNameLen))
	case strings.ContainsRune(name, 0):
		return "", notAllowed(name, "a NUL byte")
	case strings.HasPrefix(name, "/") || strings.Contains(name, `\`) || len(name) > 1 && name[1] == ':':
		return "", notAllowed(name, "an absolute name: names are relative to the workspace")
	}
	if why := badName(name); why != "" {
		return "", notAllowed(name, why)
	}
	c := path.Clean(name)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", notAllowed(name, "a name that leaves the workspace")
	}
	return c, nil
}

func notAllowed(name, why string) error {
	return mediator.Errorf(mediator.CodePathNotAllowed, "%q is %s", mediator.Truncate(name, 80), why)
}

// fail turns an os.Root error into the workspace's reason codes: an
// escape is path_not_allowed, a missing file not_found.
func fail(name string, err error) error {
	switch {
	case err == nil:
		return nil
	case mediator.CodeOf(err) != mediator.CodeInternal:
		return err // already the workspace's
	case errors.Is(err, fs.ErrNotExist):
		return mediator.Errorf(mediator.CodeNotFound, "%s: no such file or directory", mediator.Truncate(name, 80))
	case strings.Contains(err.Error(), "escapes") || strings.Contains(err.Error(), "path escapes"):
		return notAllowed(name, "a name that leaves the workspace (through '..' or a link)")
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return mediator.Errorf(mediator.CodeBadRequest, "%s: %v", mediator.Truncate(name, 80), pe.Err)
	}
	return err
}

// plain: a regular file or a directory, the only kinds of entry the
// workspace opens. A named pipe blocks its reader until a writer comes
// (past the run's deadline), a device reads or changes something outside
// the workspace, and a socket is a door to another process; none is
// anything an agent's files need, so each is path_not_allowed: the
// refusal is about what the name is, like a link out, not a malformed
// request.
func plain(fi fs.FileInfo) bool { return fi.Mode().IsRegular() || fi.IsDir() }

func notPlain(name string, fi fs.FileInfo) error {
	return notAllowed(name, fmt.Sprintf("a %s, not a regular file or a directory", kind(fi.Mode())))
}

func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "special file"
}

// openFile opens the cleaned name c with flag, refusing a named pipe,
// socket or device before opening it (Stat) and again after (fstat, for
// one swapped in between; the open itself does not wait: openNoWait), and
// a file with a second hard link.
func (w *Workspace) openFile(name, c string, flag int) (*os.File, error) {
	if fi, err := w.root.Stat(c); err == nil && !plain(fi) {
		return nil, notPlain(name, fi)
	}
	f, err := w.root.OpenFile(c, flag|openNoWait, 0o600)
	if err != nil {
		return nil, fail(name, err)
	}
	fi, err := f.Stat()
	if err == nil && !plain(fi) {
		err = notPlain(name, fi)
	} else if err == nil {
		if lerr := singleLink(f); lerr != nil {
			err = notAllowed(name, lerr.Error())
		}
	}
	if err != nil {
		f.Close()
		return nil, fail(name, err)
	}
	return f, nil
}

// Stat describes name, following links only inside the workspace.
func (w *Workspace) Stat(name string) (fs.FileInfo, error) {
	c, err := Clean(name)
	if err != nil {
		return nil, err
	}
	fi, err := w.root.Stat(c)
	return fi, fail(name, err)
}

// ReadDir lists a directory, sorted by name.
func (w *Workspace) ReadDir(name string) ([]fs.DirEntry, error) {
	c, err := Clean(name)
	if err != nil {
		return nil, err
	}
	ents, err := fs.ReadDir(w.root.FS(), c)
	return ents, fail(name, err)
}

// Open opens a file (or a directory) for reading.
func (w *Workspace) Open(name string) (*os.File, error) {
	c, err := Clean(name)
	if err != nil {
		return nil, err
	}
	return w.openFile(name, c, os.O_RDONLY)
}

// ReadFile reads a whole file, at most max bytes (0: the quota).
func (w *Workspace) ReadFile(name string, max int64) ([]byte, error) {
	f, err := w.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if max <= 0 {
		max = w.limits.MaxBytes
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fail(name, err)
	}
	if int64(len(b)) > max {
		return nil, mediator.Errorf(mediator.CodeTooLarge, "%s is larger than %d bytes", mediator.Truncate(name, 80), max)
	}
	return b, nil
}
