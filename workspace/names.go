package workspace

import (
	"fmt"
	"unicode/utf8"
)

// badName says why a name an agent gave may not be used, or "". A name
// holding a control character or a bidirectional control is refused
// whole: ESC starts a terminal escape sequence, "\r" and "\n" make one
// name look like several lines of a listing, and the bidi controls make a
// name display in another order than it is spelled ("txt.exe" shown as
// "exe.txt"). Each such name would later reach a person (ls, find, the
// viewer, a prompt) looking like something it is not, and no honest file
// needs one. Invalid UTF-8 is refused too: there is no one way to show it.
func badName(name string) string {
	if !utf8.ValidString(name) {
		return "not valid UTF-8"
	}
	for _, r := range name {
		switch {
		case r < 0x20 || r >= 0x7f && r <= 0x9f:
			return fmt.Sprintf("a name holding the control character U+%04X", r)
		case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
			return fmt.Sprintf("a name holding the bidirectional control U+%04X", r)
		}
	}
	return ""
}
