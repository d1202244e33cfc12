//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly || windows)

package wasmhost

import "errors"

// reserveGuest: no way to reserve address space here (the host ships for
// Linux, macOS and Windows); guest memory is on the Go heap, as wazero
// makes it.
func reserveGuest(uint64) ([]byte, error) { return nil, errors.ErrUnsupported }

func commitGuest([]byte, uint64, uint64) error { return errors.ErrUnsupported }

func releaseGuest([]byte) {}
