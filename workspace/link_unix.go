//go:build unix

package workspace

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// singleLink refuses a regular file with more than one hard link: os.Root
// cannot tell where the other names are, and one may be outside.
func singleLink(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && fi.Mode().IsRegular() && st.Nlink > 1 {
		return errors.New("a file with another hard link, which may be outside the workspace")
	}
	return nil
}

// openNoWait is added to every open of a name in the workspace: opening a
// named pipe would otherwise wait in open(2) for the other end, past any
// deadline. The file is then refused as not regular (checked with fstat,
// so a pipe swapped in after the first check is caught too); on a regular
// file or a directory the flag changes nothing.
const openNoWait = syscall.O_NONBLOCK

// dirID identifies the directory a ledger counts (its inode), so a ledger
// left beside a directory that was since removed and made again is not
// believed. 0: unknown.
func dirID(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}
