package mediator

import (
	"strings"
	"testing"
)

// TestValidSessionID: any UTF-8 text of 1-256 bytes without control
// characters is a session id; the rest is unknown_session.
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
