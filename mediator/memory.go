package mediator

// MemoryHit is one entry a memory search found: the session's own entry,
// a snippet of its text with the matched words in [brackets], its tags,
// and its place in the ranking (1 is the best match). The place, not the
// score: a score is computed from statistics over every session's entries,
// and a session must learn nothing about another's.
type MemoryHit struct {
	ID      int64    `json:"id"`
	Snippet string   `json:"snippet"`
	Tags    []string `json:"tags"`
	Rank    int      `json:"rank"`
}
