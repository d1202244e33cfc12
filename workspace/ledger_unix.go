//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package workspace

import (
	"os"

	"golang.org/x/sys/unix"
)

// lockFile takes the exclusive lock on the ledger that every process
// changing the workspace takes. flock locks belong to the open file, so
// two Workspace values in one process exclude each other too, and the
// kernel drops the lock of a process that dies.
func lockFile(f *os.File) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if err != unix.EINTR {
			return err
		}
	}
}

func unlockFile(f *os.File) error { return unix.Flock(int(f.Fd()), unix.LOCK_UN) }

// crossProcess: the ledger's lock excludes other processes here.
const crossProcess = true
