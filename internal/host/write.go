package host

import (
	"bytes"
	"encoding/json"
	"sync"

	"github.com/agentgate/nmhost/internal/frame"
)

// jsonAppender is data that writes its own JSON into a buffer of a size it
// knows in advance (a fetch's result), so a large reply is encoded once,
// without reflection or the encoder's buffer doubling.
type jsonAppender interface {
	AppendJSON(dst []byte) []byte
	JSONLen() int
}

// jsonParter is a jsonAppender that can also give its JSON in pieces
// (a fetch's result: the fields, the fetched body as it came when it
// needs no escaping, the closing bytes), so a reply too large for one
// frame goes into its chunks straight from them, without being joined.
type jsonParter interface {
	jsonAppender
	JSONParts() [][]byte
}

// encodeBufs recycles the buffers small replies are encoded into.
var encodeBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledBuf is the largest encode buffer kept for reuse: replies are
// mostly small, and a pooled megabyte would outlive the reply that grew it.
const maxPooledBuf = 64 << 10

// headerRoom is where a frame's length goes, before the JSON encode
// writes: the frame is then written as it is (frame.Writer.WriteFramed).
var headerRoom = make([]byte, frame.HeaderSize)

// encode returns v's JSON after frame.HeaderSize bytes of room: a
// successful reply whose data is a jsonAppender is written by hand around
// it; anything else by encoding/json, into buf. A successful reply whose
// data is a jsonParter too large for one frame comes back as parts
// instead (framed is nil).
func encode(buf *bytes.Buffer, v any) (framed []byte, parts [][]byte, err error) {
	if r, ok := v.(reply); ok && r.Success && r.Error == "" && r.Code == "" {
		if a, ok := r.Data.(jsonAppender); ok {
			size := len(`{"id":,"success":true,"data":}`) + len(r.ID) + a.JSONLen()
			if p, ok := a.(jsonParter); ok && size > frame.MaxOutbound {
				head := make([]byte, 0, len(`{"id":,"success":true,"data":`)+len(r.ID))
				head = append(head, `{"id":`...)
				head = append(head, r.ID...)
				head = append(head, `,"success":true,"data":`...)
				return nil, append(append([][]byte{head}, p.JSONParts()...), []byte("}")), nil
			}
			b := make([]byte, frame.HeaderSize, frame.HeaderSize+size)
			b = append(b, `{"id":`...)
			b = append(b, r.ID...)
			b = append(b, `,"success":true,"data":`...)
			b = a.AppendJSON(b)
			return append(b, '}'), nil, nil
		}
	}
	buf.Write(headerRoom)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil, nil
}

// write encodes any outbound message (reply, progress event, host-initiated
// request) and sends it as one frame or as chunks under id, built and
// written one at a time. Frames from concurrent handlers never interleave
// inside one frame; chunks of one message may interleave with other
// messages, which the chunk format allows.
func (s *server) write(id json.RawMessage, v any) error {
	buf := encodeBufs.Get().(*bytes.Buffer)
	buf.Reset()
	defer func() {
		// Every frame is written by now: nothing refers to buf any more.
		if buf.Cap() <= maxPooledBuf {
			encodeBufs.Put(buf)
		}
	}()
	framed, parts, err := encode(buf, v)
	if err != nil {
		return err
	}
	var broken bool
	emit := func(f []byte) error {
		if err := s.out.WriteFramed(f); err != nil {
			broken = true
			return err
		}
		return nil
	}
	switch {
	case parts != nil:
		err = frame.SplitPartsEach(id, parts, emit)
	case len(framed)-frame.HeaderSize <= frame.MaxOutbound:
		err = emit(framed) // the common case: no copy on the way out
	default:
		err = frame.SplitPartsEach(id, [][]byte{framed[frame.HeaderSize:]}, emit)
	}
	switch {
	case broken:
		s.log.Warn("browser gone: write failed", "err", err)
		s.brokenOnce.Do(func() { close(s.broken) })
	case err != nil:
		s.log.Error("message not splittable", "id", string(id), "err", err)
	}
	return nil
}
