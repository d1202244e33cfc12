package viewer

import (
	"bufio"
	"strings"
)

// The CSV export is opened in spreadsheets, and agent ids, URLs and reasons
// are attacker-chosen text. A spreadsheet runs a cell that starts with one
// of formulaTriggers. Quoting does not stop that, and a cell need not start
// where our field starts: a spreadsheet set to another list separator (`;`
// in many European locales, tab when pasting) or one that ignores quotes
// splits a field at every `,` `;` tab or line break, so `a;=2*21` holds the
// cell `=2*21` for it. csvSafe therefore defuses every piece any of these
// readers may split out, not only the field's start.
const (
	formulaTriggers = "=+-@\t\r"
	// cellBreaks end a cell for one reader or another: the separators of
	// the usual locales, and line breaks for readers that ignore quotes.
	cellBreaks = ",;\t\r\n"
)

// csvSafe puts a `'` in front of every piece of v that starts, after any
// spaces or double quotes a reader may strip, with a formula trigger. A
// spreadsheet shows a cell starting with `'` as text. Text that holds no
// risky piece is returned unchanged.
func csvSafe(v string) string {
	var b strings.Builder
	changed := false
	for i := 0; i < len(v); i++ {
		if (i == 0 || strings.IndexByte(cellBreaks, v[i-1]) >= 0) && risky(v[i:]) {
			if !changed {
				b.Grow(len(v) + 8)
				b.WriteString(v[:i])
				changed = true
			}
			b.WriteByte('\'')
		}
		if changed {
			b.WriteByte(v[i])
		}
	}
	if !changed {
		return v
	}
	return b.String()
}

// risky reports whether a piece of a field starts with a formula trigger
// once leading spaces and double quotes are stripped. The scan stops at the
// first other byte, which is at the latest the next break, so csvSafe stays
// linear in the field's length.
func risky(piece string) bool {
	piece = strings.TrimLeft(piece, ` "`)
	return piece != "" && strings.IndexByte(formulaTriggers, piece[0]) >= 0
}

// csvRow writes one record with every field quoted, so no reader has to
// guess where a field with a separator, a quote or a line break ends.
func csvRow(w *bufio.Writer, fields ...string) {
	for i, f := range fields {
		if i > 0 {
			w.WriteByte(',')
		}
		w.WriteByte('"')
		w.WriteString(strings.ReplaceAll(f, `"`, `""`))
		w.WriteByte('"')
	}
	w.WriteString("\r\n")
}
