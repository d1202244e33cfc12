//go:build unix

package workspace

import (
	"errors"
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
