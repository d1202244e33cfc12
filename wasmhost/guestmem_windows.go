//go:build windows

package wasmhost

import (
	"unsafe"

	"golang.org/x/sys/windows"
)

// reserveGuest reserves n bytes of address space (MEM_RESERVE): no
// memory and no commit charge until pages are committed.
func reserveGuest(n uint64) ([]byte, error) {
	addr, err := windows.VirtualAlloc(0, uintptr(n), windows.MEM_RESERVE, windows.PAGE_NOACCESS)
	if err != nil {
		return nil, err
	}
	// The range is outside the Go heap; the conversion goes through
	// memory so that it is not an arithmetic on a uintptr (go vet).
	return unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&addr))), n), nil
}

// commitGuest commits mem[from:to] read-write; committed pages read as
// zero.
func commitGuest(mem []byte, from, to uint64) error {
	if to <= from {
		return nil
	}
	_, err := windows.VirtualAlloc(uintptr(unsafe.Pointer(&mem[from])), uintptr(to-from), windows.MEM_COMMIT, windows.PAGE_READWRITE)
	return err
}

// releaseGuest releases the whole reservation, committed pages with it.
func releaseGuest(mem []byte) {
	windows.VirtualFree(uintptr(unsafe.Pointer(unsafe.SliceData(mem))), 0, windows.MEM_RELEASE)
}
