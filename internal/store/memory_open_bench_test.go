package store

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkOpenWithMemory is what every host start and CLI command pays:
// Open, one read (ListAgents) and Close, with no session's memory stored
// and with 500 sessions' memory (one entry each); and, with 500, what a
// process that then searches one session's memory pays ("then a
// search": memory.db opened, its schema parsed).
func BenchmarkOpenWithMemory(b *testing.B) {
	ctx := context.Background()
	for _, c := range []struct {
		sessions int
		search   bool
	}{{0, false}, {500, false}, {500, true}} {
		sessions := c.sessions
		name := fmt.Sprintf("%d sessions", sessions)
		if c.search {
			name += " then a search"
		}
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			s, err := Open(dir, Options{})
			if err != nil {
				b.Fatal(err)
			}
			for i := range sessions {
				if _, err := s.WriteMemory(ctx, fmt.Sprintf("bench-%d", i), "a note to keep", nil); err != nil {
					b.Fatal(err)
				}
			}
			if err := s.Close(); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				s, err := Open(dir, Options{})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := s.ListAgents(ctx); err != nil {
					b.Fatal(err)
				}
				if c.search {
					if hits, err := s.SearchMemory(ctx, "bench-7", "note", 0); err != nil || len(hits) != 1 {
						b.Fatal(hits, err)
					}
				}
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkMemoryWrite is one acknowledged WriteMemory: durable before
// it returns, in the default durability.
func BenchmarkMemoryWrite(b *testing.B) {
	ctx := context.Background()
	s, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if _, err := s.WriteMemory(ctx, "bench", "the first note", nil); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := s.WriteMemory(ctx, "bench", "the deploy key rotates on mondays", []string{"ops"}); err != nil {
			b.Fatal(err)
		}
	}
}
