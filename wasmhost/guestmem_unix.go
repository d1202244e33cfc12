//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package wasmhost

import (
	"math"

	"golang.org/x/sys/unix"
)

// reserveGuest maps n bytes of address space that may not be touched
// yet (PROT_NONE): it holds no memory and counts against no commit limit.
func reserveGuest(n uint64) ([]byte, error) {
	if n > math.MaxInt {
		return nil, unix.ENOMEM
	}
	return unix.Mmap(-1, 0, int(n), unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANON)
}

// commitGuest makes mem[from:to] readable and writable; the kernel gives
// a page when it is first touched, zeroed.
func commitGuest(mem []byte, from, to uint64) error {
	if to <= from {
		return nil
	}
	return unix.Mprotect(mem[from:to], unix.PROT_READ|unix.PROT_WRITE)
}

// releaseGuest unmaps the whole range: its pages go back to the system
// at once.
func releaseGuest(mem []byte) { unix.Munmap(mem) }
