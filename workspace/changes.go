package workspace

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/agentgate/nmhost/mediator"
)

// The changes an agent or the shell makes to a workspace. Each runs under
// the ledger's lock (locked): it measures what it changes from the disk,
// checks the quotas before a byte or an entry is added, makes the change
// and books what it did, so that neither two handles on one file nor two
// processes on one workspace can count past the quota.

// WriteFile writes data to name, replacing it or appending to it, within
// the quotas (quota_exceeded: nothing is changed).
func (w *Workspace) WriteFile(name string, data []byte, appendTo bool) error {
	c, err := Clean(name)
	if err != nil {
		return err
	}
	if c == "." {
		return notAllowed(name, "the workspace itself, not a file")
	}
	if err := tooDeep(name, depth(c)); err != nil {
		return err
	}
	return w.locked(func(u *usage) error {
		var old int64
		exists := false
		fi, err := w.root.Stat(c)
		switch {
		case err == nil && !plain(fi):
			return notPlain(name, fi)
		case err == nil && !fi.Mode().IsRegular():
			return mediator.Errorf(mediator.CodeBadRequest, "%s is not a regular file", mediator.Truncate(name, 80))
		case err == nil:
			old, exists = fi.Size(), true
		case !errors.Is(err, fs.ErrNotExist):
			return fail(name, err)
		}
		want := int64(len(data))
		if appendTo {
			want += old
		}
		created := int64(0)
		if !exists {
			created = 1
		}
		if err := w.fits(u, want-old, created); err != nil {
			return err
		}
		// Never O_TRUNC: the file is checked for a second hard link first,
		// and only then emptied, so a link to an outside file is refused
		// before a byte of it changes.
		flag := os.O_WRONLY | os.O_CREATE
		if appendTo {
			flag |= os.O_APPEND
		}
		f, err := w.openFile(name, c, flag)
		if err != nil {
			return err
		}
		defer f.Close()
		u.entries += created
		// The size the open file really has, whatever the Stat above saw.
		if fi, err := f.Stat(); err == nil && fi.Size() != old {
			old, want = fi.Size(), int64(len(data))
			if appendTo {
				want += old
			}
			if err := w.fits(u, want-old, 0); err != nil {
				return err
			}
		}
		if !appendTo {
			err = f.Truncate(0)
		}
		if err == nil {
			_, err = f.Write(data)
		}
		// Book what the file holds now, not what the write meant to make
		// of it.
		if fi, serr := f.Stat(); serr == nil {
			u.bytes += fi.Size() - old
		} else {
			u.bytes += want - old
		}
		return fail(name, err)
	})
}

// Mkdir makes a directory (and its parents with all), each counted as an
// entry, none deeper than MaxDepth.
func (w *Workspace) Mkdir(name string, all bool) error {
	c, err := Clean(name)
	if err != nil {
		return err
	}
	if err := tooDeep(name, depth(c)); err != nil {
		return err
	}
	return w.locked(func(u *usage) error {
		if !all {
			// A name already there fails as it is, not on the quota.
			if _, err := w.root.Lstat(c); err != nil {
				if err := w.fits(u, 0, 1); err != nil {
					return err
				}
			}
			if err := w.root.Mkdir(c, 0o700); err != nil {
				return fail(name, err)
			}
			u.entries++
			return nil
		}
		if c == "." {
			return nil
		}
		// The first missing component and everything after it are made,
		// one at a time, each booked as it is made.
		parts := strings.Split(c, "/")
		for i := range parts {
			p := strings.Join(parts[:i+1], "/")
			fi, err := w.root.Stat(p)
			if err == nil {
				if !fi.IsDir() {
					return mediator.Errorf(mediator.CodeBadRequest, "%s is not a directory", mediator.Truncate(p, 80))
				}
				continue
			}
			if !errors.Is(err, fs.ErrNotExist) {
				return fail(name, err)
			}
			if err := w.fits(u, 0, int64(len(parts)-i)); err != nil {
				return err
			}
			for j := i; j < len(parts); j++ {
				if err := w.root.Mkdir(strings.Join(parts[:j+1], "/"), 0o700); err != nil {
					return fail(name, err)
				}
				u.entries++
			}
			return nil
		}
		return nil
	})
}

// Remove removes a file or an empty directory (a whole tree with all),
// giving back exactly the entries and bytes it removed.
func (w *Workspace) Remove(name string, all bool) error {
	c, err := Clean(name)
	if err != nil {
		return err
	}
	if c == "." {
		return notAllowed(name, "the workspace itself")
	}
	return w.locked(func(u *usage) error {
		if all {
			return w.removeTree(name, c, u)
		}
		fi, err := w.root.Lstat(c)
		if err != nil {
			return fail(name, err)
		}
		if err := w.root.Remove(c); err != nil {
			return fail(name, err)
		}
		u.book(fi, -1)
		return nil
	})
}

// book adds (sign 1) or takes away (sign -1) one entry as fi describes it.
func (u *usage) book(fi fs.FileInfo, sign int64) {
	u.entries += sign
	if fi.Mode().IsRegular() {
		u.bytes += sign * fi.Size()
	}
}

// removeTree removes c and everything under it, children first, booking
// each entry as it goes; a name already gone is not an error (rm -r).
func (w *Workspace) removeTree(name, c string, u *usage) error {
	fi, err := w.root.Lstat(c)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return fail(name, err)
	}
	if fi.IsDir() {
		ents, err := fs.ReadDir(w.root.FS(), c)
		if err != nil {
			return fail(name, err)
		}
		for _, e := range ents {
			if err := w.removeTree(name, path.Join(c, e.Name()), u); err != nil {
				return err
			}
		}
	}
	if err := w.root.Remove(c); err != nil {
		return fail(name, err)
	}
	u.book(fi, -1)
	return nil
}

// Rename moves a file or directory inside the workspace. Nothing may end
// deeper than MaxDepth: a directory's deepest entry is measured by
// walking it (bounded by MaxDepth itself). An entry the move replaces is
// given back.
func (w *Workspace) Rename(from, to string) error {
	f, err := Clean(from)
	if err != nil {
		return err
	}
	t, err := Clean(to)
	if err != nil {
		return err
	}
	if f == "." || t == "." {
		return notAllowed(from+" -> "+to, "a move of the workspace itself")
	}
	if err := tooDeep(to, depth(t)); err != nil {
		return err
	}
	return w.locked(func(u *usage) error {
		ffi, err := w.root.Lstat(f)
		if err != nil {
			return fail(from, err)
		}
		if ffi.IsDir() {
			below, err := w.subtreeDepth(f, MaxDepth-depth(t))
			if err != nil {
				return fail(from, err)
			}
			if err := tooDeep(to, depth(t)+below); err != nil {
				return err
			}
		}
		tfi, terr := w.root.Lstat(t)
		if err := w.root.Rename(f, t); err != nil {
			return fail(from, err)
		}
		if terr == nil && !os.SameFile(ffi, tfi) {
			u.book(tfi, -1)
		}
		return nil
	})
}

var errDeeper = errors.New("deeper than the limit")

// subtreeDepth is how many levels the directory c holds below it, or, once
// that passes limit, limit+1 (the walk stops there).
func (w *Workspace) subtreeDepth(c string, limit int) (int, error) {
	sub, err := w.root.OpenRoot(c)
	if err != nil {
		return 0, err
	}
	defer sub.Close()
	deepest := 0
	err = w.walk(sub, 0, func(d int, _ fs.FileInfo) error {
		deepest = max(deepest, d)
		if deepest > limit {
			return errDeeper
		}
		return nil
	})
	if errors.Is(err, errDeeper) {
		err = nil
	}
	return deepest, err
}
