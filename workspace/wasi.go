package workspace

import (
	"errors"
	"io"
	"io/fs"
	"os"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/sys"

	"github.com/agentgate/nmhost/mediator"
)

// Hooks let the caller decide and record every change a guest makes to
// the workspace, and see every refusal. The zero value runs every change
// and records nothing.
type Hooks struct {
	// Change is called with what is about to happen (op is "create",
	// "write", "truncate", "mkdir", "rmdir", "unlink" or "rename"; n the
	// bytes written, or the new size) and do, which makes the change: it
	// must call do only if the change is allowed, and return do's error.
	// The quotas are checked inside do, under the workspace's lock.
	Change func(op, name string, n int64, do func() error) error
	// Refused is called for every refusal the file system itself makes
	// to a guest: a name that climbs out ("../x", "/etc/x", a link out),
	// a bad name (controls, invalid UTF-8), a file with a second hard
	// link, a named pipe, socket or device, a name deeper than MaxDepth
	// (path_not_allowed); a change past a quota (quota_exceeded); a change
	// under a read-only mount (permission_outside_set: the agent's
	// permission set gives read access only). mediator.CodeOf(err) is the
	// reason. It is not called for an ordinary failure (not found, exists,
	// not empty), nor for a change Change refused, which the caller has
	// recorded already.
	Refused func(op, name string, err error)
	// Read is called before a name is opened for reading only (a file
	// or a directory to list), with the cleaned name: it decides and
	// records the read, and a non-nil error refuses it (the guest sees
	// EPERM; the caller has recorded the refusal). nil reads freely.
	Read func(name string) error
}

// SysFS is the workspace as a WASI file system for wazero: every name
// resolved through os.Root (so "..", absolute names and links out fail),
// within the quotas, and read-only when readOnly is set. wazero's own
// directory mounts resolve names with plain joins; this is what a guest
// gets instead.
func (w *Workspace) SysFS(readOnly bool, h Hooks) experimentalsys.FS {
	return &sysFS{w: w, readOnly: readOnly, hooks: h}
}

type sysFS struct {
	experimentalsys.UnimplementedFS
	w        *Workspace
	readOnly bool
	hooks    Hooks
}

// errno maps the workspace's errors to WASI's.
func errno(err error) experimentalsys.Errno {
	if err == nil {
		return 0
	}
	switch mediator.CodeOf(err) {
	case mediator.CodePathNotAllowed, mediator.CodeSessionLevel, mediator.CodeUserDenied, mediator.CodeBlockedByUser:
		return experimentalsys.EPERM
	case mediator.CodePermissionOutsideSet:
		return experimentalsys.EROFS
	case mediator.CodeNotFound:
		return experimentalsys.ENOENT
	case mediator.CodeQuotaExceeded, mediator.CodeTooLarge:
		return experimentalsys.EFAULT // WASI has no ENOSPC in this set; the guest sees an I/O failure
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return experimentalsys.UnwrapOSError(pe.Err)
	}
	if e := experimentalsys.UnwrapOSError(err); e != 0 {
		return e
	}
	return experimentalsys.EIO
}

// refused reports err to the Refused hook when it is a refusal, and turns
// it into the guest's errno.
func (s *sysFS) refused(op, name string, err error) experimentalsys.Errno {
	switch mediator.CodeOf(err) {
	case mediator.CodePathNotAllowed, mediator.CodeQuotaExceeded, mediator.CodePermissionOutsideSet:
		if s.hooks.Refused != nil {
			s.hooks.Refused(op, name, err)
		}
	}
	return errno(err)
}

// readOnly is the refusal of a change under a read-only mount.
func readOnly(name string) error {
	return mediator.Errorf(mediator.CodePermissionOutsideSet, "%s: the workspace is read-only for this agent (its permission set gives read access)", mediator.Truncate(name, 80))
}

// check cleans a name a guest gave, and for a change also bounds its
// depth, before anything (the policy included) is asked about it.
func (s *sysFS) check(op, name string, change bool) (string, experimentalsys.Errno) {
	c, err := Clean(name)
	if err == nil && change {
		err = tooDeep(name, depth(c))
	}
	if err != nil {
		return "", s.refused(op, name, err)
	}
	return c, 0
}

// change runs do as the change op on name, through the hook.
func (s *sysFS) change(op, name string, n int64, do func() error) experimentalsys.Errno {
	if s.readOnly {
		return s.refused(op, name, readOnly(name))
	}
	var ran bool
	run := func() error { ran = true; return do() }
	var err error
	if s.hooks.Change != nil {
		err = s.hooks.Change(op, name, n, run)
	} else {
		err = run()
	}
	if err != nil && !ran {
		return experimentalsys.EPERM // refused by the policy, which recorded it: nothing changed
	}
	return s.refused(op, name, err)
}

func (s *sysFS) OpenFile(name string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	c, e := s.check("open", name, false)
	if e != 0 {
		return nil, e
	}
	writes := flag&(experimentalsys.O_WRONLY|experimentalsys.O_RDWR|experimentalsys.O_CREAT|experimentalsys.O_TRUNC|experimentalsys.O_APPEND) != 0
	if writes && s.readOnly {
		return nil, s.refused("open", name, readOnly(name))
	}
	osFlag := os.O_RDONLY
	switch {
	case flag&experimentalsys.O_RDWR != 0:
		osFlag = os.O_RDWR
	case flag&experimentalsys.O_WRONLY != 0:
		osFlag = os.O_WRONLY
	}
	if flag&experimentalsys.O_APPEND != 0 {
		osFlag |= os.O_APPEND
	}
	var f *os.File
	if flag&experimentalsys.O_CREAT != 0 {
		_, err := s.w.root.Stat(c)
		switch {
		case err == nil && flag&experimentalsys.O_EXCL != 0:
			return nil, experimentalsys.EEXIST
		case errors.Is(err, fs.ErrNotExist):
			if _, e := s.check("create", name, true); e != 0 {
				return nil, e
			}
			// A new file is a change; opening one is not.
			if e := s.change("create", c, 0, func() error { return s.create(name, c, osFlag, flag&experimentalsys.O_EXCL != 0, &f) }); e != 0 {
				return nil, e
			}
		}
	}
	if f == nil {
		// The workspace's own root is opened by the runtime itself (the
		// preopen every guest gets), not by a read the guest asked for.
		if !writes && s.hooks.Read != nil && c != "." {
			if err := s.hooks.Read(c); err != nil {
				return nil, experimentalsys.EPERM // refused by the policy, which recorded it
			}
		}
		var err error
		if f, err = s.w.openFile(name, c, osFlag); err != nil {
			return nil, s.refused("open", name, err)
		}
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, errno(err)
	}
	if flag&experimentalsys.O_DIRECTORY != 0 && !fi.IsDir() {
		f.Close()
		return nil, experimentalsys.ENOTDIR
	}
	file := &sysFile{fs: s, f: f, name: c, dir: fi.IsDir(), append: osFlag&os.O_APPEND != 0, writable: writes}
	if flag&experimentalsys.O_TRUNC != 0 && !file.dir {
		if e := file.Truncate(0); e != 0 {
			f.Close()
			return nil, e
		}
	}
	return file, 0
}

// create makes the new file c under the ledger's lock, booking it. It
// creates with O_EXCL, so it never creates through a link (a dangling
// one would make its target unbooked); when another process made the
// file first, it opens that one, unless the guest asked for O_EXCL.
func (s *sysFS) create(name, c string, osFlag int, excl bool, f **os.File) error {
	return s.w.locked(func(u *usage) error {
		if err := s.w.fits(u, 0, 1); err != nil {
			return err
		}
		var err error
		*f, err = s.w.openFile(name, c, osFlag|os.O_CREATE|os.O_EXCL)
		if err == nil {
			u.entries++
			return nil
		}
		if _, serr := s.w.root.Stat(c); serr == nil && !excl {
			*f, err = s.w.openFile(name, c, osFlag)
		}
		return err
	})
}

func (s *sysFS) Stat(name string) (sys.Stat_t, experimentalsys.Errno) {
	fi, err := s.w.Stat(name)
	if err != nil {
		return sys.Stat_t{}, s.refused("stat", name, err)
	}
	return sys.NewStat_t(fi), 0
}

func (s *sysFS) Lstat(name string) (sys.Stat_t, experimentalsys.Errno) {
	c, e := s.check("stat", name, false)
	if e != 0 {
		return sys.Stat_t{}, e
	}
	fi, err := s.w.root.Lstat(c)
	if err != nil {
		return sys.Stat_t{}, s.refused("stat", name, fail(name, err))
	}
	return sys.NewStat_t(fi), 0
}

func (s *sysFS) Mkdir(name string, _ fs.FileMode) experimentalsys.Errno {
	if _, e := s.check("mkdir", name, true); e != 0 {
		return e
	}
	return s.change("mkdir", name, 0, func() error { return s.w.Mkdir(name, false) })
}

func (s *sysFS) Rmdir(name string) experimentalsys.Errno {
	if _, e := s.check("rmdir", name, false); e != 0 {
		return e
	}
	if fi, err := s.w.Stat(name); err == nil && !fi.IsDir() {
		return experimentalsys.ENOTDIR
	}
	return s.change("rmdir", name, 0, func() error { return s.w.Remove(name, false) })
}

func (s *sysFS) Unlink(name string) experimentalsys.Errno {
	if _, e := s.check("unlink", name, false); e != 0 {
		return e
	}
	if fi, err := s.w.Stat(name); err == nil && fi.IsDir() {
		return experimentalsys.EISDIR
	}
	return s.change("unlink", name, 0, func() error { return s.w.Remove(name, false) })
}

func (s *sysFS) Rename(from, to string) experimentalsys.Errno {
	if _, e := s.check("rename", from, false); e != 0 {
		return e
	}
	if _, e := s.check("rename", to, true); e != 0 {
		return e
	}
	return s.change("rename", from+" -> "+to, 0, func() error { return s.w.Rename(from, to) })
}

// sysFile is an open workspace file as the guest holds it. It has no Seek
// of its own: the embedded UnimplementedFile answers ENOSYS, so a guest
// reads and writes a file from its start (or appends), and reaches other
// offsets with pread and pwrite. (A Seek here would have wazero's
// signature, (int64, Errno), which vet's check for io.Seeker's refuses.)
type sysFile struct {
	experimentalsys.UnimplementedFile
	fs       *sysFS
	f        *os.File
	name     string
	dir      bool
	append   bool
	writable bool
}

func (f *sysFile) IsDir() (bool, experimentalsys.Errno) { return f.dir, 0 }
func (f *sysFile) IsAppend() bool                       { return f.append }

func (f *sysFile) Stat() (sys.Stat_t, experimentalsys.Errno) {
	fi, err := f.f.Stat()
	if err != nil {
		return sys.Stat_t{}, errno(err)
	}
	return sys.NewStat_t(fi), 0
}

func (f *sysFile) Read(b []byte) (int, experimentalsys.Errno) {
	n, err := f.f.Read(b)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return n, errno(err)
}

func (f *sysFile) Pread(b []byte, off int64) (int, experimentalsys.Errno) {
	n, err := f.f.ReadAt(b, off)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return n, errno(err)
}

func (f *sysFile) Readdir(n int) ([]experimentalsys.Dirent, experimentalsys.Errno) {
	if !f.dir {
		return nil, experimentalsys.ENOTDIR
	}
	ents, err := f.f.ReadDir(n)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	out := make([]experimentalsys.Dirent, len(ents))
	for i, e := range ents {
		out[i] = experimentalsys.Dirent{Name: e.Name(), Type: e.Type()}
	}
	return out, errno(err)
}

// resize changes the file under the workspace's lock: it measures the
// file's real size (fstat: another handle, in this process or another,
// may have changed it since this one was opened), refuses a change that
// would end past the quota before writing a byte, makes the change
// (apply, given the size found) and books the size the file then has.
func (f *sysFile) resize(apply func(size int64) (end int64, do func() error)) error {
	w := f.fs.w
	return w.locked(func(u *usage) error {
		fi, err := f.f.Stat()
		if err != nil {
			return err
		}
		old := fi.Size()
		end, do := apply(old)
		if err := w.fits(u, end-old, 0); err != nil {
			return err
		}
		err = do()
		if fi, serr := f.f.Stat(); serr == nil {
			u.bytes += fi.Size() - old
		} else {
			u.bytes += end - old
		}
		return err
	})
}

func (f *sysFile) Write(b []byte) (int, experimentalsys.Errno) {
	if !f.writable {
		return 0, experimentalsys.EBADF
	}
	var n int
	e := f.fs.change("write", f.name, int64(len(b)), func() error {
		return f.resize(func(size int64) (int64, func() error) {
			pos := size
			if !f.append {
				p, err := f.f.Seek(0, io.SeekCurrent)
				if err != nil {
					return size, func() error { return err }
				}
				pos = p
			}
			return max(size, pos+int64(len(b))), func() error {
				var err error
				n, err = f.f.Write(b)
				return err
			}
		})
	})
	return n, e
}

func (f *sysFile) Pwrite(b []byte, off int64) (int, experimentalsys.Errno) {
	if !f.writable {
		return 0, experimentalsys.EBADF
	}
	var n int
	e := f.fs.change("write", f.name, int64(len(b)), func() error {
		return f.resize(func(size int64) (int64, func() error) {
			return max(size, off+int64(len(b))), func() error {
				var err error
				n, err = f.f.WriteAt(b, off)
				return err
			}
		})
	})
	return n, e
}

func (f *sysFile) Truncate(size int64) experimentalsys.Errno {
	if !f.writable {
		return experimentalsys.EBADF
	}
	return f.fs.change("truncate", f.name, size, func() error {
		return f.resize(func(int64) (int64, func() error) {
			return size, func() error { return f.f.Truncate(size) }
		})
	})
}

func (f *sysFile) Sync() experimentalsys.Errno     { return errno(f.f.Sync()) }
func (f *sysFile) Datasync() experimentalsys.Errno { return errno(f.f.Sync()) }

func (f *sysFile) Close() experimentalsys.Errno { return errno(f.f.Close()) }
