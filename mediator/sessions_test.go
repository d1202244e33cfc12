package mediator

import (
	"strings"
	"testing"
)

// TestValidSessionID: any UTF-8 text of 1-256 bytes without control
// or format characters is a session id; the rest is unknown_session.
func TestValidSessionID(t *testing.T) {
	for _, tc := range []struct {
		name, id string
		ok       bool
	}{
		{"portable", "chat-001", true},
		{"spaces and slash", "chat 2026/11", true},
		{"dot dot", "..", true},
		{"climb", "a/../b", true},
		{"device name", "CON", true},
		{"unicode", "日記 ．．／", true},
		{"256 bytes", strings.Repeat("x", MaxSessionIDLen), true},
		{"empty", "", false},
		{"257 bytes", strings.Repeat("x", MaxSessionIDLen+1), false},
		{"NUL", "a\x00b", false},
		{"newline", "a\nb", false},
		{"escape", "\x1b[31m", false},
		{"DEL", "\x7f", false},
		{"C1 NEL", "a\u0085", false},
		{"invalid UTF-8", "a\xc3", false},
		{"RLO", "chat\u202etxt.exe", false},
		{"LRE", "a\u202ab", false},
		{"PDF", "a\u202cb", false},
		{"RLI", "a\u2067b", false},
		{"PDI", "a\u2069b", false},
		{"LRM", "a\u200eb", false},
		{"RLM", "a\u200fb", false},
		{"ALM", "a\u061cb", false},
		{"zero width space", "ch\u200bat", false},
		{"zero width joiner", "ch\u200dat", false},
		{"BOM", "\ufeffchat", false},
		{"soft hyphen", "ch\u00adat", false},
		{"tag character", "chat\U000e0041", false},
		{"line separator", "a\u2028b", false},
		{"paragraph separator", "a\u2029b", false},
		{"arabic and hebrew letters", "שלום مرحبا", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidSessionID(tc.id)
			if tc.ok && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !tc.ok && CodeOf(err) != CodeUnknownSession {
				t.Fatalf("code %q; want %s", CodeOf(err), CodeUnknownSession)
			}
		})
	}
}
