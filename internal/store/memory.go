package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentgate/nmhost/mediator"
)

// The bounds of a session's memory. An entry is a note an agent keeps for
// later runs of the same session, not a document store: a few KiB of text
// and a handful of labels. The entry count bounds what one session can
// make the database hold (about 400 MiB of text at the most) and keeps a
// search within its speed target (docs/performance.md).
const (
	// MaxMemoryTextBytes bounds an entry's text (UTF-8, not empty).
	MaxMemoryTextBytes = 4 << 10
	// MaxMemoryTags bounds an entry's tags.
	MaxMemoryTags = 8
	// MaxMemoryTagBytes bounds one tag; tags are 1..32 bytes of a-z, 0-9,
	// '-' and '_' (MemoryTagAlphabet), so a tag is never search syntax,
	// a separator or a confusable name.
	MaxMemoryTagBytes = 32
	// MaxMemoryEntries bounds the entries of one session; a write past it
	// is quota_exceeded.
	MaxMemoryEntries = 100_000
	// MaxMemoryQueryBytes bounds a search's query.
	MaxMemoryQueryBytes = 1 << 10
	// MaxMemoryQueryTerms bounds the words of a query: each is one more
	// index lookup.
	MaxMemoryQueryTerms = 16
	// DefaultMemoryLimit is how many hits a search returns when it asks for
	// none; MaxMemoryLimit is the most it may ask for.
	DefaultMemoryLimit = 10
	MaxMemoryLimit     = 50
)

// MemoryTagAlphabet is the bytes a tag may hold.
const MemoryTagAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789-_"

// Entry ids: a session's entries are a block of rowids, its number (set
// with its first entry) shifted left by memoryIDBits, plus the entry's
// place in the session (1, 2, ...). The id an agent sees is the place
// alone: it says nothing of other sessions.
//
// Each session's entries are indexed in an FTS5 table of their own,
// memory_fts_<number> (memoryIndex), made with the session's first entry
// and dropped with its memory (deleteMemoryTx). All of it is in
// memory.db (memory_db.go), never in nmhost.db, so that the tables'
// schema is parsed only by processes that use memory. bm25 counts how many
// entries hold a word, and their mean length, over the table it ranks
// in; over one shared table, a session's result order would say how
// common its words are in other sessions' memories. RATIONALE.md, "Why
// does each session's memory rank on its own?".
const (
	memoryIDBits = 20 // 1<<20 > MaxMemoryEntries
	memoryIDMask = 1<<memoryIDBits - 1
)

// memoryIndex is the name of the FTS5 table of the session numbered num.
// The name is made from the number the store assigned, never from the
// session's id, so it is always a plain identifier of bounded length.
func memoryIndex(num int64) string { return "memory_fts_" + strconv.FormatInt(num, 10) }

// createMemoryIndex makes the FTS5 table of the session numbered num:
// the entries' text and tags, no copy of the text (content=memory_entries:
// snippets read it from the entries, by rowid, which only ever names
// this session's entries), and bm25 as the rank with a tag match worth
// half a text match. A table left under that name (a migration run again
// on a database set back to an older version) is replaced: the number's
// entries are indexed afresh after this.
func createMemoryIndex(ctx context.Context, tx *sql.Tx, num int64) error {
	t := memoryIndex(num)
	_, err := tx.ExecContext(ctx, `DROP TABLE IF EXISTS `+t+`;
CREATE VIRTUAL TABLE `+t+` USING fts5(
	text, tags,
	content = 'memory_entries', content_rowid = 'id',
	tokenize = 'unicode61 remove_diacritics 2'
);
INSERT INTO `+t+` (`+t+`, rank) VALUES ('rank', 'bm25(1.0, 0.5)');`)
	return err
}

// deleteMemoryTx removes session's memory in tx, a memory.db
// transaction: its index, its entries and its number. Nothing of it is
// left to rank against or to find.
func deleteMemoryTx(ctx context.Context, tx *sql.Tx, sessionID string) error {
	var num int64
	err := tx.QueryRowContext(ctx, `SELECT num FROM memory_sessions WHERE session_id = ?`, sessionID).Scan(&num)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DROP TABLE IF EXISTS `+memoryIndex(num)); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM memory_entries WHERE id BETWEEN ? AND ?`, num<<memoryIDBits, num<<memoryIDBits|memoryIDMask); err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `DELETE FROM memory_sessions WHERE session_id = ?`, sessionID)
	return err
}

// MaxMemoryCandidates bounds the matches a search ranks: the newest ones,
// when a query's words are in more entries than this. A word in most of
// a full session's entries would otherwise cost a bm25 score for each;
// with the bound a search stays within its speed target (docs/performance.md)
// whatever it asks for, and a query of a few words rarely matches more.
const MaxMemoryCandidates = 2000

// WriteMemory adds an entry to session's memory and returns its id, its
// place among the session's entries (1 for the first). It refuses, and
// writes nothing, when the text is empty, not UTF-8 or over
// MaxMemoryTextBytes (too_large), when the tags break their bounds
// (bad_request, too_large), or when the session holds MaxMemoryEntries
// already (quota_exceeded). The session's memory exists with its first
// entry; the session's settings need not exist.
func (s *Store) WriteMemory(ctx context.Context, sessionID, text string, tags []string) (int64, error) {
	if err := mediator.ValidSessionID(sessionID); err != nil {
		return 0, err
	}
	if err := checkMemoryText(text); err != nil {
		return 0, err
	}
	if err := checkMemoryTags(tags); err != nil {
		return 0, err
	}
	joined := strings.Join(tags, " ")
	var seq int64
	// memory.db commits with synchronous=FULL: the entry is on disk when
	// memWrite returns, as a write through s.write would be.
	err := s.memWrite(ctx, func(tx *sql.Tx) error {
		var num int64
		err := tx.QueryRowContext(ctx, `SELECT num, entries FROM memory_sessions WHERE session_id = ?`, sessionID).Scan(&num, &seq)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			err = tx.QueryRowContext(ctx, `INSERT INTO memory_sessions (session_id, num, entries)
				SELECT ?, coalesce(max(num), 0) + 1, 0 FROM memory_sessions RETURNING num`, sessionID).Scan(&num)
			if err != nil {
				return err
			}
			// The session's own index, in the same transaction as its
			// number: a number never exists without its table.
			if err := createMemoryIndex(ctx, tx, num); err != nil {
				return err
			}
		case err != nil:
			return err
		}
		if seq >= MaxMemoryEntries {
			return mediator.Errorf(mediator.CodeQuotaExceeded, "the session's memory holds %d entries, its limit", MaxMemoryEntries)
		}
		seq++
		rowid := num<<memoryIDBits | seq
		if _, err := tx.ExecContext(ctx, `INSERT INTO memory_entries (id, session_id, text, tags, created_at) VALUES (?, ?, ?, ?, ?)`,
			rowid, sessionID, text, joined, s.now().UnixMilli()); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO `+memoryIndex(num)+` (rowid, text, tags) VALUES (?, ?, ?)`, rowid, text, joined); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE memory_sessions SET entries = ? WHERE session_id = ?`, seq, sessionID)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("session[%s] memory: %w", sessionID, err)
	}
	return seq, nil
}

// MemoryEntries is how many entries session's memory holds.
func (s *Store) MemoryEntries(ctx context.Context, sessionID string) (int, error) {
	_, n, _, err := s.memorySession(ctx, sessionID)
	return int(n), err
}

// memorySession is memory.db and session's entry count and number in
// it; 0, 0 when it has no memory, and a nil db when no session has any.
func (s *Store) memorySession(ctx context.Context, sessionID string) (db *sql.DB, entries, num int64, err error) {
	db, err = s.memory(ctx, false)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("session[%s] memory: %w", sessionID, err)
	}
	if db == nil {
		return nil, 0, 0, nil
	}
	err = db.QueryRowContext(ctx, `SELECT entries, num FROM memory_sessions WHERE session_id = ?`, sessionID).Scan(&entries, &num)
	if errors.Is(err, sql.ErrNoRows) {
		return db, 0, 0, nil
	}
	if err != nil {
		return nil, 0, 0, fmt.Errorf("session[%s] memory: %w", sessionID, storeErr("read", err))
	}
	return db, entries, num, nil
}

// memoryCutoffSQL finds where a session's newest MaxMemoryCandidates
// matches begin: FTS5 walks the session's index newest first and stops
// there, scoring nothing. The MATCH expression is memoryMatch's, quoted
// words only.
func memoryCutoffSQL(num int64) string {
	t := memoryIndex(num)
	return `SELECT rowid FROM ` + t + ` WHERE ` + t + ` MATCH ?1 ORDER BY rowid DESC LIMIT 1 OFFSET ?2`
}

// memorySearchSQL ranks the matches from the cutoff on by the session's
// index's rank (bm25 over the session's entries alone, a tag match worth
// half a text match), which FTS5 sorts itself, so the snippets are made
// for the rows returned only. The session_id filter is a second guard:
// the table holds no other session's rowid.
func memorySearchSQL(num int64) string {
	t := memoryIndex(num)
	return `SELECT e.id, snippet(` + t + `, 0, '[', ']', '…', 16), e.tags
FROM ` + t + ` JOIN memory_entries e ON e.id = ` + t + `.rowid
WHERE ` + t + ` MATCH ?1 AND ` + t + `.rowid >= ?2 AND e.session_id = ?3
ORDER BY ` + t + `.rank LIMIT ?4`
}

// SearchMemory returns session's entries that hold every word of query,
// best first (bm25 over text and tags, a tag worth half, with the
// statistics of the session's own entries: nothing of the order, the
// ranks or the snippets depends on another session), at most limit (0:
// DefaultMemoryLimit), ranked among the newest MaxMemoryCandidates
// matches. The query is untrusted text,
// never search syntax: it is split into words, each word is matched as a
// quoted phrase, and quotes, '*', NEAR, column names and parentheses are
// only characters. A query with no word in it finds nothing. It refuses a
// query that is not UTF-8 (bad_request), over MaxMemoryQueryBytes or
// MaxMemoryQueryTerms words (too_large), and a limit outside
// 0..MaxMemoryLimit (bad_request).
func (s *Store) SearchMemory(ctx context.Context, sessionID, query string, limit int) ([]mediator.MemoryHit, error) {
	if err := mediator.ValidSessionID(sessionID); err != nil {
		return nil, err
	}
	match, err := memoryMatch(query)
	if err != nil {
		return nil, err
	}
	switch {
	case limit == 0:
		limit = DefaultMemoryLimit
	case limit < 0 || limit > MaxMemoryLimit:
		return nil, mediator.Errorf(mediator.CodeBadRequest, "limit must be 1..%d (0 for %d), not %d", MaxMemoryLimit, DefaultMemoryLimit, limit)
	}
	hits := []mediator.MemoryHit{}
	if match == "" {
		return hits, nil
	}
	db, _, num, err := s.memorySession(ctx, sessionID)
	if err != nil || num == 0 {
		return hits, err
	}
	cut := int64(0)
	err = db.QueryRowContext(ctx, memoryCutoffSQL(num), match, MaxMemoryCandidates-1).Scan(&cut)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("session[%s] memory: %w", sessionID, storeErr("search", err))
	}
	rows, err := db.QueryContext(ctx, memorySearchSQL(num), match, cut, sessionID, limit)
	if err != nil {
		return nil, fmt.Errorf("session[%s] memory: %w", sessionID, storeErr("search", err))
	}
	defer rows.Close()
	for rows.Next() {
		var h mediator.MemoryHit
		var tags string
		if err := rows.Scan(&h.ID, &h.Snippet, &tags); err != nil {
			return nil, fmt.Errorf("session[%s] memory: %w", sessionID, storeErr("search", err))
		}
		h.ID &= memoryIDMask
		h.Tags = strings.Fields(tags)
		if h.Tags == nil {
			h.Tags = []string{}
		}
		h.Rank = len(hits) + 1
		hits = append(hits, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("session[%s] memory: %w", sessionID, storeErr("search", err))
	}
	return hits, nil
}

// memoryMatch turns an untrusted query into an FTS5 expression: each word
// of the query as a quoted phrase (a '"' in it doubled, FTS5's escape),
// all of them required. A
// quoted phrase is only ever words to the tokenizer, so no character of
// the query can be an operator, a prefix '*', a column filter or a group.
// Words with no letter or digit are dropped: the tokenizer would find no
// word in them. "" means the query has no word and finds nothing.
func memoryMatch(query string) (string, error) {
	if len(query) > MaxMemoryQueryBytes {
		return "", mediator.Errorf(mediator.CodeTooLarge, "the query is %d bytes; the limit is %d", len(query), MaxMemoryQueryBytes)
	}
	if !utf8.ValidString(query) {
		return "", mediator.Errorf(mediator.CodeBadRequest, "the query is not UTF-8 text")
	}
	words := strings.FieldsFunc(query, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) })
	words = slices.DeleteFunc(words, func(w string) bool {
		return !strings.ContainsFunc(w, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) })
	})
	if len(words) > MaxMemoryQueryTerms {
		return "", mediator.Errorf(mediator.CodeTooLarge, "the query has %d words; the limit is %d", len(words), MaxMemoryQueryTerms)
	}
	if len(words) == 0 {
		return "", nil
	}
	var b strings.Builder
	for i, w := range words {
		if i > 0 {
			b.WriteString(" AND ")
		}
		b.WriteString(`"` + strings.ReplaceAll(w, `"`, `""`) + `"`)
	}
	return b.String(), nil
}

func checkMemoryText(text string) error {
	switch {
	case text == "":
		return mediator.Errorf(mediator.CodeBadRequest, "an entry's text must not be empty")
	case len(text) > MaxMemoryTextBytes:
		return mediator.Errorf(mediator.CodeTooLarge, "an entry's text is %d bytes; the limit is %d", len(text), MaxMemoryTextBytes)
	case !utf8.ValidString(text) || strings.ContainsRune(text, 0):
		return mediator.Errorf(mediator.CodeBadRequest, "an entry's text must be UTF-8 text without NUL")
	}
	return nil
}

func checkMemoryTags(tags []string) error {
	if len(tags) > MaxMemoryTags {
		return mediator.Errorf(mediator.CodeTooLarge, "an entry has %d tags; the limit is %d", len(tags), MaxMemoryTags)
	}
	for i, t := range tags {
		if t == "" || len(t) > MaxMemoryTagBytes || strings.Trim(t, MemoryTagAlphabet) != "" {
			return mediator.Errorf(mediator.CodeBadRequest, "tag %q must be 1-%d bytes of %s", mediator.Truncate(t, 40), MaxMemoryTagBytes, MemoryTagAlphabet)
		}
		if slices.Contains(tags[:i], t) {
			return mediator.Errorf(mediator.CodeBadRequest, "tag %q is given twice", t)
		}
	}
	return nil
}
