package netproxy

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
)

// fixtureRow is one line of a testdata table: a Go-quoted string and a
// bare word, in either order, then an optional "# comment".
type fixtureRow struct {
	line   int
	quoted string // the unquoted value
	word   string
}

// readFixture parses testdata/<name>. quotedFirst says whether the quoted
// field comes first on each row.
func readFixture(t *testing.T, name string, quotedFirst bool) []fixtureRow {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []fixtureRow
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		r := fixtureRow{line: n}
		takeQuoted := func() {
			q, err := strconv.QuotedPrefix(line)
			if err != nil {
				t.Fatalf("%s:%d: bad quoted field: %v", name, n, err)
			}
			if r.quoted, err = strconv.Unquote(q); err != nil {
				t.Fatalf("%s:%d: %v", name, n, err)
			}
			line = strings.TrimSpace(line[len(q):])
		}
		takeWord := func() {
			i := strings.IndexAny(line, " \t")
			if i < 0 {
				i = len(line)
			}
			r.word, line = line[:i], strings.TrimSpace(line[i:])
		}
		if quotedFirst {
			takeQuoted()
			takeWord()
		} else {
			takeWord()
			takeQuoted()
		}
		if line != "" && !strings.HasPrefix(line, "#") {
			t.Fatalf("%s:%d: trailing text %q", name, n, line)
		}
		rows = append(rows, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rows) < 10 {
		t.Fatalf("%s: only %d rows", name, len(rows))
	}
	return rows
}
