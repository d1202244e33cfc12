package frame

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"
)

var benchSizes = []struct {
	name string
	size int
}{
	{"small-200B", 200},
	{"large-512KiB", 512 << 10},
}

func BenchmarkEncode(b *testing.B) {
	for _, s := range benchSizes {
		b.Run(s.name, func(b *testing.B) {
			msg := jsonPayload(s.size)
			w := NewWriter(io.Discard)
			b.SetBytes(int64(len(msg)))
			b.ReportAllocs()
			for b.Loop() {
				if err := w.Write(msg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// repeatReader serves the same bytes forever.
type repeatReader struct {
	data []byte
	off  int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := copy(p, r.data[r.off:])
	r.off = (r.off + n) % len(r.data)
	return n, nil
}

func BenchmarkDecode(b *testing.B) {
	for _, s := range benchSizes {
		b.Run(s.name, func(b *testing.B) {
			var buf bytes.Buffer
			if err := NewWriter(&buf).Write(jsonPayload(s.size)); err != nil {
				b.Fatal(err)
			}
			r := NewReader(&repeatReader{data: buf.Bytes()})
			b.SetBytes(int64(s.size))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.Next(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkSplit3MiB(b *testing.B) {
	payload := jsonPayload(3 << 20)
	id := json.RawMessage(`"7"`)
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Split(id, payload); err != nil {
			b.Fatal(err)
		}
	}
}
