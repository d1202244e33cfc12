package workspace

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync"

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
// name may be outside.
type Workspace struct {
	root   *os.Root
	limits Limits

	mu    sync.Mutex // usage
	bytes int64
	files int64
}

// Open opens (creating it, owner-only) the workspace at dir and counts
// what it holds.
func Open(dir string, lim Limits) (*Workspace, error) {
	if lim.MaxBytes <= 0 {
		lim.MaxBytes = DefaultMaxBytes
	}
	if lim.MaxFiles <= 0 {
		lim.MaxFiles = DefaultMaxFiles
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("workspace %s: %w", dir, err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", dir, err)
	}
	w := &Workspace{root: root, limits: lim}
	err = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == "." {
			return err
		}
		w.files++
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				w.bytes += fi.Size()
			}
		}
		return nil
	})
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("workspace %s: %w", dir, err)
	}
	return w, nil
}

// Close releases the workspace's directory handle.
func (w *Workspace) Close() error { return w.root.Close() }

// Usage is what the workspace holds now.
func (w *Workspace) Usage() (bytes, files int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.bytes, w.files
}

// Clean checks a name an agent or the shell gave and returns it in the
// form os.Root takes: relative, slash-separated, cleaned. An absolute
// name, a NUL, an over-long name or one that climbs out ("../x",
// "a/../../x") is path_not_allowed before anything is touched; os.Root
// checks again on every component as it opens.
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

// Open opens a file for reading.
func (w *Workspace) Open(name string) (*os.File, error) {
	c, err := Clean(name)
	if err != nil {
		return nil, err
	}
	f, err := w.root.Open(c)
	if err != nil {
		return nil, fail(name, err)
	}
	if err := singleLink(f); err != nil {
		f.Close()
		return nil, notAllowed(name, err.Error())
	}
	return f, nil
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

// WriteFile writes data to name, replacing it or appending to it, within
// the quotas (quota_exceeded).
func (w *Workspace) WriteFile(name string, data []byte, appendTo bool) error {
	c, err := Clean(name)
	if err != nil {
		return err
	}
	if c == "." {
		return notAllowed(name, "the workspace itself, not a file")
	}
	var old int64
	exists := false
	fi, err := w.root.Stat(c)
	switch {
	case err == nil && !fi.Mode().IsRegular():
		return mediator.Errorf(mediator.CodeBadRequest, "%s is not a regular file", mediator.Truncate(name, 80))
	case err == nil:
		old, exists = fi.Size(), true
	case !errors.Is(err, fs.ErrNotExist):
		return fail(name, err)
	}
	grow := int64(len(data))
	if !appendTo {
		grow -= old
	}
	newFiles := int64(0)
	if !exists {
		newFiles = 1
	}
	if err := w.reserve(grow, newFiles); err != nil {
		return err
	}
	// Never O_TRUNC: the file is checked for a second hard link first,
	// and only then emptied, so a link to an outside file is refused
	// before a byte of it changes.
	flag := os.O_WRONLY | os.O_CREATE
	if appendTo {
		flag |= os.O_APPEND
	}
	f, err := w.root.OpenFile(c, flag, 0o600)
	if err != nil {
		w.reserve(-grow, -newFiles)
		return fail(name, err)
	}
	if err := singleLink(f); err != nil {
		f.Close()
		w.reserve(-grow, -newFiles)
		return notAllowed(name, err.Error())
	}
	if !appendTo {
		if err := f.Truncate(0); err != nil {
			f.Close()
			w.reserve(-grow, 0)
			return fail(name, err)
		}
	}
	_, err = f.Write(data)
	if err != nil {
		// Book what the file holds now, not what the write meant to
		// make of it.
		if fi, serr := f.Stat(); serr == nil {
			want := int64(len(data))
			if appendTo {
				want += old
			}
			w.reserve(fi.Size()-want, 0)
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return fail(name, err)
}

// reserve books bytes and files against the quotas, or refuses.
func (w *Workspace) reserve(bytes, files int64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if bytes > 0 && w.bytes+bytes > w.limits.MaxBytes {
		return mediator.Errorf(mediator.CodeQuotaExceeded, "the workspace would hold %d bytes; its quota is %d", w.bytes+bytes, w.limits.MaxBytes)
	}
	if files > 0 && w.files+files > w.limits.MaxFiles {
		return mediator.Errorf(mediator.CodeQuotaExceeded, "the workspace would hold %d files; its quota is %d", w.files+files, w.limits.MaxFiles)
	}
	w.bytes += bytes
	w.files += files
	return nil
}

// Mkdir makes a directory (and its parents with all).
func (w *Workspace) Mkdir(name string, all bool) error {
	c, err := Clean(name)
	if err != nil {
		return err
	}
	if err := w.reserve(0, 1); err != nil {
		return err
	}
	if all {
		err = w.root.MkdirAll(c, 0o700)
	} else {
		err = w.root.Mkdir(c, 0o700)
	}
	if err != nil {
		w.reserve(0, -1)
	}
	return fail(name, err)
}

// Remove removes a file or an empty directory (a whole tree with all).
func (w *Workspace) Remove(name string, all bool) error {
	c, err := Clean(name)
	if err != nil {
		return err
	}
	if c == "." {
		return notAllowed(name, "the workspace itself")
	}
	var bytes, files int64
	if all {
		fs.WalkDir(w.root.FS(), c, func(p string, d fs.DirEntry, err error) error {
			if err == nil {
				files++
				if fi, err := d.Info(); err == nil && d.Type().IsRegular() {
					bytes += fi.Size()
				}
			}
			return nil
		})
		err = w.root.RemoveAll(c)
	} else {
		if fi, serr := w.root.Lstat(c); serr == nil {
			files, bytes = 1, fi.Size()
			if !fi.Mode().IsRegular() {
				bytes = 0
			}
		}
		err = w.root.Remove(c)
	}
	if err == nil {
		w.reserve(-bytes, -files)
	}
	return fail(name, err)
}

// Rename moves a file or directory inside the workspace.
func (w *Workspace) Rename(from, to string) error {
	f, err := Clean(from)
	if err != nil {
		return err
	}
	t, err := Clean(to)
	if err != nil {
		return err
	}
	return fail(from, w.root.Rename(f, t))
}
