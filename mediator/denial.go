package mediator

import (
	"strconv"
	"time"
)

// Denial is one record of the denial log: every denial, from any layer, is
// one of these, written before the reply that reports it is sent.
type Denial struct {
	ID         int64         `json:"id"`         // assigned by the store; increases with time of writing
	AgentID    string        `json:"agentId"`    // may be an unknown or invalid id, recorded as given (bounded)
	Permission string        `json:"permission"` // the permission the call needed, e.g. "network.fetch"
	Timestamp  int64         `json:"timestamp"`  // ms since the Unix epoch
	Code       Code          `json:"code"`
	Context    DenialContext `json:"context"`
}

// DenialContext says what was refused and why.
type DenialContext struct {
	URL     string            `json:"url,omitempty"`    // the refused URL, redirect hop included
	Reason  string            `json:"reason"`           // a sentence for people
	Layer   string            `json:"layer,omitempty"`  // who refused: "host" (this process) or "extension"
	Method  string            `json:"method,omitempty"` // HTTP method or API function
	Origin  string            `json:"origin,omitempty"` // the caller origin of the host process
	Details map[string]string `json:"details,omitempty"`
}

// DenialFilter selects denial records. The zero value selects the newest
// page of everything.
type DenialFilter struct {
	AgentID    string `json:"agentId,omitempty"`
	Permission string `json:"permission,omitempty"`
	Code       Code   `json:"code,omitempty"`
	Since      int64  `json:"since,omitempty"`    // ms, inclusive; 0 = no lower bound
	Until      int64  `json:"until,omitempty"`    // ms, exclusive; 0 = no upper bound
	BeforeID   int64  `json:"beforeId,omitempty"` // paging cursor: records with a smaller id (newest first)
	AfterID    int64  `json:"afterId,omitempty"`  // tailing cursor: records with a larger id (oldest first)
	Limit      int    `json:"limit,omitempty"`    // default 100, at most 1000
}

// DenialPage is one page of denial records.
type DenialPage struct {
	Denials []Denial `json:"denials"`
	// NextBeforeID, when non-zero, fetches the next (older) page.
	NextBeforeID int64 `json:"nextBeforeId,omitempty"`
}

// ParseFilterTime parses a DenialFilter bound as people and programs give
// it: ms since the epoch, RFC 3339, or a duration ago ("90m" is now minus
// 90 minutes). "" is no bound (0). A time before 1970 is refused: 0 means
// "unbounded" to the filter, and a negative bound is no bound a person meant.
func ParseFilterTime(s string, now time.Time) (int64, error) {
	if s == "" {
		return 0, nil
	}
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		if d, derr := time.ParseDuration(s); derr == nil {
			ms, err = now.Add(-d).UnixMilli(), nil
		} else if t, terr := time.Parse(time.RFC3339, s); terr == nil {
			ms, err = t.UnixMilli(), nil
		}
	}
	if err != nil {
		return 0, Errorf(CodeBadRequest, "time %q is not ms since the epoch, RFC 3339 or a duration ago", truncate(s, 40))
	}
	if ms < 0 {
		return 0, Errorf(CodeBadRequest, "time %q is before 1970", truncate(s, 40))
	}
	return ms, nil
}
