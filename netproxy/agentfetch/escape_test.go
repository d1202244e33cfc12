package agentfetch

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"testing"
	"unicode/utf8"
)

// escapeOneByOne is the byte-at-a-time escaping the word-at-a-time one
// must agree with.
func escapeOneByOne(b []byte) []byte {
	var out []byte
	for _, c := range b {
		switch {
		case c == '"':
			out = append(out, `\"`...)
		case c == '\\':
			out = append(out, `\\`...)
		case c == '\n':
			out = append(out, `\n`...)
		case c == '\r':
			out = append(out, `\r`...)
		case c == '\t':
			out = append(out, `\t`...)
		case c < 0x20:
			out = append(out, `\u00`...)
			out = append(out, strconv.FormatInt(int64(c)>>4, 16)...)
			out = append(out, strconv.FormatInt(int64(c)&0xf, 16)...)
		default:
			out = append(out, c)
		}
	}
	return out
}

// TestEscapeAgreesByteByByte: for every byte value at every position of
// a word, and for random text, the fast escaping writes what the simple
// one does, its length is what escapedLen says, and the result is a JSON
// string that decodes to the input.
func TestEscapeAgreesByteByByte(t *testing.T) {
	var inputs [][]byte
	for c := range 128 {
		for pos := range 11 {
			b := bytes.Repeat([]byte("a"), 11)
			b[pos] = byte(c)
			inputs = append(inputs, b)
		}
	}
	inputs = append(inputs, []byte(""), []byte("é\"ü\\\x7f😀\u2028"), bytes.Repeat([]byte("é"), 33))
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("abc \"\\\n\r\t\x00\x01\x1f\x7f")
	for range 500 {
		b := make([]byte, r.IntN(70))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		inputs = append(inputs, append(b, "ñ"...))
	}
	for _, b := range inputs {
		if !utf8.Valid(b) {
			continue
		}
		want := escapeOneByOne(b)
		got := appendEscaped([]byte("x"), b)[1:]
		if !bytes.Equal(got, want) {
			t.Fatalf("appendEscaped(%q) = %q; want %q", b, got, want)
		}
		if n, ok := escapedLen(b); !ok || n != len(want) {
			t.Fatalf("escapedLen(%q) = %d, %v; want %d", b, n, ok, len(want))
		}
		var s string
		if err := json.Unmarshal(append(append([]byte(`"`), got...), '"'), &s); err != nil || s != string(b) {
			t.Fatalf("%q does not decode back to %q: %v", got, b, err)
		}
	}
}

func BenchmarkEscape1MiB(b *testing.B) {
	body := bytes.Repeat([]byte("some ordinary text, with a \"quote\" now and then.\n"), 1<<20/50)
	dst := make([]byte, 0, 2<<20)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, ok := escapedLen(body); !ok {
			b.Fatal("not UTF-8")
		}
		dst = appendEscaped(dst[:0], body)
	}
}
