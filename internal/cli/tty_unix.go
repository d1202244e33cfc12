//go:build unix

package cli

import "golang.org/x/sys/unix"

// isTTY reports whether fd is a terminal: a character device such as
// /dev/null is not a person who can answer.
func isTTY(fd uintptr) bool {
	_, err := unix.IoctlGetTermios(int(fd), ioctlReadTermios)
	return err == nil
}
