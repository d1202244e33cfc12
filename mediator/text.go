package mediator

import (
	"strings"
	"unicode/utf8"
)

// truncationMark ends a string that Truncate shortened, so a reader never
// takes a cut value for the whole one.
const truncationMark = "..."

// Truncate returns s as valid UTF-8 of at most n bytes. Invalid bytes
// become U+FFFD first; a string that is still longer than n is cut on a
// rune boundary and ends with "..." (inside the n bytes). It is the one
// helper for bounding text that came from outside: agent ids in errors,
// denial fields, URLs in messages.
func Truncate(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if len(s) <= n {
		return s
	}
	if n <= len(truncationMark) {
		return cutOnRune(s, n)
	}
	return cutOnRune(s, n-len(truncationMark)) + truncationMark
}

// cutOnRune returns the longest prefix of valid UTF-8 s of at most n bytes
// that ends on a rune boundary.
func cutOnRune(s string, n int) string {
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
