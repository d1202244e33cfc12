package mediator

import (
	"testing"
	"unicode/utf8"
)

// TestEscapeTerminal is the escaping of hostile names, one kind a row.
func TestEscapeTerminal(t *testing.T) {
	for _, tc := range []struct {
		name, in, want, text string
	}{
		{"plain", "notes.txt", "notes.txt", "notes.txt"},
		{"unicode", "日記 ünïcode", "日記 ünïcode", "日記 ünïcode"},
		{"clear screen", "a\x1b[2Jb", `a\x1b[2Jb`, `a\x1b[2Jb`},
		{"title", "\x1b]0;pwned\x07", `\x1b]0;pwned\x07`, `\x1b]0;pwned\x07`},
		{"carriage return", "ok\rEVIL", `ok\rEVIL`, `ok\rEVIL`},
		{"newline", "a\nfake line", `a\nfake line`, "a\nfake line"},
		{"tab", "a\tb", `a\tb`, "a\tb"},
		{"NUL and DEL", "a\x00b\x7f", `a\x00b\x7f`, `a\x00b\x7f`},
		{"RLO", "txt\u202eexe.sh", `txt\u202eexe.sh`, `txt\u202eexe.sh`},
		{"bidi isolates and marks", "\u2066\u2069\u200e\u200f\u061c\u202a", `\u2066\u2069\u200e\u200f\u061c\u202a`, `\u2066\u2069\u200e\u200f\u061c\u202a`},
		{"C1 NEL and CSI", "a\u0085b\u009bc", `a\u0085b\u009bc`, `a\u0085b\u009bc`},
		{"zero width and BOM", "a\u200bb\ufeff", `a\u200bb\ufeff`, `a\u200bb\ufeff`},
		{"line separator", "a\u2028b", `a\u2028b`, `a\u2028b`},
		{"tag character", "a\U000e0041", `a\U000e0041`, `a\U000e0041`},
		{"invalid UTF-8", "a\xffb\xc3", `a\xffb\xc3`, `a\xffb\xc3`},
		{"real U+FFFD", "a\uFFFDb", "a\uFFFDb", "a\uFFFDb"},
		{"backslash", `a\x1b`, `a\\x1b`, `a\x1b`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := EscapeTerminal(tc.in)
			if got != tc.want {
				t.Errorf("EscapeTerminal(%q) = %q; want %q", tc.in, got, tc.want)
			}
			if !utf8.ValidString(got) {
				t.Errorf("EscapeTerminal(%q) = %q is not UTF-8", tc.in, got)
			}
			for _, r := range got {
				if terminalUnsafe(r, false) {
					t.Errorf("EscapeTerminal(%q) = %q still holds U+%04X", tc.in, got, r)
				}
			}
			if txt := EscapeTerminalText(tc.in); txt != tc.text {
				t.Errorf("EscapeTerminalText(%q) = %q; want %q", tc.in, txt, tc.text)
			}
			// Names escaped first pass through the text escaping unchanged,
			// so one output can hold both.
			if again := EscapeTerminalText(got); again != got {
				t.Errorf("EscapeTerminalText(EscapeTerminal(%q)) = %q; want %q", tc.in, again, got)
			}
		})
	}
}

// TestEscapeTerminalUnambiguous: two different names never print the same.
func TestEscapeTerminalUnambiguous(t *testing.T) {
	names := []string{"\x1b", `\x1b`, "\n", `\n`, "\\", `\\`, "\u202e", `\u202e`, "\xff", `\xff`, "\uFFFD"}
	seen := map[string]string{}
	for _, n := range names {
		e := EscapeTerminal(n)
		if prev, ok := seen[e]; ok {
			t.Errorf("%q and %q both print as %q", prev, n, e)
		}
		seen[e] = n
	}
}

func BenchmarkEscapeTerminalPlain(b *testing.B) {
	for b.Loop() {
		_ = EscapeTerminal("a-plain-file-name_2026-11-26.txt")
	}
}
