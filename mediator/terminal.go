package mediator

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Text an agent chose (a file name, a denial's reason, an agent id, a
// remembered target) reaches a person's terminal through the CLI. A
// terminal obeys what it is sent: ESC starts a sequence that can clear
// the screen or set the window's title, '\r' and '\n' move the cursor so
// a name can overwrite or fake a line, and a bidi control reorders what
// follows it ("txt.exe" shown as "exe.txt"). EscapeTerminal makes such text
// inert and visible, as ls does for a terminal, in one form:
//
//	\\        a backslash (so the output is unambiguous: every '\' starts an escape)
//	\t \n \r  tab, newline, carriage return
//	\xHH      any other C0 control or DEL (\x1b for ESC), and each byte of
//	          invalid UTF-8 (\xff), two lower-case hex digits
//	\uHHHH    a C1 control (\u0085), a bidi control (\u202e) or another
//	          invisible format character (Unicode category Cf: \u200b,
//	          \ufeff, ...), the line and paragraph separators (\u2028,
//	          \u2029); four or more lower-case hex digits (\U000e0001 for
//	          a code point past U+FFFF: eight)
//
// Every other character is itself. The result is valid UTF-8 holding no
// control or format character, so it prints as exactly what it shows,
// and the original is recoverable from it.
func EscapeTerminal(s string) string {
	return escapeTerminal(s, false)
}

// EscapeTerminalText is EscapeTerminal for text that is meant to be read
// as lines (a file's contents printed by the CLI's shell to a terminal):
// '\n' and '\t' are kept as they are and a backslash is itself, every
// other character EscapeTerminal escapes is escaped the same way. It is
// inert (no sequence, no carriage return, no reordering reaches the
// terminal) but not unambiguous: a file may hold the text "\x1b". Text
// already passed through EscapeTerminal is unchanged by it, so names
// escaped on their own and the contents around them can share one output.
func EscapeTerminalText(s string) string {
	return escapeTerminal(s, true)
}

func escapeTerminal(s string, text bool) string {
	// The common case, plain text, costs one scan and no allocation.
	clean := true
	for i, r := range s {
		if r == utf8.RuneError || (r == '\\' && !text) || terminalUnsafe(r, text) {
			if r == utf8.RuneError {
				if _, n := utf8.DecodeRuneInString(s[i:]); n == 3 {
					continue // a real U+FFFD
				}
			}
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x`)
			writeHex(&b, uint32(s[i]), 2)
		case r == '\\' && !text:
			b.WriteString(`\\`)
		case !terminalUnsafe(r, text):
			b.WriteString(s[i : i+n])
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x80:
			b.WriteString(`\x`)
			writeHex(&b, uint32(r), 2)
		case r > 0xffff:
			b.WriteString(`\U`)
			writeHex(&b, uint32(r), 8)
		default:
			b.WriteString(`\u`)
			writeHex(&b, uint32(r), 4)
		}
		i += n
	}
	return b.String()
}

// terminalUnsafe reports whether r must not reach a terminal as itself:
// C0, DEL, C1, format characters (Cf: the bidi embeddings, overrides and
// isolates U+202A-U+202E and U+2066-U+2069, the marks U+200E, U+200F and
// U+061C, zero-width characters, the BOM, tag characters) and the line
// and paragraph separators. text keeps '\n' and '\t'.
func terminalUnsafe(r rune, text bool) bool {
	if r < 0x7f {
		return r < 0x20 && !(text && (r == '\n' || r == '\t'))
	}
	return r < 0xa0 || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Cf, r)
}

func writeHex(b *strings.Builder, v uint32, digits int) {
	const hex = "0123456789abcdef"
	for shift := (digits - 1) * 4; shift >= 0; shift -= 4 {
		b.WriteByte(hex[(v>>shift)&0xf])
	}
}
