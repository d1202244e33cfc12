package frame

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

const (
	// MaxIDLen bounds the request id copied into every chunk. The protocol
	// allows ids of at most 128 bytes; the slack is for integers and quoting.
	MaxIDLen = 1024

	// MaxJoined bounds a reassembled reply, so a hostile or broken peer
	// cannot make a client collect chunks without end.
	MaxJoined = 256 << 20

	// maxChunks bounds total: MaxJoined in pieces of at least 3/4 MiB.
	maxChunks = 1024
)

// ErrChunk is matched (errors.Is) by every error about a malformed or
// inconsistent chunk sequence.
var ErrChunk = errors.New("bad chunk")

// chunkFrame is the wire shape of one chunk:
//
//	{"id":<id>,"chunk":{"seq":<i>,"total":<n>,"data":"<base64 of piece i>"}}
type chunkFrame struct {
	ID    json.RawMessage `json:"id"`
	Chunk *chunkBody      `json:"chunk"`
}

type chunkBody struct {
	Seq   *int    `json:"seq"`
	Total *int    `json:"total"`
	Data  *string `json:"data"`
}

// Split returns the frames that carry payload to the browser. A payload of
// at most MaxOutbound bytes travels as itself, in one frame. A larger one
// is cut into pieces, each sent base64-encoded in a chunk frame of at most
// MaxOutbound bytes:
//
//	{"id":<id>,"chunk":{"seq":0,"total":3,"data":"..."}}
//
// The receiver decodes the pieces, concatenates them in seq order and
// obtains exactly payload. id is the reply's id as raw JSON; empty means
// null. Writers use SplitEach, which holds one frame at a time.
func Split(id json.RawMessage, payload []byte) ([][]byte, error) {
	return splitLimit(id, payload, MaxOutbound)
}

// SplitEach is Split that hands each frame to emit as soon as it is built,
// in one reused buffer: a 32 MiB reply costs one frame of memory on top of
// the payload, not the payload again in base64. emit must not keep the
// slice; its error stops the split and is returned.
func SplitEach(id json.RawMessage, payload []byte, emit func(frame []byte) error) error {
	return splitEach(id, payload, MaxOutbound, emit)
}

// splitEach is SplitEach with the frame limit as a parameter, so the
// fuzzer can exercise chunking with small inputs.
func splitEach(id json.RawMessage, payload []byte, limit int, emit func([]byte) error) error {
	if len(payload) <= limit {
		return emit(payload)
	}
	cid, err := compactID(id)
	if err != nil {
		return fmt.Errorf("frame: split id[%.64s]: %w", id, err)
	}
	// Fixed envelope bytes, counting seq and total at their widest (the
	// digits of len(payload) bound both), so every frame fits the limit.
	digits := len(strconv.Itoa(len(payload)))
	overhead := len(`{"id":`) + len(cid) + len(`,"chunk":{"seq":`) + digits +
		len(`,"total":`) + digits + len(`,"data":"`) + len(`"}}`)
	// base64 turns every 3 bytes into 4, so the piece is a multiple of 3
	// (no padding except in the last piece).
	piece := (limit - overhead) / 4 * 3
	if piece < 3 {
		return fmt.Errorf("frame: split id[%.64s]: no room for data in a %d-byte frame", cid, limit)
	}
	total := (len(payload) + piece - 1) / piece
	f := make([]byte, 0, overhead+base64.StdEncoding.EncodedLen(piece))
	for seq := range total {
		p := payload[seq*piece : min(len(payload), (seq+1)*piece)]
		f = append(f[:0], `{"id":`...)
		f = append(f, cid...)
		f = append(f, `,"chunk":{"seq":`...)
		f = strconv.AppendInt(f, int64(seq), 10)
		f = append(f, `,"total":`...)
		f = strconv.AppendInt(f, int64(total), 10)
		f = append(f, `,"data":"`...)
		f = base64.StdEncoding.AppendEncode(f, p)
		f = append(f, `"}}`...)
		if len(f) > limit {
			// The arithmetic above guarantees this never happens; a frame
			// over the limit would make Chrome close the port.
			return fmt.Errorf("frame: split id[%.64s] seq[%d]: frame of %d bytes exceeds %d", cid, seq, len(f), limit)
		}
		if err := emit(f); err != nil {
			return err
		}
	}
	return nil
}

// compactID validates id as one JSON value and removes insignificant
// whitespace, so every chunk carries the same bytes.
func compactID(id json.RawMessage) ([]byte, error) {
	if len(id) == 0 {
		return []byte("null"), nil
	}
	if len(id) > MaxIDLen {
		return nil, fmt.Errorf("id of %d bytes exceeds %d", len(id), MaxIDLen)
	}
	var b bytes.Buffer
	if err := json.Compact(&b, id); err != nil {
		return nil, fmt.Errorf("id is not JSON: %w", err)
	}
	return b.Bytes(), nil
}

// IsChunk reports whether a frame is a chunk of a larger reply (a JSON
// object with a "chunk" member) rather than a reply by itself.
func IsChunk(msg []byte) bool {
	var head struct {
		Chunk json.RawMessage `json:"chunk"`
	}
	return json.Unmarshal(msg, &head) == nil && len(head.Chunk) > 0 && string(head.Chunk) != "null"
}

// Assembler reassembles the chunks of one reply, accepting them in any
// order. The zero value is ready to use and bounds the result by MaxJoined.
type Assembler struct {
	// Max bounds the reassembled size in bytes; 0 means MaxJoined.
	Max int

	id     []byte
	total  int
	pieces [][]byte
	have   int
	size   int
	err    error
}

// Add takes one chunk frame. It returns true when every chunk has arrived.
// Any error is final: the assembler refuses further frames, because a
// sequence with one bad chunk cannot be trusted.
func (a *Assembler) Add(frame []byte) (bool, error) {
	if a.err != nil {
		return false, a.err
	}
	done, err := a.add(frame)
	if err != nil {
		a.err = fmt.Errorf("frame: chunk of id[%.64s]: %w", a.id, err)
		return false, a.err
	}
	return done, nil
}

func (a *Assembler) add(frame []byte) (bool, error) {
	if a.total > 0 && a.have == a.total {
		return false, fmt.Errorf("%w: frame after the last chunk", ErrChunk)
	}
	var cf chunkFrame
	if err := json.Unmarshal(frame, &cf); err != nil {
		return false, fmt.Errorf("%w: %v", ErrChunk, err)
	}
	c := cf.Chunk
	if c == nil || c.Seq == nil || c.Total == nil || c.Data == nil {
		return false, fmt.Errorf("%w: missing chunk, seq, total or data", ErrChunk)
	}
	id, err := compactID(cf.ID)
	if err != nil {
		return false, fmt.Errorf("%w: %v", ErrChunk, err)
	}
	max := a.Max
	if max <= 0 || max > MaxJoined {
		max = MaxJoined
	}
	seq, total := *c.Seq, *c.Total
	if total < 1 || total > maxChunks {
		return false, fmt.Errorf("%w: total %d out of range", ErrChunk, total)
	}
	if a.total == 0 {
		a.id, a.total, a.pieces = id, total, make([][]byte, total)
	}
	switch {
	case !bytes.Equal(id, a.id):
		return false, fmt.Errorf("%w: id %.64s differs", ErrChunk, id)
	case total != a.total:
		return false, fmt.Errorf("%w: total %d differs from %d", ErrChunk, total, a.total)
	case seq < 0 || seq >= total:
		return false, fmt.Errorf("%w: seq %d out of range [0,%d)", ErrChunk, seq, total)
	case a.pieces[seq] != nil:
		return false, fmt.Errorf("%w: seq %d repeated", ErrChunk, seq)
	}
	if base64.StdEncoding.DecodedLen(len(*c.Data)) > max-a.size {
		return false, fmt.Errorf("%w: reply exceeds %d bytes", ErrChunk, max)
	}
	p, err := base64.StdEncoding.Strict().DecodeString(*c.Data)
	if err != nil {
		return false, fmt.Errorf("%w: seq %d: %v", ErrChunk, seq, err)
	}
	if p == nil {
		p = []byte{} // nil marks a missing piece
	}
	a.pieces[seq] = p
	a.have++
	a.size += len(p)
	return a.have == a.total, nil
}

// ID returns the compacted id shared by the chunks seen so far.
func (a *Assembler) ID() json.RawMessage { return json.RawMessage(a.id) }

// Bytes returns the reassembled reply once Add has reported completion.
func (a *Assembler) Bytes() ([]byte, error) {
	if a.err != nil {
		return nil, a.err
	}
	if a.total == 0 || a.have < a.total {
		var missing []int
		for i, p := range a.pieces {
			if p == nil && len(missing) < 8 {
				missing = append(missing, i)
			}
		}
		return nil, fmt.Errorf("frame: chunk of id[%.64s]: %w: %d of %d chunks arrived, missing %v", a.id, ErrChunk, a.have, a.total, missing)
	}
	out := make([]byte, 0, a.size)
	for _, p := range a.pieces {
		out = append(out, p...)
	}
	return out, nil
}

// Join reassembles a whole chunk sequence, in any order: the inverse of
// Split for payloads that needed chunks. It refuses gaps, duplicates,
// mixed ids or totals, extra frames and results over MaxJoined.
func Join(frames [][]byte) ([]byte, error) {
	var a Assembler
	for i, f := range frames {
		done, err := a.Add(f)
		if err != nil {
			return nil, err
		}
		if done && i != len(frames)-1 {
			return nil, fmt.Errorf("frame: chunk of id[%.64s]: %w: %d frames after the last chunk", a.id, ErrChunk, len(frames)-1-i)
		}
	}
	return a.Bytes()
}

// splitLimit collects splitEach's frames, for tests of small limits.
func splitLimit(id json.RawMessage, payload []byte, limit int) ([][]byte, error) {
	var frames [][]byte
	err := splitEach(id, payload, limit, func(f []byte) error {
		frames = append(frames, bytes.Clone(f))
		return nil
	})
	return frames, err
}
