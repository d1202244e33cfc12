package frame

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"runtime"
	"strconv"
	"testing"
)

// FuzzReader feeds arbitrary bytes to a Reader: it must never panic, never
// return a frame over its limit, end with io.EOF or a truncation error, and
// allocate no more than about twice the input plus a constant, whatever
// lengths the headers claim.
func FuzzReader(f *testing.F) {
	f.Add([]byte{}, uint16(0))
	f.Add(enc(`{"id":1,"type":"grant"}`), uint16(64))
	f.Add(cat(hdr(0xFFFFFFFF), []byte("abc")), uint16(0))
	f.Add(cat(hdr(60<<20), []byte(`{"id":1`)), uint16(0))
	f.Add(cat(enc("0123456789abcdef0123"), enc("{}")), uint16(8))
	f.Add(cat(hdr(0), hdr(0), enc("{}")), uint16(16))
	f.Add([]byte{1, 2}, uint16(3))
	f.Fuzz(func(t *testing.T, in []byte, max uint16) {
		// max 0 means the production limit; otherwise a small one, so the
		// skip path is exercised with small inputs.
		limit := MaxInbound
		if max != 0 {
			limit = int(max)
		}
		r := NewReaderSize(bytes.NewReader(in), limit)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		var total int
		for i := 0; ; i++ {
			b, err := r.Next()
			if err != nil {
				if err != io.EOF && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, ErrTooLarge) {
					t.Fatalf("unexpected error %v", err)
				}
				if errors.Is(err, ErrTooLarge) {
					continue
				}
				break
			}
			if len(b) > limit {
				t.Fatalf("frame %d of %d bytes over the limit %d", i, len(b), limit)
			}
			if b == nil {
				t.Fatal("nil frame without error")
			}
			total += 4 + len(b)
			if total > len(in) {
				t.Fatalf("returned %d bytes from %d of input", total, len(in))
			}
		}
		runtime.ReadMemStats(&after)
		// Each frame's body is allocated once (twice when it arrives in
		// chunks); a lying header costs at most one chunk. The constant
		// covers the runtime's own noise.
		if got, bound := after.TotalAlloc-before.TotalAlloc, uint64(2*len(in)+4*directRead); got > bound {
			t.Fatalf("allocated %d bytes for %d bytes of input (bound %d)", got, len(in), bound)
		}
	})
}

// FuzzSplitJoin checks that Join(Split(x)) == x for any payload and id,
// that every frame fits the limit, and that Split refuses ids that are not
// JSON. The limit is small so short fuzz inputs still need chunks.
func FuzzSplitJoin(f *testing.F) {
	f.Add([]byte(`"7"`), []byte(`{"id":"7","success":true,"data":"hello world, a long enough reply"}`), uint16(40))
	f.Add([]byte(``), bytes.Repeat([]byte{0xff, 0x00, 'a'}, 200), uint16(100))
	f.Add([]byte(`12345`), []byte{}, uint16(0))
	f.Add([]byte(` "a" `), bytes.Repeat([]byte("x"), 5000), uint16(1000))
	f.Add([]byte(`{"nested":[1,2]}`), bytes.Repeat([]byte("y"), 301), uint16(77))
	f.Add([]byte(`{`), bytes.Repeat([]byte("z"), 300), uint16(10))
	f.Fuzz(func(t *testing.T, id, payload []byte, lim uint16) {
		limit := 64 + int(lim)%4096
		frames, err := splitLimit(json.RawMessage(id), payload, limit)
		if len(payload) <= limit {
			if err != nil || len(frames) != 1 || !bytes.Equal(frames[0], payload) {
				t.Fatalf("small payload: frames=%d err=%v", len(frames), err)
			}
			return
		}
		if _, idErr := compactID(id); idErr != nil {
			if err == nil {
				t.Fatalf("Split accepted id %q", id)
			}
			return
		}
		// Split may refuse only when the envelope leaves no room for one
		// base64 quantum (4 characters).
		cid, _ := compactID(id)
		envelope := len(`{"id":,"chunk":{"seq":,"total":,"data":""}}`) + len(cid) + 2*len(strconv.Itoa(len(payload)))
		if err != nil {
			if limit-envelope >= 4 {
				t.Fatalf("Split(%d-byte id, %d bytes, limit %d): %v", len(id), len(payload), limit, err)
			}
			return
		}
		for i, fr := range frames {
			if len(fr) > limit {
				t.Fatalf("frame %d is %d bytes, limit %d", i, len(fr), limit)
			}
			if !json.Valid(fr) {
				t.Fatalf("frame %d is not JSON: %q", i, fr)
			}
		}
		got, err := Join(frames)
		if len(frames) > maxChunks {
			if !errors.Is(err, ErrChunk) {
				t.Fatalf("Join of %d frames: %v", len(frames), err)
			}
			return
		}
		if err != nil {
			t.Fatalf("Join: %v", err)
		}
		if !bytes.Equal(got, payload) {
			t.Fatalf("round trip differs: %d bytes in, %d out", len(payload), len(got))
		}
	})
}

// FuzzAssembler feeds arbitrary frames to an Assembler: no panics, and a
// completed result never exceeds its bound.
func FuzzAssembler(f *testing.F) {
	f.Add(chunk(`1`, 0, 2, "ab"), chunk(`1`, 1, 2, "cd"))
	f.Add(chunk(`1`, 0, 1, "x"), []byte(`{"id":1,"chunk":{"seq":0,"total":1,"data":""}}`))
	f.Add([]byte(`{"id":null,"chunk":{"seq":1,"total":2,"data":"AAAA"}}`), []byte(`{"chunk":null}`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		as := Assembler{Max: 1 << 10}
		for _, fr := range [][]byte{a, b} {
			done, err := as.Add(fr)
			if err != nil {
				return
			}
			if done {
				got, err := as.Bytes()
				if err != nil || len(got) > 1<<10 {
					t.Fatalf("done but Bytes: %d bytes, %v", len(got), err)
				}
				return
			}
		}
	})
}
