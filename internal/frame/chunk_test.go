package frame

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/agentgate/nmhost/internal/norace"
)

// jsonPayload returns a JSON reply of exactly n bytes (n >= 32).
func jsonPayload(n int) []byte {
	head := `{"id":"7","success":true,"data":"`
	tail := `"}`
	fill := n - len(head) - len(tail)
	r := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	b.WriteString(head)
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _-"
	for range fill {
		b.WriteByte(alphabet[r.IntN(len(alphabet))])
	}
	b.WriteString(tail)
	return []byte(b.String())
}

// TestSplitJoinRoundTrip: replies of every size and kind of id survive
// Split and Join, in order and shuffled. Under the race detector it runs
// in a copy of this test binary built without it (norace.Moved): Split
// and Join are pure functions with nothing concurrent to check, and the
// detector made their JSON and base64 work over 20 MiB cost 14 s of CPU.
// TestWriterConcurrent and the fuzz seeds still run under it.
func TestSplitJoinRoundTrip(t *testing.T) {
	if norace.Moved(t, "1") {
		return
	}
	tests := []struct {
		name       string
		size       int
		id         string
		wantFrames int
	}{
		{"small reply is one frame", 200, `"7"`, 1},
		{"exactly 1 MiB is one frame", MaxOutbound, `"7"`, 1},
		{"1 MiB + 1 is chunked", MaxOutbound + 1, `"7"`, 2},
		{"3 MiB", 3 << 20, `"7"`, 5},
		{"3 MiB with integer id", 3 << 20, `12345`, 5},
		{"3 MiB with null id", 3 << 20, ``, 5},
		{"10 MiB with a 128-byte id", 10 << 20, `"` + strings.Repeat("i", 126) + `"`, 14},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			payload := jsonPayload(tt.size)
			frames, err := Split(json.RawMessage(tt.id), payload)
			if err != nil {
				t.Fatal(err)
			}
			if len(frames) != tt.wantFrames {
				t.Fatalf("%d frames, want %d", len(frames), tt.wantFrames)
			}
			for i, f := range frames {
				if len(f) > MaxOutbound {
					t.Fatalf("frame %d is %d bytes, over MaxOutbound", i, len(f))
				}
				if !json.Valid(f) {
					t.Fatalf("frame %d is not JSON", i)
				}
			}
			if len(frames) == 1 {
				if !bytes.Equal(frames[0], payload) {
					t.Fatal("single frame differs from the payload")
				}
				if IsChunk(frames[0]) {
					t.Fatal("a plain reply was taken for a chunk")
				}
				return
			}
			wantID := tt.id
			if wantID == "" {
				wantID = "null"
			}
			for i, f := range frames {
				var cf struct {
					ID    json.RawMessage `json:"id"`
					Chunk struct {
						Seq, Total int
						Data       string
					} `json:"chunk"`
				}
				if err := json.Unmarshal(f, &cf); err != nil {
					t.Fatal(err)
				}
				if string(cf.ID) != wantID || cf.Chunk.Seq != i || cf.Chunk.Total != len(frames) {
					t.Fatalf("frame %d: id=%s seq=%d total=%d", i, cf.ID, cf.Chunk.Seq, cf.Chunk.Total)
				}
				if !IsChunk(f) {
					t.Fatalf("frame %d not recognised as a chunk", i)
				}
			}
			got, err := Join(frames)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, payload) {
				t.Fatal("joined reply differs from the payload")
			}
			// Chunks may arrive in any order.
			shuffled := append([][]byte(nil), frames...)
			rand.New(rand.NewPCG(3, 4)).Shuffle(len(shuffled), func(i, j int) {
				shuffled[i], shuffled[j] = shuffled[j], shuffled[i]
			})
			if got, err := Join(shuffled); err != nil || !bytes.Equal(got, payload) {
				t.Fatalf("shuffled join: err=%v equal=%v", err, bytes.Equal(got, payload))
			}
		})
	}
}

// TestSplitFillsFrames checks the piece size is not needlessly small: a
// 3 MiB reply needs 5 frames at 3/4 MiB of data each, not more.
func TestSplitFillsFrames(t *testing.T) {
	frames, err := Split(json.RawMessage(`"7"`), jsonPayload(3<<20))
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range frames[:len(frames)-1] {
		if len(f) < MaxOutbound-64 {
			t.Fatalf("frame %d is %d bytes; pieces leave %d bytes unused", i, len(f), MaxOutbound-len(f))
		}
	}
}

func TestSplitRefusesBadIDs(t *testing.T) {
	payload := jsonPayload(MaxOutbound + 10)
	for _, tt := range []struct{ name, id string }{
		{"not JSON", `{"unterminated`},
		{"two values", `1 2`},
		{"too long", `"` + strings.Repeat("x", MaxIDLen) + `"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Split(json.RawMessage(tt.id), payload); err == nil {
				t.Fatal("Split accepted a bad id")
			}
		})
	}
	t.Run("whitespace in the id is compacted", func(t *testing.T) {
		frames, err := Split(json.RawMessage(" \"a\" \n"), payload)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(frames[0], []byte(`{"id":"a","chunk":`)) {
			t.Fatalf("frame starts %.40q", frames[0])
		}
	})
	t.Run("a bad id does not matter when no chunking is needed", func(t *testing.T) {
		if _, err := Split(json.RawMessage(`{`), []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	})
}

func chunk(id string, seq, total int, data string) []byte {
	return fmt.Appendf(nil, `{"id":%s,"chunk":{"seq":%d,"total":%d,"data":%q}}`, id, seq, total, base64.StdEncoding.EncodeToString([]byte(data)))
}

func TestJoinRefusesBadSequences(t *testing.T) {
	tests := []struct {
		name   string
		frames [][]byte
	}{
		{"no frames", nil},
		{"gap", [][]byte{chunk(`1`, 0, 3, "a"), chunk(`1`, 2, 3, "c")}},
		{"duplicate", [][]byte{chunk(`1`, 0, 2, "a"), chunk(`1`, 0, 2, "a")}},
		{"mixed ids", [][]byte{chunk(`1`, 0, 2, "a"), chunk(`2`, 1, 2, "b")}},
		{"mixed totals", [][]byte{chunk(`1`, 0, 2, "a"), chunk(`1`, 1, 3, "b")}},
		{"seq out of range", [][]byte{chunk(`1`, 0, 2, "a"), chunk(`1`, 2, 2, "b")}},
		{"negative seq", [][]byte{chunk(`1`, -1, 2, "a")}},
		{"zero total", [][]byte{chunk(`1`, 0, 0, "a")}},
		{"absurd total", [][]byte{chunk(`1`, 0, 1<<30, "a")}},
		{"extra frame after the last", [][]byte{chunk(`1`, 0, 1, "a"), chunk(`1`, 0, 1, "a")}},
		{"not a chunk", [][]byte{[]byte(`{"id":1,"success":true}`)}},
		{"not JSON", [][]byte{[]byte(`{"id":1,"chunk":`)}},
		{"missing data", [][]byte{[]byte(`{"id":1,"chunk":{"seq":0,"total":1}}`)}},
		{"bad base64", [][]byte{[]byte(`{"id":1,"chunk":{"seq":0,"total":1,"data":"!!!!"}}`)}},
		{"non-canonical base64 padding bits", [][]byte{[]byte(`{"id":1,"chunk":{"seq":0,"total":1,"data":"YR=="}}`)}},
		{"string seq", [][]byte{[]byte(`{"id":1,"chunk":{"seq":"0","total":1,"data":""}}`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, err := Join(tt.frames); err == nil {
				t.Fatalf("Join accepted it: %q", got)
			}
		})
	}
}

func TestAssemblerBoundsSize(t *testing.T) {
	a := Assembler{Max: 4}
	if _, err := a.Add(chunk(`1`, 0, 2, "abc")); err != nil {
		t.Fatal(err)
	}
	_, err := a.Add(chunk(`1`, 1, 2, "de"))
	if !errors.Is(err, ErrChunk) {
		t.Fatalf("err = %v, want ErrChunk for a reply over Max", err)
	}
	// Errors are final.
	if _, err := a.Add(chunk(`1`, 1, 2, "")); err == nil {
		t.Fatal("assembler went on after an error")
	}
}

func TestAssemblerIncremental(t *testing.T) {
	var a Assembler
	parts := []string{"he", "ll", "o"}
	for i := len(parts) - 1; i >= 0; i-- {
		done, err := a.Add(chunk(`"x"`, i, len(parts), parts[i]))
		if err != nil {
			t.Fatal(err)
		}
		if done != (i == 0) {
			t.Fatalf("after seq %d done=%v", i, done)
		}
	}
	got, err := a.Bytes()
	if err != nil || string(got) != "hello" || string(a.ID()) != `"x"` {
		t.Fatalf("got %q, id %s, err %v", got, a.ID(), err)
	}
	var b Assembler
	if _, err := b.Bytes(); err == nil {
		t.Fatal("Bytes of an empty assembler succeeded")
	}
}
