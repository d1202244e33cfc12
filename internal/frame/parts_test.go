package frame

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// TestSplitPartsMatchesSplit: however the payload is cut into parts, the
// frames are those Split makes of it whole, each with room for its header.
func TestSplitPartsMatchesSplit(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 400 {
		payload := make([]byte, r.IntN(300))
		for j := range payload {
			payload[j] = byte(r.IntN(256))
		}
		var parts [][]byte
		for rest := payload; ; {
			n := min(len(rest), r.IntN(8)*r.IntN(20))
			parts = append(parts, rest[:n])
			if rest = rest[n:]; len(rest) == 0 {
				break
			}
		}
		if i%5 == 0 {
			parts = append(parts, nil) // an empty part anywhere is nothing
		}
		limit := 60 + r.IntN(200)
		want, err := splitLimit([]byte(`"r1"`), payload, limit)
		if err != nil {
			t.Fatal(err)
		}
		var got [][]byte
		err = splitParts([]byte(`"r1"`), parts, limit, func(f []byte) error {
			got = append(got, bytes.Clone(f[HeaderSize:]))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("payload of %d bytes in %d parts, limit %d: %d frames, want %d", len(payload), len(parts), limit, len(got), len(want))
		}
		for k := range want {
			if !bytes.Equal(got[k], want[k]) {
				t.Fatalf("payload of %d bytes in %d parts, limit %d: frame %d\n got %s\nwant %s", len(payload), len(parts), limit, k, got[k], want[k])
			}
		}
		if len(want) > 1 {
			joined, err := Join(got)
			if err != nil || !bytes.Equal(joined, payload) {
				t.Fatalf("join: %v", err)
			}
		}
	}
}

// TestWriteFramed: the frame is the buffer after its header's room, and
// the limits and the broken state are Write's.
func TestWriteFramed(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out)
	if err := w.WriteFramed(append(make([]byte, HeaderSize), `{"a":1}`...)); err != nil {
		t.Fatal(err)
	}
	if n := binary.NativeEndian.Uint32(out.Bytes()); n != 7 || out.String()[4:] != `{"a":1}` {
		t.Fatalf("wrote %q", out.Bytes())
	}
	if err := w.WriteFramed(make([]byte, HeaderSize+MaxOutbound+1)); err == nil {
		t.Fatal("a frame over MaxOutbound was written")
	}
	if err := w.WriteFramed([]byte{1}); err == nil {
		t.Fatal("a buffer without room for the header was written")
	}
	r := NewReader(&out)
	if msg, err := r.Next(); err != nil || string(msg) != `{"a":1}` {
		t.Fatalf("read back %q %v", msg, err)
	}
}
