//go:build unix

package store

import (
	"sync"
	"syscall"
)

// walIndex maps the first page of the database's WAL index (the -shm file)
// read-only. Its first 96 bytes are the two copies of the WAL-index header
// (sqlite.org/walformat.html), which every commit of every connection
// rewrites before its COMMIT returns: the frame count grows, or the salts
// change when the WAL starts over, and the header's checksum with them.
// Comparing those bytes is how a decision learns, without a query, that
// nothing was committed since the cache was filled.
//
// The mapping is taken while the Store holds a connection open, and is
// dropped when that connection closes: SQLite never truncates or removes
// the file while a connection has it open, so the mapping stays valid.
type walIndex struct {
	mem []byte
}

const walIndexHeader = 96

// walIndexMapped says that openWALIndex can map the header here.
const walIndexMapped = true

func openWALIndex(dbPath string) *walIndex {
	fd, size, err := shmFile(dbPath + "-shm")
	if err != nil || size < walIndexHeader {
		return nil
	}
	mem, err := syscall.Mmap(fd, 0, walIndexHeader, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil
	}
	return &walIndex{mem: mem}
}

// shmFiles holds the descriptors the mappings were made from, one per file,
// open for the life of the process. They are never closed: POSIX releases
// every fcntl lock a process holds on a file when any descriptor of that
// file is closed, and SQLite's connections in this process hold their WAL
// locks on this very file. (Closing it right after mmap made other
// connections of the process fail with disk I/O errors.) A Store reopened
// on the same file reuses its descriptor.
var shmFiles struct {
	sync.Mutex
	fds map[string]int
}

// shmFile returns a read-only descriptor of path and the file's size.
func shmFile(path string) (fd int, size int64, err error) {
	shmFiles.Lock()
	defer shmFiles.Unlock()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return -1, 0, err
	}
	if fd, ok := shmFiles.fds[path]; ok {
		var fst syscall.Stat_t
		if syscall.Fstat(fd, &fst) == nil && fst.Dev == st.Dev && fst.Ino == st.Ino {
			return fd, fst.Size, nil
		}
		// Another file now has the name; the old descriptor stays open
		// (closing it could drop locks, see above).
	}
	fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return -1, 0, err
	}
	if shmFiles.fds == nil {
		shmFiles.fds = map[string]int{}
	}
	shmFiles.fds[path] = fd
	var fst syscall.Stat_t
	if err := syscall.Fstat(fd, &fst); err != nil {
		return -1, 0, err
	}
	return fd, fst.Size, nil
}

// header copies the header as it is now.
func (w *walIndex) header() (h [walIndexHeader]byte) {
	copy(h[:], w.mem)
	return h
}

func (w *walIndex) close() {
	if w != nil && w.mem != nil {
		syscall.Munmap(w.mem)
		w.mem = nil
	}
}
