package frame

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
)

const (
	// MaxInbound is the largest browser-to-host frame the host accepts.
	// Chrome may send up to 4 GiB. The largest thing the extension sends is
	// a fetch body of at most 8 MiB (about 11 MiB in base64) or an agent
	// module of up to 12 MiB (16 MiB in base64); refusing anything larger
	// before reading it bounds the host's memory. Larger modules are
	// installed from a file with the CLI.
	MaxInbound = 16 << 20

	// MaxOutbound is the largest host-to-browser frame. Chrome closes the
	// port when a host message exceeds 1 MiB, so nothing larger is written.
	MaxOutbound = 1 << 20

	// headerSize is the length prefix: a uint32 in native byte order.
	headerSize = 4

	// directRead is the largest body allocated in one piece as soon as its
	// header arrives. Larger bodies are read in chunks of this size, so a
	// header that claims 60 MiB and is followed by EOF costs at most this
	// much memory, not 60 MiB.
	directRead = 64 << 10

	// readBuffer is the Reader's read-ahead. One read from the pipe then
	// brings a header with its body, and often the frames behind it, where
	// reading straight from the pipe costs two system calls per frame. A
	// body larger than the buffer is read past it, straight into place.
	readBuffer = 64 << 10
)

// ErrTooLarge is matched (errors.Is) by every *TooLargeError.
var ErrTooLarge = errors.New("frame too large")

// TooLargeError reports a frame over a limit. For an inbound frame the
// reader has already skipped its body, so the stream is still in sync and
// the next call to Next reads the following frame.
type TooLargeError struct {
	Size  uint64 // the declared (inbound) or actual (outbound) length
	Limit uint64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("frame of %d bytes exceeds the limit of %d bytes", e.Size, e.Limit)
}

// Is makes errors.Is(err, ErrTooLarge) true.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// Reader reads frames one at a time. It is not safe for concurrent use;
// one goroutine owns the input. It reads ahead of the frame it returns,
// so nothing else may read the same input.
type Reader struct {
	r   *bufio.Reader
	max uint32
	hdr [headerSize]byte
}

// NewReader returns a Reader that refuses frames over MaxInbound.
func NewReader(r io.Reader) *Reader { return NewReaderSize(r, MaxInbound) }

// NewReaderSize returns a Reader that refuses frames over max bytes. A max
// below 0 or above MaxInbound is taken as MaxInbound, so no caller can
// raise the bound by accident.
func NewReaderSize(r io.Reader, max int) *Reader {
	if max < 0 || max > MaxInbound {
		max = MaxInbound
	}
	return &Reader{r: bufio.NewReaderSize(r, readBuffer), max: uint32(max)}
}

// chunkPool recycles the pieces of large bodies while they arrive.
var chunkPool = sync.Pool{New: func() any { b := make([]byte, directRead); return &b }}

// Next returns the next frame's body. It returns:
//   - io.EOF when the input ends cleanly between frames;
//   - an error wrapping io.ErrUnexpectedEOF when it ends inside a frame;
//   - a *TooLargeError (errors.Is ErrTooLarge) for a frame over the limit,
//     after skipping exactly its declared length so the caller can reply
//     and call Next again;
//   - an empty, non-nil slice for a zero-length frame.
func (r *Reader) Next() ([]byte, error) {
	if _, err := io.ReadFull(r.r, r.hdr[:]); err != nil {
		if err == io.EOF {
			return nil, io.EOF
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("frame: truncated header: %w", io.ErrUnexpectedEOF)
		}
		return nil, fmt.Errorf("frame: header: %w", err)
	}
	n := binary.NativeEndian.Uint32(r.hdr[:])
	if n > r.max {
		// Skip the body without holding it. io.Discard's ReadFrom streams
		// through a small pooled buffer, so memory stays constant however
		// large the declared length.
		skipped, err := io.CopyN(io.Discard, r.r, int64(n))
		if skipped < int64(n) {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, fmt.Errorf("frame: skipping oversized frame of %d bytes (%d arrived): %w", n, skipped, err)
		}
		return nil, &TooLargeError{Size: uint64(n), Limit: uint64(r.max)}
	}
	if n == 0 {
		return []byte{}, nil
	}
	if n <= directRead {
		body := make([]byte, n)
		if _, err := io.ReadFull(r.r, body); err != nil {
			return nil, truncated(n, err)
		}
		return body, nil
	}
	return r.readChunked(int(n))
}

// readChunked reads a body of n bytes in fixed chunks and joins them only
// once all have arrived: a sender that declares a large frame and stops
// early makes the host allocate what it actually sent plus one chunk.
func (r *Reader) readChunked(n int) ([]byte, error) {
	var chunks []*[]byte
	defer func() {
		for _, c := range chunks {
			chunkPool.Put(c)
		}
	}()
	for left := n; left > 0; {
		c := chunkPool.Get().(*[]byte)
		chunks = append(chunks, c)
		part := (*c)[:min(left, directRead)]
		if _, err := io.ReadFull(r.r, part); err != nil {
			return nil, truncated(uint32(n), err)
		}
		left -= len(part)
	}
	body := make([]byte, 0, n)
	for _, c := range chunks {
		body = append(body, (*c)[:min(n-len(body), directRead)]...)
	}
	return body, nil
}

func truncated(n uint32, err error) error {
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("frame: truncated body of %d bytes: %w", n, io.ErrUnexpectedEOF)
	}
	return fmt.Errorf("frame: body of %d bytes: %w", n, err)
}

// Writer writes whole frames. It is safe for concurrent use: each frame
// goes out in one Write call under a mutex, so frames never interleave.
type Writer struct {
	mu     sync.Mutex
	w      io.Writer
	limit  int
	buf    []byte
	broken error
}

// NewWriter returns a Writer on w for the host's side: frames of at most
// MaxOutbound.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w, limit: MaxOutbound} }

// NewBrowserWriter returns a Writer for the browser's side of the channel,
// as the tests and the demo play it: frames of at most MaxInbound.
func NewBrowserWriter(w io.Writer) *Writer { return &Writer{w: w, limit: MaxInbound} }

// Write sends msg as one frame. A msg over MaxOutbound is refused with a
// *TooLargeError before anything is written. After a failed write the
// stream may hold part of a frame, so every later Write fails too rather
// than send a frame the browser would misread.
func (w *Writer) Write(msg []byte) error {
	if len(msg) > w.limit {
		return &TooLargeError{Size: uint64(len(msg)), Limit: uint64(w.limit)}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.broken != nil {
		return fmt.Errorf("frame: writer unusable after an earlier failure: %w", w.broken)
	}
	w.buf = binary.NativeEndian.AppendUint32(w.buf[:0], uint32(len(msg)))
	w.buf = append(w.buf, msg...)
	n, err := w.w.Write(w.buf)
	if err == nil && n < len(w.buf) {
		err = io.ErrShortWrite
	}
	if err != nil {
		w.broken = err
		return fmt.Errorf("frame: write of %d bytes: %w", len(msg), err)
	}
	// The buffer is kept: it never exceeds the limit plus the header,
	// and a chunked reply writes several full-size frames in a row.
	return nil
}
