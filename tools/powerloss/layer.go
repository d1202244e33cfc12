//go:build linux

package powerloss

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// Layer is a mounted power-loss file system: the mount point shows the
// working tree (every write, as the page cache would), and Disk holds
// what has been synced (what a disk would hold if the power went now).
type Layer struct {
	Disk       string // the backing directory: synced state only
	Mountpoint string
	work       string // the page cache: every write, synced or not
	server     *fuse.Server

	mu      sync.Mutex // orders namespace changes and their journal
	journal []nsOp     // namespace changes not yet committed to Disk
	lost    bool       // the power went: nothing reaches Disk any more
	lying   bool       // fsync says yes and keeps nothing (LieAboutSync)
	syncs   int
}

// nsOp is one namespace change, replayed on Disk when the journal
// commits. Paths are relative to the root.
type nsOp struct {
	kind     string // create, mkdir, unlink, rmdir, rename, symlink, link, chmod
	path     string
	to       string // rename and link: the new name; symlink: the target
	mode     uint32
	flags    uint32 // rename: renameat2 flags
	truncate bool   // create with O_TRUNC
}

// Mount copies disk into a fresh working tree under scratch (the state a
// machine finds after it boots) and mounts the layer at mountpoint. It
// needs /dev/fuse and root (mount(2)) or fusermount3.
func Mount(disk, mountpoint, scratch string) (*Layer, error) {
	work, err := os.MkdirTemp(scratch, "work-")
	if err != nil {
		return nil, err
	}
	if err := copyTree(disk, work); err != nil {
		return nil, fmt.Errorf("copying %s to the working tree: %w", disk, err)
	}
	l := &Layer{Disk: disk, Mountpoint: mountpoint, work: work}
	root := &fs.LoopbackRoot{Path: work}
	var st syscall.Stat_t
	if err := syscall.Stat(work, &st); err != nil {
		return nil, err
	}
	root.Dev = uint64(st.Dev)
	root.NewNode = func(r *fs.LoopbackRoot, _ *fs.Inode, _ string, _ *syscall.Stat_t) fs.InodeEmbedder {
		return &node{LoopbackNode: fs.LoopbackNode{RootData: r}, layer: l}
	}
	rootNode := root.NewNode(root, nil, "", &st)
	root.RootNode = rootNode
	sec := time.Second
	l.server, err = fs.Mount(mountpoint, rootNode, &fs.Options{
		AttrTimeout:  &sec,
		EntryTimeout: &sec,
		MountOptions: fuse.MountOptions{
			FsName:      "powerloss",
			Name:        "powerloss",
			DirectMount: true, // as root no fusermount3 is needed
		},
	})
	if err != nil {
		os.RemoveAll(work)
		return nil, fmt.Errorf("mounting the power-loss layer at %s (it needs /dev/fuse and root, or fusermount3 from Debian's fuse3): %w", mountpoint, err)
	}
	return l, nil
}

// PowerLoss cuts the power: nothing reaches Disk any more, the layer is
// unmounted and the working tree (the page cache) is thrown away. Disk
// then holds exactly what was synced. Processes using the mount should
// be dead first (kill -9), or the unmount waits for them.
func (l *Layer) PowerLoss() error {
	l.mu.Lock()
	if l.lost {
		l.mu.Unlock()
		return nil
	}
	l.lost = true
	l.journal = nil
	l.mu.Unlock()
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; {
		if err = l.server.Unmount(); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond) // the kernel is still releasing the killed process's files
	}
	if err != nil {
		return fmt.Errorf("unmounting %s: %w", l.Mountpoint, err)
	}
	return os.RemoveAll(l.work)
}

// LieAboutSync makes every later fsync succeed without keeping anything,
// as a disk whose write cache ignores flushes and then loses the power.
// The audit trail cannot defend against such a disk; the test uses it to
// show that a checkpoint kept elsewhere catches what it loses.
func (l *Layer) LieAboutSync() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lying = true
}

// Syncs counts the fsyncs that reached Disk.
func (l *Layer) Syncs() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.syncs
}

// record applies a namespace change to the working tree and, when it
// succeeds, journals it, under one lock so the journal keeps the order in
// which the changes happened.
func (l *Layer) record(op nsOp, apply func() syscall.Errno) syscall.Errno {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost {
		return syscall.EIO
	}
	errno := apply()
	if errno == 0 {
		l.journal = append(l.journal, op)
	}
	return errno
}

// commitJournal replays every journalled namespace change on Disk, in
// order, as a journalling file system commits its journal on any fsync.
// Called with l.mu held.
func (l *Layer) commitJournal() error {
	for _, op := range l.journal {
		if err := l.replay(op); err != nil {
			return fmt.Errorf("replaying %s %s: %w", op.kind, op.path, err)
		}
	}
	l.journal = nil
	return nil
}

func (l *Layer) replay(op nsOp) error {
	p := filepath.Join(l.Disk, op.path)
	switch op.kind {
	case "create":
		flags := os.O_WRONLY | os.O_CREATE
		if op.truncate {
			flags |= os.O_TRUNC
		}
		f, err := os.OpenFile(p, flags, os.FileMode(op.mode&0o777))
		if err != nil {
			return err
		}
		return f.Close()
	case "mkdir":
		if err := os.Mkdir(p, os.FileMode(op.mode&0o777)); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
		return nil
	case "unlink", "rmdir":
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	case "rename":
		return unix.Renameat2(unix.AT_FDCWD, p, unix.AT_FDCWD, filepath.Join(l.Disk, op.to), uint(op.flags))
	case "symlink":
		return os.Symlink(op.to, p)
	case "link":
		return os.Link(p, filepath.Join(l.Disk, op.to))
	case "chmod":
		return os.Chmod(p, os.FileMode(op.mode&0o7777))
	}
	return fmt.Errorf("unknown namespace change %q", op.kind)
}

// node is a loopback node whose writes are tracked until they are synced.
type node struct {
	fs.LoopbackNode
	layer *Layer

	mu      sync.Mutex
	dirty   []span // written since the last sync, not yet on Disk
	minSize int64  // smallest size since the last sync; -1: not truncated
	touched bool   // dirty or minSize set
}

type span struct{ off, end int64 }

func (n *node) rel() string { return n.Path(n.Root()) }

func (n *node) workPath() string { return filepath.Join(n.layer.work, n.rel()) }

// truncated notes a size change, kept (like a write) until the next sync.
func (n *node) truncated(size int64) {
	if !n.touched || n.minSize < 0 || size < n.minSize {
		n.minSize = size
	}
	n.touched = true
}

var _ = (fs.NodeWriter)((*node)(nil))

func (n *node) Write(ctx context.Context, f fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	w, ok := f.(fs.FileWriter)
	if !ok {
		return 0, syscall.EBADF
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	written, errno := w.Write(ctx, data, off)
	if written > 0 {
		if !n.touched {
			n.minSize = -1
		}
		n.touched = true
		if k := len(n.dirty); k > 0 && n.dirty[k-1].end == off {
			n.dirty[k-1].end += int64(written) // an append: one span
		} else {
			n.dirty = append(n.dirty, span{off, off + int64(written)})
		}
	}
	return written, errno
}

var _ = (fs.NodeSetattrer)((*node)(nil))

func (n *node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if m, ok := in.GetMode(); ok {
		errno := n.layer.record(nsOp{kind: "chmod", path: n.rel(), mode: m}, func() syscall.Errno {
			return fs.ToErrno(syscall.Chmod(n.workPath(), m))
		})
		if errno != 0 {
			return errno
		}
		in.Valid &^= fuse.FATTR_MODE
	}
	sz, hasSize := in.GetSize()
	if !hasSize {
		return n.LoopbackNode.Setattr(ctx, f, in, out)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	errno := n.LoopbackNode.Setattr(ctx, f, in, out)
	if errno == 0 {
		n.truncated(int64(sz))
	}
	return errno
}

var _ = (fs.NodeOpener)((*node)(nil))

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	n.mu.Lock()
	defer n.mu.Unlock()
	fh, ff, errno := n.LoopbackNode.Open(ctx, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	if flags&syscall.O_TRUNC != 0 {
		n.truncated(0)
	}
	return noPassthrough(fh), ff, 0
}

// handle is a loopback file the kernel may not read or write behind the
// layer's back: FUSE passthrough (Linux 6.9 and later, offered to root)
// would send writes straight to the working tree, unseen by Write.
type handle struct{ *fs.LoopbackFile }

func (handle) PassthroughFd() (int, bool) { return -1, false }

func noPassthrough(fh fs.FileHandle) fs.FileHandle {
	if lf, ok := fh.(*fs.LoopbackFile); ok {
		return handle{lf}
	}
	return fh
}

var _ = (fs.NodeFsyncer)((*node)(nil))

// Fsync (and fdatasync, and a directory's fsync) commits the namespace
// journal and then this file's writes: they reach Disk. Nothing else's
// data does.
func (n *node) Fsync(ctx context.Context, f fs.FileHandle, flags uint32) syscall.Errno {
	l := n.layer
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost {
		return syscall.EIO
	}
	if l.lying {
		return 0
	}
	if err := l.commitJournal(); err != nil {
		return fs.ToErrno(err)
	}
	if !n.IsDir() {
		n.mu.Lock()
		err := n.flush()
		n.mu.Unlock()
		if err != nil {
			return fs.ToErrno(err)
		}
	}
	l.syncs++
	return 0
}

// flush copies the file's unsynced writes and size from the working tree
// to Disk. A file with no name left (unlinked while open) has nowhere to
// go: its data dies with it, as on a disk.
func (n *node) flush() error {
	if !n.touched {
		return nil
	}
	if _, parent := n.Parent(); parent == nil {
		n.dirty, n.touched = nil, false
		return nil
	}
	src, err := os.Open(n.workPath())
	if err != nil {
		return err
	}
	defer src.Close()
	st, err := src.Stat()
	if err != nil {
		return err
	}
	dst, err := os.OpenFile(filepath.Join(n.layer.Disk, n.rel()), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer dst.Close()
	if n.minSize >= 0 {
		if err := dst.Truncate(n.minSize); err != nil {
			return err
		}
	}
	sort.Slice(n.dirty, func(i, j int) bool { return n.dirty[i].off < n.dirty[j].off })
	for _, s := range n.dirty {
		if _, err := io.Copy(io.NewOffsetWriter(dst, s.off), io.NewSectionReader(src, s.off, s.end-s.off)); err != nil {
			return err
		}
	}
	if err := dst.Truncate(st.Size()); err != nil {
		return err
	}
	n.dirty, n.minSize, n.touched = nil, -1, false
	return nil
}

// OpendirHandle hides the loopback's directory handle, whose Fsyncdir
// would fsync the working tree and bypass the journal: without it a
// directory's fsync reaches Fsync above.
func (n *node) OpendirHandle() {}

var _ = (fs.NodeCreater)((*node)(nil))

func (n *node) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	var (
		ch *fs.Inode
		fh fs.FileHandle
		ff uint32
	)
	op := nsOp{kind: "create", path: filepath.Join(n.rel(), name), mode: mode, truncate: flags&syscall.O_TRUNC != 0}
	errno := n.layer.record(op, func() syscall.Errno {
		var errno syscall.Errno
		ch, fh, ff, errno = n.LoopbackNode.Create(ctx, name, flags, mode, out)
		return errno
	})
	if errno == 0 && op.truncate {
		if c, ok := ch.Operations().(*node); ok {
			c.mu.Lock()
			c.minSize, c.touched = 0, true
			c.mu.Unlock()
		}
	}
	return ch, noPassthrough(fh), ff, errno
}

var _ = (fs.NodeMkdirer)((*node)(nil))

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	var ch *fs.Inode
	errno := n.layer.record(nsOp{kind: "mkdir", path: filepath.Join(n.rel(), name), mode: mode}, func() syscall.Errno {
		var errno syscall.Errno
		ch, errno = n.LoopbackNode.Mkdir(ctx, name, mode, out)
		return errno
	})
	return ch, errno
}

var _ = (fs.NodeUnlinker)((*node)(nil))

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	return n.layer.record(nsOp{kind: "unlink", path: filepath.Join(n.rel(), name)}, func() syscall.Errno {
		return n.LoopbackNode.Unlink(ctx, name)
	})
}

var _ = (fs.NodeRmdirer)((*node)(nil))

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	return n.layer.record(nsOp{kind: "rmdir", path: filepath.Join(n.rel(), name)}, func() syscall.Errno {
		return n.LoopbackNode.Rmdir(ctx, name)
	})
}

var _ = (fs.NodeRenamer)((*node)(nil))

func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	to := filepath.Join(newParent.EmbeddedInode().Path(n.Root()), newName)
	return n.layer.record(nsOp{kind: "rename", path: filepath.Join(n.rel(), name), to: to, flags: flags}, func() syscall.Errno {
		return n.LoopbackNode.Rename(ctx, name, newParent, newName, flags)
	})
}

var _ = (fs.NodeSymlinker)((*node)(nil))

func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	var ch *fs.Inode
	errno := n.layer.record(nsOp{kind: "symlink", path: filepath.Join(n.rel(), name), to: target}, func() syscall.Errno {
		var errno syscall.Errno
		ch, errno = n.LoopbackNode.Symlink(ctx, target, name, out)
		return errno
	})
	return ch, errno
}

var _ = (fs.NodeLinker)((*node)(nil))

func (n *node) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	var ch *fs.Inode
	from := target.EmbeddedInode().Path(n.Root())
	errno := n.layer.record(nsOp{kind: "link", path: from, to: filepath.Join(n.rel(), name)}, func() syscall.Errno {
		var errno syscall.Errno
		ch, errno = n.LoopbackNode.Link(ctx, target, name, out)
		return errno
	})
	return ch, errno
}

// The layer does not model these: refusing them keeps a write from
// reaching the working tree unseen.
var (
	_ = (fs.NodeAllocater)((*node)(nil))
	_ = (fs.NodeCopyFileRanger)((*node)(nil))
	_ = (fs.NodeMknoder)((*node)(nil))
)

func (n *node) Allocate(context.Context, fs.FileHandle, uint64, uint64, uint32) syscall.Errno {
	return syscall.EOPNOTSUPP
}

func (n *node) CopyFileRange(context.Context, fs.FileHandle, uint64, *fs.Inode, fs.FileHandle, uint64, uint64, uint64) (uint32, syscall.Errno) {
	return 0, syscall.EOPNOTSUPP
}

func (n *node) Mknod(context.Context, string, uint32, uint32, *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EPERM
}

// copyTree copies a directory tree (files, directories, symlinks) keeping
// modes.
func copyTree(from, to string) error {
	return filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if err := os.MkdirAll(dst, 0o700); err != nil {
				return err
			}
			return os.Chmod(dst, info.Mode().Perm())
		case d.Type()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, dst)
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(dst, b, info.Mode().Perm())
		}
		return fmt.Errorf("%s: not a file, directory or symlink", p)
	})
}
