package store

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/agentgate/nmhost/mediator"
)

func TestMemoryWriteBounds(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, freshDir(t))
	for _, tc := range []struct {
		name    string
		session string
		text    string
		tags    []string
		code    mediator.Code // "" allowed
	}{
		{"plain", "s1", "the deploy key rotates on mondays", []string{"ops", "keys_2"}, ""},
		{"text at the limit", "s1", strings.Repeat("a", MaxMemoryTextBytes), nil, ""},
		{"tags at the limit", "s1", "x", []string{"a", "b", "c", "d", "e", "f", "g", strings.Repeat("h", MaxMemoryTagBytes)}, ""},
		{"empty text", "s1", "", nil, mediator.CodeBadRequest},
		{"text over the limit", "s1", strings.Repeat("a", MaxMemoryTextBytes+1), nil, mediator.CodeTooLarge},
		{"text not utf-8", "s1", "bad \xff", nil, mediator.CodeBadRequest},
		{"text with NUL", "s1", "a\x00b", nil, mediator.CodeBadRequest},
		{"too many tags", "s1", "x", []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}, mediator.CodeTooLarge},
		{"tag too long", "s1", "x", []string{strings.Repeat("h", MaxMemoryTagBytes+1)}, mediator.CodeBadRequest},
		{"empty tag", "s1", "x", []string{""}, mediator.CodeBadRequest},
		{"upper-case tag", "s1", "x", []string{"Ops"}, mediator.CodeBadRequest},
		{"tag with space", "s1", "x", []string{"a b"}, mediator.CodeBadRequest},
		{"tag as search syntax", "s1", "x", []string{"tags:x"}, mediator.CodeBadRequest},
		{"tag with quote", "s1", "x", []string{`a"`}, mediator.CodeBadRequest},
		{"duplicate tag", "s1", "x", []string{"a", "a"}, mediator.CodeBadRequest},
		{"empty session", "", "x", nil, mediator.CodeUnknownSession},
		{"session with a control character", "s1\nforged", "x", nil, mediator.CodeUnknownSession},
		{"session over 256 bytes", strings.Repeat("s", mediator.MaxSessionIDLen+1), "x", nil, mediator.CodeUnknownSession},
		// Any other text is a session of its own, never a path to one.
		{"a session named like a path", "../s1", "x", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := countMemory(t, s)
			id, err := s.WriteMemory(ctx, tc.session, tc.text, tc.tags)
			if tc.code == "" {
				if err != nil || id <= 0 {
					t.Fatalf("WriteMemory = %d, %v", id, err)
				}
				return
			}
			wantCode(t, err, tc.code)
			if after := countMemory(t, s); after != before {
				t.Fatalf("a refused write changed the table: %d -> %d rows", before, after)
			}
		})
	}
}

// testMemoryDB is s's memory.db, opened (and made) if it was not.
func testMemoryDB(t testing.TB, s *Store) *sql.DB {
	t.Helper()
	db, err := s.memory(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func countMemory(t *testing.T, s *Store) int {
	t.Helper()
	var n int
	if err := testMemoryDB(t, s).QueryRow(`SELECT count(*) FROM memory_entries`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestMemoryQuota: the write that would pass MaxMemoryEntries is
// quota_exceeded and writes nothing; other sessions are not affected.
func TestMemoryQuota(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, freshDir(t))
	if _, err := s.WriteMemory(ctx, "full", "first", nil); err != nil {
		t.Fatal(err)
	}
	// Filling 100,000 entries one commit at a time takes minutes; the count
	// the quota reads is set to one below the limit instead.
	if _, err := testMemoryDB(t, s).Exec(`UPDATE memory_sessions SET entries = ? WHERE session_id = 'full'`, MaxMemoryEntries-1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.WriteMemory(ctx, "full", "the last one", nil); err != nil {
		t.Fatalf("the entry at the limit: %v", err)
	}
	_, err := s.WriteMemory(ctx, "full", "one too many", nil)
	wantCode(t, err, mediator.CodeQuotaExceeded)
	if n, _ := s.MemoryEntries(ctx, "full"); n != MaxMemoryEntries {
		t.Fatalf("count after the refusal = %d", n)
	}
	if hits, _ := s.SearchMemory(ctx, "full", "many", 0); len(hits) != 0 {
		t.Fatalf("the refused entry is searchable: %+v", hits)
	}
	if _, err := s.WriteMemory(ctx, "other", "still room", nil); err != nil {
		t.Fatalf("another session: %v", err)
	}
}

// TestMemorySearchRanksAndSnippets: the best match first, rank as the
// place, the matched words bracketed, tags searchable and returned, and
// limit respected.
func TestMemorySearchRanksAndSnippets(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, freshDir(t))
	write := func(text string, tags ...string) int64 {
		t.Helper()
		id, err := s.WriteMemory(ctx, "s", text, tags)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	weak := write("a long note that mentions the invoice once among many other unrelated words about the weather and lunch")
	strong := write("invoice invoice invoice: the invoice number", "billing")
	write("nothing relevant here")
	tagged := write("the quarterly numbers", "invoice-q3")

	hits, err := s.SearchMemory(ctx, "s", "invoice", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 3 || hits[0].ID != strong {
		t.Fatalf("hits = %+v; want 3 with %d first", hits, strong)
	}
	for i, h := range hits {
		if h.Rank != i+1 {
			t.Errorf("hit %d has rank %d", i, h.Rank)
		}
	}
	if !strings.Contains(hits[0].Snippet, "[invoice]") || hits[0].Tags[0] != "billing" {
		t.Fatalf("best hit = %+v", hits[0])
	}
	found := map[int64]bool{}
	for _, h := range hits {
		found[h.ID] = true
	}
	if !found[weak] || !found[tagged] {
		t.Fatalf("hits %+v miss the weak (%d) or the tagged (%d) entry", hits, weak, tagged)
	}
	// Every word must be there; case and diacritics do not matter.
	if hits, _ := s.SearchMemory(ctx, "s", "INVOICE Númber", 0); len(hits) != 1 || hits[0].ID != strong {
		t.Fatalf("two words: %+v", hits)
	}
	if hits, _ := s.SearchMemory(ctx, "s", "invoice", 1); len(hits) != 1 || hits[0].ID != strong {
		t.Fatalf("limit 1: %+v", hits)
	}
	for _, bad := range []int{-1, MaxMemoryLimit + 1} {
		_, err := s.SearchMemory(ctx, "s", "invoice", bad)
		wantCode(t, err, mediator.CodeBadRequest)
	}
	_, err = s.SearchMemory(ctx, "s", strings.Repeat("w ", MaxMemoryQueryTerms+1), 0)
	wantCode(t, err, mediator.CodeTooLarge)
	_, err = s.SearchMemory(ctx, "s", strings.Repeat("w", MaxMemoryQueryBytes+1), 0)
	wantCode(t, err, mediator.CodeTooLarge)
}

// TestMemorySessionsApart: a session never finds another's entries, even
// when the sessions' ids tokenize alike ("a-b" and "a.b"), look like a
// path to another ("../a.b"), differ only by case, or a query names the
// other session.
func TestMemorySessionsApart(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, freshDir(t))
	for _, w := range []struct{ session, text string }{
		{"a-b", "alpha secret"}, {"a.b", "alpha public"}, {"a", "alpha other"},
		{"../a.b", "alpha climbing"}, {"A.B", "alpha upper"},
	} {
		if _, err := s.WriteMemory(ctx, w.session, w.text, []string{"shared"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, session, query, want string
	}{
		{"own entry", "a.b", "alpha", "public"},
		{"tag", "a-b", "shared", "secret"},
		{"the other's word", "a.b", "secret", ""},
		{"the other's session id", "a.b", "a-b", ""},
		{"a column filter", "a.b", "text:secret", ""},
		{"a session with no memory", "nobody", "alpha", ""},
		{"an id like a path is its own session", "../a.b", "alpha", "climbing"},
		{"ids differ by case", "A.B", "alpha", "upper"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hits, err := s.SearchMemory(ctx, tc.session, tc.query, MaxMemoryLimit)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if len(hits) != 0 {
					t.Fatalf("found %+v", hits)
				}
				return
			}
			if len(hits) != 1 || !strings.Contains(hits[0].Snippet, tc.want) {
				t.Fatalf("hits = %+v; want only the entry with %q", hits, tc.want)
			}
		})
	}
}

// TestMemoryHostileQueries: no query is search syntax. Operators, prefix
// stars, column filters, NEAR, parentheses and unbalanced quotes either
// find the entries holding those words or nothing; none is an error, and
// none finds more than the plain words would.
func TestMemoryHostileQueries(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, freshDir(t))
	for _, text := range []string{"apple pie recipe", "applesauce jar", "banana bread", `quote "marks" inside`} {
		if _, err := s.WriteMemory(ctx, "s", text, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.WriteMemory(ctx, "other", "apple banana everything", nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, query string
		want        int
	}{
		{"plain word", "apple", 1},
		{"lone quote", `"`, 0},
		{"unbalanced quote", `"apple`, 1},
		{"quote inside", `app"le`, 0},
		{"escaped quote", `""apple""`, 1},
		{"quoted word", `"marks"`, 1},
		{"prefix star", "app*", 0},
		{"star alone", "*", 0},
		{"OR", "apple OR banana", 0},
		{"NOT", "apple NOT banana", 0},
		{"lower-case or", "apple or", 0},
		{"NEAR group", "NEAR(apple banana)", 0},
		{"NEAR unbalanced", "NEAR(apple", 0},
		{"column filter", "text:apple", 0},
		{"column filter on tags", "tags:apple", 0},
		{"column set", "{text tags}:banana", 0},
		{"negated column", "-text:apple", 0},
		{"parentheses", "(apple)", 1},
		{"unbalanced parenthesis", "apple)", 1},
		{"caret", "^apple", 1},
		{"plus", "apple + pie", 1},
		{"only punctuation", `"() * : ^ + -`, 0},
		{"empty", "", 0},
		{"spaces", "   \t\n ", 0},
		{"NUL inside", "apple\x00pie", 1},
		{"control characters", "\x01apple\x1b", 1},
		{"SQL", "apple'; DROP TABLE memory_entries; --", 0},
		{"unicode words", "äpple", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hits, err := s.SearchMemory(ctx, "s", tc.query, MaxMemoryLimit)
			if err != nil {
				t.Fatalf("SearchMemory(%q): %v", tc.query, err)
			}
			if len(hits) != tc.want {
				t.Fatalf("SearchMemory(%q) = %+v; want %d hits", tc.query, hits, tc.want)
			}
			for _, h := range hits {
				if strings.Contains(h.Snippet, "everything") {
					t.Fatalf("found the other session's entry: %+v", h)
				}
			}
		})
	}
	_, err := s.SearchMemory(ctx, "s", "bad \xff", 0)
	wantCode(t, err, mediator.CodeBadRequest)
	if n := countMemory(t, s); n != 5 {
		t.Fatalf("the table has %d rows after the queries", n)
	}
}

// TestMemoryRanksTheNewestCandidates: past MaxMemoryCandidates matches,
// only the newest are ranked, so the best match among older ones is left
// out of a search for a common word and found by a word of its own.
func TestMemoryRanksTheNewestCandidates(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, freshDir(t))
	oldest, err := s.WriteMemory(ctx, "s", "common common common common rare", nil)
	if err != nil {
		t.Fatal(err)
	}
	// The newer entries are written in one transaction as WriteMemory
	// writes each: thousands of durable commits would take seconds.
	db, _, num, err := s.memorySession(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for i := range int64(MaxMemoryCandidates) {
		id, text := num<<memoryIDBits|(oldest+1+i), "common and many other words in a longer entry"
		if _, err := tx.Exec(`INSERT INTO memory_entries (id, session_id, text, tags, created_at) VALUES (?, 's', ?, '', 0)`, id, text); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(`INSERT INTO `+memoryIndex(num)+` (rowid, text, tags) VALUES (?, ?, '')`, id, text); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tx.Exec(`UPDATE memory_sessions SET entries = ? WHERE session_id = 's'`, oldest+MaxMemoryCandidates); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		query      string
		wantOldest bool
	}{
		{"common", false},
		{"common rare", true},
	} {
		t.Run(tc.query, func(t *testing.T) {
			hits, err := s.SearchMemory(ctx, "s", tc.query, MaxMemoryLimit)
			if err != nil || len(hits) == 0 {
				t.Fatalf("%+v %v", hits, err)
			}
			if got := hits[0].ID == oldest; got != tc.wantOldest {
				t.Fatalf("first hit %+v; the oldest entry (%d) first: %v, want %v", hits[0], oldest, got, tc.wantOldest)
			}
		})
	}
}
