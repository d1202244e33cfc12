package store

import (
	"context"
	"fmt"
	"slices"
	"testing"
)

// TestMemoryRankingIgnoresOtherSessions: session B's entries change
// nothing of session A's results. A's entries make "xenon" rarer than
// "yarrow" in A, so the entry with xenon twice ranks first for "xenon
// yarrow"; counted over the whole index, B's 200 entries with xenon would
// make it the commoner word and put the entry with yarrow twice first.
// The order, ranks and snippets of A's results are the same before and
// after B's writes, and after B's memory is gone.
func TestMemoryRankingIgnoresOtherSessions(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, freshDir(t))
	write := func(session, text string) {
		t.Helper()
		if _, err := s.WriteMemory(ctx, session, text, nil); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 10 {
		write("A", fmt.Sprintf("filler note number %d", i))
	}
	write("A", "xenon xenon yarrow")  // id 11
	write("A", "xenon yarrow yarrow") // id 12
	write("A", "yarrow alone here")
	search := func() string {
		t.Helper()
		hits, err := s.SearchMemory(ctx, "A", "xenon yarrow", 0)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%+v", hits)
	}
	before := search()
	hits, _ := s.SearchMemory(ctx, "A", "xenon yarrow", 0)
	if ids := []int64{hits[0].ID, hits[1].ID}; len(hits) != 2 || !slices.Equal(ids, []int64{11, 12}) {
		t.Fatalf("A's own order is %s; want 11 (the rarer word twice) first", before)
	}
	for i := range 200 {
		write("B", fmt.Sprintf("xenon lamp %d", i))
	}
	if after := search(); after != before {
		t.Fatalf("B's entries changed A's results:\nbefore %s\nafter  %s", before, after)
	}
}
