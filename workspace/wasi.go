package workspace

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"sync"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/sys"

	"github.com/agentgate/nmhost/mediator"
)

// Hooks let the caller decide and record every change a guest makes to
// the workspace. Change is called with what is about to happen (op is
// "create", "write", "truncate", "mkdir", "rmdir", "unlink" or "rename";
// n the bytes written, or the new size) and do, which makes the change:
// it must call do only if the change is allowed, and return do's error.
// nil runs every change.
type Hooks struct {
	Change func(op, name string, n int64, do func() error) error
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

// change runs do as the change op on name, through the hook.
func (s *sysFS) change(op, name string, n int64, do func() error) experimentalsys.Errno {
	if s.readOnly {
		return experimentalsys.EROFS
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
		return experimentalsys.EPERM // refused: nothing changed
	}
	return errno(err)
}

func (s *sysFS) OpenFile(name string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	c, err := Clean(name)
	if err != nil {
		return nil, errno(err)
	}
	writes := flag&(experimentalsys.O_WRONLY|experimentalsys.O_RDWR|experimentalsys.O_CREAT|experimentalsys.O_TRUNC|experimentalsys.O_APPEND) != 0
	if writes && s.readOnly {
		return nil, experimentalsys.EROFS
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
	created := false
	if flag&experimentalsys.O_CREAT != 0 {
		if _, err := s.w.root.Lstat(c); errors.Is(err, fs.ErrNotExist) {
			if err := s.w.reserve(0, 1); err != nil {
				return nil, errno(err)
			}
			created = true
		}
		osFlag |= os.O_CREATE
		if flag&experimentalsys.O_EXCL != 0 {
			osFlag |= os.O_EXCL
		}
	}
	var f *os.File
	open := func() error {
		var err error
		f, err = s.w.root.OpenFile(c, osFlag, 0o600)
		return fail(name, err)
	}
	var e experimentalsys.Errno
	if created {
		e = s.change("create", c, 0, open) // a new file is a change; opening one is not
	} else {
		e = errno(open())
	}
	if e != 0 {
		if created {
			s.w.reserve(0, -1)
		}
		return nil, e
	}
	if err := singleLink(f); err != nil {
		f.Close()
		return nil, experimentalsys.EPERM
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
	file := &sysFile{fs: s, f: f, name: c, size: fi.Size(), dir: fi.IsDir(), append: osFlag&os.O_APPEND != 0, writable: writes}
	if flag&experimentalsys.O_TRUNC != 0 && !file.dir {
		if e := file.Truncate(0); e != 0 {
			f.Close()
			return nil, e
		}
	}
	return file, 0
}

func (s *sysFS) Stat(name string) (sys.Stat_t, experimentalsys.Errno) {
	fi, err := s.w.Stat(name)
	if err != nil {
		return sys.Stat_t{}, errno(err)
	}
	return sys.NewStat_t(fi), 0
}

func (s *sysFS) Lstat(name string) (sys.Stat_t, experimentalsys.Errno) {
	c, err := Clean(name)
	if err != nil {
		return sys.Stat_t{}, errno(err)
	}
	fi, err := s.w.root.Lstat(c)
	if err != nil {
		return sys.Stat_t{}, errno(fail(name, err))
	}
	return sys.NewStat_t(fi), 0
}

func (s *sysFS) Mkdir(name string, _ fs.FileMode) experimentalsys.Errno {
	return s.change("mkdir", name, 0, func() error { return s.w.Mkdir(name, false) })
}

func (s *sysFS) Rmdir(name string) experimentalsys.Errno {
	if fi, err := s.w.Stat(name); err == nil && !fi.IsDir() {
		return experimentalsys.ENOTDIR
	}
	return s.change("rmdir", name, 0, func() error { return s.w.Remove(name, false) })
}

func (s *sysFS) Unlink(name string) experimentalsys.Errno {
	if fi, err := s.w.Stat(name); err == nil && fi.IsDir() {
		return experimentalsys.EISDIR
	}
	return s.change("unlink", name, 0, func() error { return s.w.Remove(name, false) })
}

func (s *sysFS) Rename(from, to string) experimentalsys.Errno {
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

	mu   sync.Mutex
	size int64 // as far as the quota has counted it
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

// grow books what a change ending at end adds to the file, or refuses.
// It returns the bytes it booked, which unbook gives back if the change
// is then refused or fails: a write the policy refuses must not use up
// the quota.
func (f *sysFile) grow(end int64) (int64, experimentalsys.Errno) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if end <= f.size {
		return 0, 0
	}
	if err := f.fs.w.reserve(end-f.size, 0); err != nil {
		return 0, errno(err)
	}
	booked := end - f.size
	f.size = end
	return booked, 0
}

// unbook gives back what grow booked for a change meant to end at end
// that wrote n bytes from start: all of it when nothing was written (the
// change was refused), the unwritten tail otherwise. A change that has
// since grown the file further keeps the booking: those bytes are the
// later change's.
func (f *sysFile) unbook(booked, end, start int64, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	reached := int64(0)
	if n > 0 {
		reached = start + int64(n)
	}
	if booked <= 0 || reached >= end || f.size != end {
		return
	}
	back := min(booked, end-reached)
	f.fs.w.reserve(-back, 0)
	f.size -= back
}

func (f *sysFile) Write(b []byte) (int, experimentalsys.Errno) {
	if !f.writable {
		return 0, experimentalsys.EBADF
	}
	pos, err := f.f.Seek(0, io.SeekCurrent)
	if err != nil {
		return 0, errno(err)
	}
	if f.append {
		pos = f.size
	}
	end := pos + int64(len(b))
	booked, e := f.grow(end)
	if e != 0 {
		return 0, e
	}
	var n int
	e = f.fs.change("write", f.name, int64(len(b)), func() error {
		var err error
		n, err = f.f.Write(b)
		return err
	})
	if e != 0 {
		f.unbook(booked, end, pos, n)
	}
	return n, e
}

func (f *sysFile) Pwrite(b []byte, off int64) (int, experimentalsys.Errno) {
	if !f.writable {
		return 0, experimentalsys.EBADF
	}
	end := off + int64(len(b))
	booked, e := f.grow(end)
	if e != 0 {
		return 0, e
	}
	var n int
	e = f.fs.change("write", f.name, int64(len(b)), func() error {
		var err error
		n, err = f.f.WriteAt(b, off)
		return err
	})
	if e != 0 {
		f.unbook(booked, end, off, n)
	}
	return n, e
}

func (f *sysFile) Truncate(size int64) experimentalsys.Errno {
	if !f.writable {
		return experimentalsys.EBADF
	}
	booked, e := f.grow(size)
	if e != 0 {
		return e
	}
	if e := f.fs.change("truncate", f.name, size, func() error { return f.f.Truncate(size) }); e != 0 {
		f.unbook(booked, size, 0, 0)
		return e
	}
	f.mu.Lock()
	if size < f.size {
		f.fs.w.reserve(size-f.size, 0)
		f.size = size
	}
	f.mu.Unlock()
	return 0
}

func (f *sysFile) Sync() experimentalsys.Errno     { return errno(f.f.Sync()) }
func (f *sysFile) Datasync() experimentalsys.Errno { return errno(f.f.Sync()) }

func (f *sysFile) Close() experimentalsys.Errno { return errno(f.f.Close()) }
