// Command echo is the benchmarks' baseline for a native-messaging host: it
// reads length-prefixed JSON frames from stdin and answers each with
// {"id":<its id>,"success":true,"data":{}} on stdout, one request at a
// time, until stdin ends. It does nothing else, so a round trip to it is
// what the pipes, the framing and one JSON decode cost. It lives under
// testdata so that it is never part of the product.
package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"io"
	"os"
)

func main() {
	in := bufio.NewReader(os.Stdin)
	var hdr [4]byte
	var out []byte
	for {
		if _, err := io.ReadFull(in, hdr[:]); err != nil {
			return
		}
		body := make([]byte, binary.NativeEndian.Uint32(hdr[:]))
		if _, err := io.ReadFull(in, body); err != nil {
			return
		}
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(body, &req) != nil || req.ID == nil {
			req.ID = json.RawMessage("null")
		}
		out = binary.NativeEndian.AppendUint32(out[:0], 0)
		out = append(out, `{"id":`...)
		out = append(out, req.ID...)
		out = append(out, `,"success":true,"data":{}}`...)
		binary.NativeEndian.PutUint32(out, uint32(len(out)-4))
		if _, err := os.Stdout.Write(out); err != nil {
			return
		}
	}
}
