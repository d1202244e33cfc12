package wasmhost

import (
	"testing"
)

// TestLinearMemory: a guest memory grows in place up to its maximum and
// no further, its new pages read as zero, a memory left by a failed
// instantiation is freed with the run's, and freeing twice is harmless.
func TestLinearMemory(t *testing.T) {
	const page = pageSize
	var rm runMemory
	var made []*linearMemory
	for _, tc := range []struct {
		name          string
		capBytes, max uint64
	}{
		{"no pages at first", 0, 16 * page},
		{"some pages at first", 2 * page, 16 * page},
		{"no memory at all", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := rm.Allocate(tc.capBytes, tc.max).(*linearMemory)
			made = append(made, m)
			b := m.Reallocate(tc.capBytes)
			if b == nil || uint64(len(b)) != tc.capBytes {
				t.Fatalf("the first pages: %d bytes", len(b))
			}
			if tc.max == 0 {
				if m.Reallocate(page) != nil {
					t.Fatal("grew past a maximum of 0")
				}
				return
			}
			for i := range b {
				b[i] = 0xaa
			}
			grown := m.Reallocate(tc.max)
			if uint64(len(grown)) != tc.max || uint64(cap(grown)) != tc.max {
				t.Fatalf("grown to %d bytes (cap %d); want %d", len(grown), cap(grown), tc.max)
			}
			if len(b) > 0 && &grown[0] != &b[0] {
				t.Fatal("the memory moved as it grew: it was copied")
			}
			for i, v := range grown[tc.capBytes:] {
				if v != 0 {
					t.Fatalf("byte %d of a new page is %#x, not zero", int(tc.capBytes)+i, v)
				}
			}
			for i := range grown {
				grown[i] = 1 // every page may be written
			}
			if m.Reallocate(tc.max+page) != nil {
				t.Fatal("grew past its maximum")
			}
		})
	}
	// As after an instantiation that failed once its memory was made:
	// the run's end frees what wazero did not.
	rm.freeAll()
	rm.freeAll()
	for i, m := range made {
		if !m.freed || m.mem != nil || m.Reallocate(0) != nil {
			t.Errorf("memory %d not freed at the run's end", i)
		}
	}
}
