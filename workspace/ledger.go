package workspace

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/agentgate/nmhost/mediator"
)

// MaxDepth bounds how deep an entry of a workspace may be: "a" is at
// depth 1, "a/b" at 2. Nothing deeper is created (mkdir, a new file, a
// rename, whose moved subtree counts too), and an old workspace deeper
// than this is refused when it is first counted. It keeps every walk of a
// workspace (rm -r, find, the first count) and every name os.Root
// resolves short; 64 is far beyond any honest layout.
const MaxDepth = 64

// LedgerSuffix names a workspace's ledger: the file <dir>.ledger, beside
// the directory, never inside it, where an agent could change it.
const LedgerSuffix = ".ledger"

// The ledger is one line of fixed length, rewritten in place:
//
//	nmhost-workspace-ledger v1 clean bytes=00000000000000000042 entries=...  dir=...
//
// "dirty" while a change is being made: a process that finds it so under
// the lock knows the one before it died mid-change and counts the
// workspace again. dir is the directory's inode (0 where unknown): a
// ledger beside a directory made again since is not believed.
const (
	ledgerMagic = "nmhost-workspace-ledger v1"
	stateClean  = "clean"
	stateDirty  = "dirty"
)

// usage is what a workspace holds: the bytes of its regular files and its
// entries (files, directories, links, anything else), the root not
// counted.
type usage struct{ bytes, entries int64 }

// ledger is a workspace's usage as every handle, Workspace value and host
// process shares it. The zero value (no file) keeps the usage in memory,
// for this value only.
type ledger struct {
	mu   sync.Mutex // the goroutines of this process, which share f and its lock
	f    *os.File
	path string
	id   uint64 // dirID of the workspace
	mem  usage  // without f
}

// lock opens the ledger if need be and takes its lock. A ledger file
// removed or replaced while it was open (by a person, or a crash between a
// removal and a new count) is not the one the other processes share: the
// lock is then taken again on the file the path names now.
func (l *ledger) lock() error {
	for {
		if l.f == nil {
			f, err := os.OpenFile(l.path, os.O_RDWR|os.O_CREATE, 0o600)
			if err != nil {
				return err
			}
			l.f = f
		}
		if err := lockFile(l.f); err != nil {
			return err
		}
		held, err1 := l.f.Stat()
		named, err2 := os.Stat(l.path)
		if err1 == nil && err2 == nil && os.SameFile(held, named) {
			return nil
		}
		unlockFile(l.f)
		l.f.Close()
		l.f = nil
		if err2 != nil && !errors.Is(err2, fs.ErrNotExist) {
			return err2
		}
	}
}

func (u usage) record(state string, id uint64) []byte {
	return fmt.Appendf(nil, "%s %s bytes=%020d entries=%020d dir=%020d\n", ledgerMagic, state, u.bytes, u.entries, id)
}

// read parses the ledger; ok is false when it is missing, torn, dirty or
// about another directory, and the workspace must be counted.
func (l *ledger) read() (u usage, ok bool) {
	buf := make([]byte, 160)
	n, err := l.f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return usage{}, false
	}
	line, _, found := strings.Cut(string(buf[:n]), "\n")
	rest, found2 := strings.CutPrefix(line, ledgerMagic+" "+stateClean+" ")
	if !found || !found2 {
		return usage{}, false
	}
	f := strings.Fields(rest)
	if len(f) != 3 {
		return usage{}, false
	}
	var v [3]uint64
	for i, key := range []string{"bytes=", "entries=", "dir="} {
		s, ok := strings.CutPrefix(f[i], key)
		if !ok {
			return usage{}, false
		}
		if v[i], err = strconv.ParseUint(s, 10, 63); err != nil {
			return usage{}, false
		}
	}
	if v[2] != l.id {
		return usage{}, false
	}
	return usage{bytes: int64(v[0]), entries: int64(v[1])}, true
}

func (l *ledger) write(state string, u usage) error {
	if _, err := l.f.WriteAt(u.record(state, l.id), 0); err != nil {
		return mediator.Errorf(mediator.CodeInternal, "workspace ledger: %v", err)
	}
	return nil
}

// openLedger opens (creating it) the ledger beside dir and makes sure it
// holds a count: kept as it is when it is clean and about this directory,
// otherwise counted once by a bounded walk (a directory Open has just
// made, an old workspace from before ledgers, a crash mid-change).
// Opening a workspace with a ledger never walks it.
func (w *Workspace) openLedger(dir string, made bool) error {
	fi, err := w.root.Stat(".")
	if err != nil {
		return err
	}
	l := &w.ledger
	l.id = dirID(fi)
	l.path = filepath.Clean(dir) + LedgerSuffix
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.lock(); err != nil {
		return err
	}
	defer unlockFile(l.f)
	if made {
		// A directory just made is counted, not assumed empty: a ledger
		// left beside a removed directory may carry a reused inode number,
		// and another process may already have written to it. The count
		// of a new directory costs next to nothing.
		u, err := w.count()
		if err != nil {
			return err
		}
		return l.write(stateClean, u)
	}
	_, err = w.current()
	return err
}

// locked runs fn with the workspace's usage under its lock, fn changing
// the usage by exactly what it changed on disk; the ledger then holds the
// new usage. The ledger is marked dirty while fn runs, so that a process
// dying in fn leaves a ledger the next one recounts rather than believes.
// The counts never go below zero.
func (w *Workspace) locked(fn func(u *usage) error) error {
	l := &w.ledger
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.path == "" {
		err := fn(&l.mem)
		l.mem.entries, l.mem.bytes = max(l.mem.entries, 0), max(l.mem.bytes, 0)
		return err
	}
	if err := l.lock(); err != nil {
		return mediator.Errorf(mediator.CodeInternal, "workspace ledger: %v", err)
	}
	defer unlockFile(l.f)
	u, err := w.current()
	if err != nil {
		return err
	}
	if err := l.write(stateDirty, u); err != nil {
		return err
	}
	err = fn(&u)
	u.entries, u.bytes = max(u.entries, 0), max(u.bytes, 0)
	if werr := l.write(stateClean, u); err == nil {
		err = werr
	}
	return err
}

// current is the usage the ledger holds, counted again (and written)
// when the ledger cannot be believed. The caller holds the lock.
func (w *Workspace) current() (usage, error) {
	l := &w.ledger
	if u, ok := l.read(); ok {
		return u, nil
	}
	u, err := w.count()
	if err != nil {
		return usage{}, err
	}
	return u, l.write(stateClean, u)
}

// readUsage is what the ledger holds now, read under its lock.
func (w *Workspace) readUsage() (usage, error) {
	l := &w.ledger
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.path == "" {
		return l.mem, nil
	}
	if err := l.lock(); err != nil {
		return usage{}, mediator.Errorf(mediator.CodeInternal, "workspace ledger: %v", err)
	}
	defer unlockFile(l.f)
	return w.current()
}

// fits refuses a change that would take the workspace past its quotas.
// Only growth is checked: shrinking is always allowed, even over a quota.
func (w *Workspace) fits(u *usage, bytes, entries int64) error {
	if bytes > 0 && u.bytes+bytes > w.limits.MaxBytes {
		return mediator.Errorf(mediator.CodeQuotaExceeded, "the workspace would hold %d bytes; its quota is %d", u.bytes+bytes, w.limits.MaxBytes)
	}
	if entries > 0 && u.entries+entries > w.limits.MaxFiles {
		return mediator.Errorf(mediator.CodeQuotaExceeded, "the workspace would hold %d files and directories; its quota is %d", u.entries+entries, w.limits.MaxFiles)
	}
	return nil
}

// count walks the whole workspace once, for a ledger that cannot be
// believed. The walk is bounded: it stops, and the workspace is refused,
// past MaxFiles entries or MaxDepth levels (a person trims such an old
// workspace by hand). Each directory is opened from its parent's handle,
// so the walk costs one step per entry however deep it goes. Bytes over
// the quota are counted as they are: the workspace opens, refuses to
// grow, and lets its files be removed.
func (w *Workspace) count() (usage, error) {
	var u usage
	err := w.walk(w.root, 0, func(depth int, fi fs.FileInfo) error {
		u.entries++
		if u.entries > w.limits.MaxFiles {
			return mediator.Errorf(mediator.CodeQuotaExceeded, "the workspace holds more than %d files and directories, its quota; remove some by hand", w.limits.MaxFiles)
		}
		if depth > MaxDepth {
			return mediator.Errorf(mediator.CodePathNotAllowed, "the workspace holds entries deeper than %d levels, the limit; remove them by hand", MaxDepth)
		}
		if fi.Mode().IsRegular() {
			u.bytes += fi.Size()
		}
		return nil
	})
	return u, err
}

// walk calls fn for every entry under dir (at depth+1 and below), not
// following links, and stops at fn's first error.
func (w *Workspace) walk(dir *os.Root, depth int, fn func(depth int, fi fs.FileInfo) error) error {
	d, err := dir.Open(".")
	if err != nil {
		return err
	}
	defer d.Close()
	for {
		ents, err := d.ReadDir(256)
		for _, e := range ents {
			fi, err := dir.Lstat(e.Name())
			if errors.Is(err, fs.ErrNotExist) {
				continue // removed meanwhile by someone outside the ledger
			} else if err != nil {
				return err
			}
			if err := fn(depth+1, fi); err != nil {
				return err
			}
			if fi.IsDir() {
				sub, err := dir.OpenRoot(e.Name())
				if err != nil {
					return err
				}
				err = w.walk(sub, depth+1, fn)
				sub.Close()
				if err != nil {
					return err
				}
			}
		}
		if errors.Is(err, io.EOF) || len(ents) == 0 {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// depth is how many levels deep a cleaned name is ("." is 0).
func depth(c string) int {
	if c == "." {
		return 0
	}
	return strings.Count(c, "/") + 1
}

// tooDeep refuses a name deeper than MaxDepth.
func tooDeep(name string, d int) error {
	if d <= MaxDepth {
		return nil
	}
	return notAllowed(name, fmt.Sprintf("%d levels deep; a workspace holds nothing deeper than %d", d, MaxDepth))
}
