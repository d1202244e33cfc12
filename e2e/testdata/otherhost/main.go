// Command otherhost is a native-messaging host that speaks another
// protocol version than the extension: it answers hello with the version
// it was built with (-ldflags "-X main.protocol=N") and writes the type of
// every other request it receives to the file named by main.canary, so a
// test can show the extension sent it nothing but hello.
package main

import (
	"encoding/binary"
	"encoding/json"
	"io"
	"os"
	"strconv"
)

var (
	protocol = "1"
	canary   = ""
)

func main() {
	version, _ := strconv.Atoi(protocol)
	for {
		var n uint32
		if err := binary.Read(os.Stdin, binary.NativeEndian, &n); err != nil {
			return
		}
		msg := make([]byte, n)
		if _, err := io.ReadFull(os.Stdin, msg); err != nil {
			return
		}
		var req struct {
			ID   any    `json:"id"`
			Type string `json:"type"`
		}
		_ = json.Unmarshal(msg, &req)
		reply := map[string]any{"id": req.ID, "success": true, "data": map[string]any{}}
		if req.Type == "hello" {
			reply["data"] = map[string]any{"name": "nmhost", "version": "other", "protocol": version}
		} else if f, err := os.OpenFile(canary, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
			f.WriteString(req.Type + "\n")
			f.Close()
		}
		out, _ := json.Marshal(reply)
		binary.Write(os.Stdout, binary.NativeEndian, uint32(len(out)))
		os.Stdout.Write(out)
	}
}
