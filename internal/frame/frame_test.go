package frame

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// enc returns body as one frame.
func enc(body string) []byte {
	return append(hdr(uint32(len(body))), body...)
}

func hdr(n uint32) []byte {
	var h [4]byte
	binary.NativeEndian.PutUint32(h[:], n)
	return h[:]
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// zeros is an endless source of zero bytes, for frames too large to hold
// in a test's memory.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// allocated returns the bytes allocated while f runs. Tests that use it do
// not run in parallel, so the figure is f's own (plus runtime noise).
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// step is what one call to Next should return.
type step struct {
	body   string // expected body when err is nil
	err    error  // expected errors.Is target, or nil
	nonNil bool   // body must be a non-nil slice (zero-length frames)
}

func TestReaderHostileFrames(t *testing.T) {
	many := make([][]byte, 0, 1000)
	var manySteps []step
	for i := range 1000 {
		b := fmt.Sprintf(`{"id":%d,"pad":"%s"}`, i, strings.Repeat("x", i%97))
		many = append(many, enc(b))
		manySteps = append(manySteps, step{body: b})
	}
	manySteps = append(manySteps, step{err: io.EOF})

	tests := []struct {
		name     string
		input    func() io.Reader
		max      int    // 0: default
		maxAlloc uint64 // 0: unchecked
		steps    []step
	}{
		{
			name:     "length 0xFFFFFFFF then a few bytes then EOF",
			input:    func() io.Reader { return bytes.NewReader(cat(hdr(0xFFFFFFFF), []byte("abc"))) },
			maxAlloc: 256 << 10,
			steps:    []step{{err: io.ErrUnexpectedEOF}},
		},
		{
			name:     "length 60 MiB (legal) then a few bytes then EOF",
			input:    func() io.Reader { return bytes.NewReader(cat(hdr(60<<20), []byte(`{"id":1`))) },
			maxAlloc: 256 << 10,
			steps:    []step{{err: io.ErrUnexpectedEOF}},
		},
		{
			name: "length 60 MiB with 1 MiB arriving then EOF",
			input: func() io.Reader {
				return io.MultiReader(bytes.NewReader(hdr(60<<20)), io.LimitReader(zeros{}, 1<<20))
			},
			maxAlloc: 2<<20 + 256<<10,
			steps:    []step{{err: io.ErrUnexpectedEOF}},
		},
		{
			name:  "empty input is a clean EOF",
			input: func() io.Reader { return bytes.NewReader(nil) },
			steps: []step{{err: io.EOF}},
		},
		{
			name:  "truncated header",
			input: func() io.Reader { return bytes.NewReader([]byte{7, 0}) },
			steps: []step{{err: io.ErrUnexpectedEOF}},
		},
		{
			name:  "truncated header after a whole frame",
			input: func() io.Reader { return bytes.NewReader(cat(enc("{}"), []byte{1})) },
			steps: []step{{body: "{}"}, {err: io.ErrUnexpectedEOF}},
		},
		{
			name:  "truncated body",
			input: func() io.Reader { return bytes.NewReader(cat(hdr(10), []byte(`{"a":`))) },
			steps: []step{{err: io.ErrUnexpectedEOF}},
		},
		{
			name:  "header only",
			input: func() io.Reader { return bytes.NewReader(hdr(2)) },
			steps: []step{{err: io.ErrUnexpectedEOF}},
		},
		{
			name: "oversize frame then a valid frame",
			input: func() io.Reader {
				return bytes.NewReader(cat(enc(strings.Repeat("A", 100)), enc(`{"id":2}`)))
			},
			max:   16,
			steps: []step{{err: ErrTooLarge}, {body: `{"id":2}`}, {err: io.EOF}},
		},
		{
			name: "frame over MaxInbound is skipped without holding it, then a valid frame",
			input: func() io.Reader {
				return io.MultiReader(
					bytes.NewReader(hdr(MaxInbound+1)),
					io.LimitReader(zeros{}, MaxInbound+1),
					bytes.NewReader(enc(`{"id":3}`)),
				)
			},
			maxAlloc: 1 << 20,
			steps:    []step{{err: ErrTooLarge}, {body: `{"id":3}`}, {err: io.EOF}},
		},
		{
			name:     "oversize frame truncated while skipping",
			input:    func() io.Reader { return bytes.NewReader(cat(hdr(1000), []byte("xyz"))) },
			max:      16,
			maxAlloc: 256 << 10,
			steps:    []step{{err: io.ErrUnexpectedEOF}},
		},
		{
			name:  "frame exactly at the limit is accepted",
			input: func() io.Reader { return bytes.NewReader(enc(strings.Repeat("B", 16))) },
			max:   16,
			steps: []step{{body: strings.Repeat("B", 16)}, {err: io.EOF}},
		},
		{
			name:  "zero-length frame",
			input: func() io.Reader { return bytes.NewReader(cat(hdr(0), enc("{}"))) },
			steps: []step{{body: "", nonNil: true}, {body: "{}"}, {err: io.EOF}},
		},
		{
			name: "large legal frame read in chunks",
			input: func() io.Reader {
				return bytes.NewReader(enc(strings.Repeat("C", 3*directRead+17)))
			},
			steps: []step{{body: strings.Repeat("C", 3*directRead+17)}, {err: io.EOF}},
		},
		{
			name:  "many frames back to back",
			input: func() io.Reader { return bytes.NewReader(cat(many...)) },
			steps: manySteps,
		},
		{
			name:  "invalid UTF-8 and JSON pass through for the caller to refuse",
			input: func() io.Reader { return bytes.NewReader(enc("\xff\xfe{not json")) },
			steps: []step{{body: "\xff\xfe{not json"}, {err: io.EOF}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.input()
			r := NewReader(in)
			if tt.max != 0 {
				r = NewReaderSize(in, tt.max)
			}
			type got struct {
				body []byte
				err  error
			}
			var results []got
			alloc := allocated(func() {
				for range tt.steps {
					b, err := r.Next()
					results = append(results, got{b, err})
				}
			})
			for i, want := range tt.steps {
				g := results[i]
				if want.err != nil {
					if !errors.Is(g.err, want.err) {
						t.Fatalf("step %d: err = %v, want %v", i, g.err, want.err)
					}
					if want.err == io.ErrUnexpectedEOF && errors.Is(g.err, io.EOF) {
						t.Fatalf("step %d: truncated frame reported as clean EOF: %v", i, g.err)
					}
					continue
				}
				if g.err != nil {
					t.Fatalf("step %d: unexpected err %v", i, g.err)
				}
				if string(g.body) != want.body {
					t.Fatalf("step %d: body = %.80q (%d bytes), want %.80q", i, g.body, len(g.body), want.body)
				}
				if want.nonNil && g.body == nil {
					t.Fatalf("step %d: zero-length frame returned nil, want empty slice", i)
				}
			}
			if tt.maxAlloc > 0 && alloc > tt.maxAlloc {
				t.Fatalf("allocated %d bytes, want at most %d", alloc, tt.maxAlloc)
			}
		})
	}
}

func TestTooLargeErrorFields(t *testing.T) {
	r := NewReaderSize(bytes.NewReader(enc("0123456789")), 4)
	_, err := r.Next()
	var tl *TooLargeError
	if !errors.As(err, &tl) || tl.Size != 10 || tl.Limit != 4 {
		t.Fatalf("err = %#v, want *TooLargeError{Size:10, Limit:4}", err)
	}
	if !strings.Contains(err.Error(), "10") {
		t.Fatalf("message %q does not name the size", err)
	}
}

func TestNewReaderSizeClampsMax(t *testing.T) {
	for _, max := range []int{-1, MaxInbound + 1, 1 << 40} {
		if r := NewReaderSize(nil, max); r.max != MaxInbound {
			t.Fatalf("NewReaderSize(%d).max = %d, want MaxInbound", max, r.max)
		}
	}
}

func TestHeaderIsNativeEndian(t *testing.T) {
	for _, body := range []string{"", "{}", strings.Repeat("x", 300), strings.Repeat("y", 70000)} {
		t.Run(fmt.Sprintf("len=%d", len(body)), func(t *testing.T) {
			var buf bytes.Buffer
			if err := NewWriter(&buf).Write([]byte(body)); err != nil {
				t.Fatal(err)
			}
			var want [4]byte
			binary.NativeEndian.PutUint32(want[:], uint32(len(body)))
			if got := buf.Bytes()[:4]; !bytes.Equal(got, want[:]) {
				t.Fatalf("header % x, want % x", got, want)
			}
			if got := buf.String()[4:]; got != body {
				t.Fatalf("body differs")
			}
		})
	}
}

// countingWriter records every Write call.
type countingWriter struct {
	calls int
	buf   bytes.Buffer
	err   error
	short bool
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.calls++
	if c.err != nil {
		return 0, c.err
	}
	if c.short {
		return c.buf.Write(p[:len(p)/2])
	}
	return c.buf.Write(p)
}

func TestWriter(t *testing.T) {
	tests := []struct {
		name      string
		size      int
		wantErr   error
		wantCalls int
	}{
		{"empty", 0, nil, 1},
		{"small", 200, nil, 1},
		{"exactly MaxOutbound", MaxOutbound, nil, 1},
		{"MaxOutbound+1 is refused, nothing written", MaxOutbound + 1, ErrTooLarge, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cw countingWriter
			err := NewWriter(&cw).Write(bytes.Repeat([]byte("z"), tt.size))
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if cw.calls != tt.wantCalls {
				t.Fatalf("%d Write calls, want %d (header and body go out together)", cw.calls, tt.wantCalls)
			}
			if tt.wantErr == nil && cw.buf.Len() != 4+tt.size {
				t.Fatalf("wrote %d bytes, want %d", cw.buf.Len(), 4+tt.size)
			}
			if tt.wantErr != nil && cw.buf.Len() != 0 {
				t.Fatalf("wrote %d bytes of a refused frame", cw.buf.Len())
			}
		})
	}
}

func TestWriterStopsAfterFailure(t *testing.T) {
	for _, tt := range []struct {
		name string
		cw   *countingWriter
	}{
		{"error", &countingWriter{err: io.ErrClosedPipe}},
		{"short write", &countingWriter{short: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := NewWriter(tt.cw)
			if err := w.Write([]byte("{}")); err == nil {
				t.Fatal("first write succeeded")
			}
			tt.cw.err, tt.cw.short = nil, false
			calls := tt.cw.calls
			if err := w.Write([]byte("{}")); err == nil {
				t.Fatal("write after a failure succeeded; the stream may hold half a frame")
			}
			if tt.cw.calls != calls {
				t.Fatal("writer wrote after a failure")
			}
		})
	}
}

// TestWriterConcurrent has many goroutines write at once; the reader must
// see only whole frames, each exactly as written. Run it with -race.
func TestWriterConcurrent(t *testing.T) {
	const writers, perWriter = 32, 40
	pr, pw := io.Pipe()
	w := NewWriter(pw)
	var wg sync.WaitGroup
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				// Sizes vary so a torn frame would misalign the stream.
				n := (g*perWriter + i) * 131 % 9000
				msg := fmt.Sprintf(`{"g":%d,"i":%d,"pad":"%s"}`, g, i, strings.Repeat(string(rune('a'+g%26)), n))
				if err := w.Write([]byte(msg)); err != nil {
					t.Errorf("writer %d: %v", g, err)
					return
				}
			}
		}()
	}
	go func() { wg.Wait(); pw.Close() }()

	r := NewReader(pr)
	seen := map[[2]int]bool{}
	next := make([]int, writers)
	for {
		b, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var g, i int
		var pad string
		if _, err := fmt.Sscanf(string(b), `{"g":%d,"i":%d,"pad":"%s`, &g, &i, &pad); err != nil {
			t.Fatalf("torn frame %.60q: %v", b, err)
		}
		pad = strings.TrimSuffix(pad, `"}`)
		n := (g*perWriter + i) * 131 % 9000
		if pad != strings.Repeat(string(rune('a'+g%26)), n) {
			t.Fatalf("frame g=%d i=%d has a corrupt body", g, i)
		}
		if seen[[2]int{g, i}] || i != next[g] {
			t.Fatalf("frame g=%d i=%d out of order or repeated", g, i)
		}
		seen[[2]int{g, i}] = true
		next[g]++
	}
	if len(seen) != writers*perWriter {
		t.Fatalf("read %d frames, want %d", len(seen), writers*perWriter)
	}
}
