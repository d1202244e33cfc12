//go:build windows

package workspace

import (
	"os"

	"golang.org/x/sys/windows"
)

// lockFile takes the exclusive lock on the ledger's first byte that every
// process changing the workspace takes. Windows drops the lock of a
// process that dies, and two handles in one process exclude each other.
func lockFile(f *os.File) error {
	return windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK, 0, 1, 0, new(windows.Overlapped))
}

func unlockFile(f *os.File) error {
	return windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, new(windows.Overlapped))
}

// crossProcess: the ledger's lock excludes other processes here.
const crossProcess = true
