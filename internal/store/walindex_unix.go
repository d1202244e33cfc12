//go:build unix

package store

import (
	"os"
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
// The mapping is taken while the Store holds a connection open: SQLite
// then never truncates or removes the file, so the mapping stays valid
// for the Store's life.
type walIndex struct {
	mem []byte
}

const walIndexHeader = 96

// walIndexMapped says that openWALIndex can map the header here.
const walIndexMapped = true

func openWALIndex(dbPath string) *walIndex {
	f, err := os.Open(dbPath + "-shm")
	if err != nil {
		return nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() < walIndexHeader {
		return nil
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, walIndexHeader, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil
	}
	return &walIndex{mem: mem}
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
