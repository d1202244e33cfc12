package frame

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
)

// HeaderSize is the length prefix before every frame: a uint32 in native
// byte order.
const HeaderSize = headerSize

// WriteFramed sends buf[HeaderSize:] as one frame, writing its length
// into buf[:HeaderSize] first, so the message goes out in one write
// without being copied behind a header. It refuses and fails as Write
// does.
func (w *Writer) WriteFramed(buf []byte) error {
	if len(buf) < headerSize {
		return fmt.Errorf("frame: WriteFramed needs %d bytes of room for the header", headerSize)
	}
	msg := buf[headerSize:]
	if len(msg) > w.limit {
		return &TooLargeError{Size: uint64(len(msg)), Limit: uint64(w.limit)}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.broken != nil {
		return fmt.Errorf("frame: writer unusable after an earlier failure: %w", w.broken)
	}
	binary.NativeEndian.PutUint32(buf, uint32(len(msg)))
	n, err := w.w.Write(buf)
	if err == nil && n < len(buf) {
		err = io.ErrShortWrite
	}
	if err != nil {
		w.broken = err
		return fmt.Errorf("frame: write of %d bytes: %w", len(msg), err)
	}
	return nil
}

// SplitPartsEach is SplitEach for a payload given as the concatenation of
// parts (a reply's envelope around a fetched body, the body itself, the
// closing bytes), and for WriteFramed: each frame is handed to emit with
// HeaderSize bytes of room before it. A payload that fits one frame is
// copied once, into that frame; a larger one is base64-encoded from the
// parts straight into each chunk frame and never joined, so a fetched
// body reaches the chunks without a copy of the whole reply. The frames
// are those SplitEach makes of the joined payload.
func SplitPartsEach(id json.RawMessage, parts [][]byte, emit func(framed []byte) error) error {
	return splitParts(id, parts, MaxOutbound, emit)
}

func splitParts(id json.RawMessage, parts [][]byte, limit int, emit func([]byte) error) error {
	size := 0
	for _, p := range parts {
		size += len(p)
	}
	if size <= limit {
		f := make([]byte, headerSize, headerSize+size)
		for _, p := range parts {
			f = append(f, p...)
		}
		return emit(f)
	}
	cid, err := compactID(id)
	if err != nil {
		return fmt.Errorf("frame: split id[%.64s]: %w", id, err)
	}
	// The same arithmetic as splitEach: the widest seq and total, pieces a
	// multiple of 3 so only the last one is padded.
	digits := len(strconv.Itoa(size))
	overhead := len(`{"id":`) + len(cid) + len(`,"chunk":{"seq":`) + digits +
		len(`,"total":`) + digits + len(`,"data":"`) + len(`"}}`)
	piece := (limit - overhead) / 4 * 3
	if piece < 3 {
		return fmt.Errorf("frame: split id[%.64s]: no room for data in a %d-byte frame", cid, limit)
	}
	total := (size + piece - 1) / piece
	f := make([]byte, 0, headerSize+overhead+base64.StdEncoding.EncodedLen(piece))
	src := partsReader{parts: slices.Clone(parts)} // its entries are moved on
	for seq := range total {
		f = append(f[:0], 0, 0, 0, 0) // the header's room
		f = append(f, `{"id":`...)
		f = append(f, cid...)
		f = append(f, `,"chunk":{"seq":`...)
		f = strconv.AppendInt(f, int64(seq), 10)
		f = append(f, `,"total":`...)
		f = strconv.AppendInt(f, int64(total), 10)
		f = append(f, `,"data":"`...)
		f = src.appendBase64(f, min(piece, size-seq*piece))
		f = append(f, `"}}`...)
		if len(f)-headerSize > limit {
			return fmt.Errorf("frame: split id[%.64s] seq[%d]: frame of %d bytes exceeds %d", cid, seq, len(f)-headerSize, limit)
		}
		if err := emit(f); err != nil {
			return err
		}
	}
	return nil
}

// partsReader reads parts in order, as one payload.
type partsReader struct {
	parts [][]byte
}

// appendBase64 appends base64 of the next n bytes. Whole groups of three
// bytes are encoded in place, in runs as long as a part; a group that
// straddles two parts is gathered first. n is a multiple of 3 except for
// the payload's last piece, which is padded.
func (r *partsReader) appendBase64(dst []byte, n int) []byte {
	var group [3]byte
	g := 0
	for n > 0 {
		p := r.parts[0]
		if len(p) == 0 {
			r.parts = r.parts[1:]
			continue
		}
		if g > 0 || min(len(p), n) < 3 {
			// Gather one group, a byte at a time, across parts.
			group[g] = p[0]
			g++
			n--
			r.parts[0] = p[1:]
			if g == 3 {
				dst = base64.StdEncoding.AppendEncode(dst, group[:])
				g = 0
			}
			continue
		}
		run := min(len(p), n) / 3 * 3
		dst = base64.StdEncoding.AppendEncode(dst, p[:run])
		r.parts[0] = p[run:]
		n -= run
	}
	if g > 0 {
		dst = base64.StdEncoding.AppendEncode(dst, group[:g])
	}
	return dst
}
