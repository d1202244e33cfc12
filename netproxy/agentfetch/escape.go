package agentfetch

import (
	"encoding/binary"
	"unicode/utf8"
)

// A fetched body goes into the reply as the inside of a JSON string. Most
// bodies are text with few bytes to escape, so both functions below look
// at eight bytes at a time and go byte by byte only through a word that
// holds a quote, a backslash or a control character: a megabyte of text
// is measured and copied at memory speed instead of at one comparison
// chain per byte.

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// needsEscape reports whether any of the eight bytes of w is below 0x20,
// '"' or '\\'. Each test is exact for a word: a zero byte of v is found by
// (v-ones) & ^v & highs, and a byte below 0x20 by (w-0x20*ones) & ^w & highs
// (bytes of 0x80 and above, which UTF-8 sequences are made of, have their
// high bit set and are never counted).
func needsEscape(w uint64) bool {
	quote := w ^ ('"' * ones)
	backslash := w ^ ('\\' * ones)
	return ((w-0x20*ones)&^w|(quote-ones)&^quote|(backslash-ones)&^backslash)&highs != 0
}

// escapedLen is the length of b as the inside of a JSON string, and false
// when b is not valid UTF-8 (such a body goes as base64).
func escapedLen(b []byte) (int, bool) {
	if !utf8.Valid(b) {
		return 0, false
	}
	n := len(b)
	i := 0
	for ; i+8 <= len(b); i += 8 {
		if !needsEscape(binary.LittleEndian.Uint64(b[i:])) {
			continue
		}
		for _, c := range b[i : i+8] {
			n += int(escapeExtra[c])
		}
	}
	for _, c := range b[i:] {
		n += int(escapeExtra[c])
	}
	return n, true
}

// escapeExtra is how many bytes escaping each byte adds: one for the
// two-character escapes, five for \u00XX, none for the rest.
var escapeExtra = func() (t [256]uint8) {
	for c := range 0x20 {
		t[c] = 5
	}
	for _, c := range []byte{'"', '\\', '\n', '\r', '\t'} {
		t[c] = 1
	}
	return t
}()

// appendEscaped appends valid UTF-8 b as the inside of a JSON string:
// runs without a byte to escape are appended whole.
func appendEscaped(dst, b []byte) []byte {
	const hex = "0123456789abcdef"
	start := 0
	for i := 0; i < len(b); {
		if i+8 <= len(b) && !needsEscape(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
			continue
		}
		c := b[i]
		if escapeExtra[c] == 0 {
			i++
			continue
		}
		var esc string
		switch {
		case c == '"':
			esc = `\"`
		case c == '\\':
			esc = `\\`
		case c == '\n':
			esc = `\n`
		case c == '\r':
			esc = `\r`
		case c == '\t':
			esc = `\t`
		case c < 0x20:
			dst = append(dst, b[start:i]...)
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			i++
			start = i
			continue
		}
		dst = append(dst, b[start:i]...)
		dst = append(dst, esc...)
		i++
		start = i
	}
	return append(dst, b[start:]...)
}
