// Command otherhost is a native-messaging host that speaks another
// protocol version than the extension: it answers hello with the version
// it was built with (-ldflags "-X main.protocol=N") and writes the type of
// every other message it receives to the file named by main.canary, so a
// test can show the extension sent it nothing but hello. Right after its
// first hello it asks the extension for what a host may ask: a clipboard
// write (of main.marker) and read, a prompt and a prompt-cancel; an
// extension that served any of them would answer, and the answer would
// land in the canary too.
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
	marker   = "written by a host of another protocol"
)

func main() {
	version, _ := strconv.Atoi(protocol)
	asked := false
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
		write(reply)
		if req.Type == "hello" && !asked {
			asked = true
			write(map[string]any{"id": "h:other:1", "type": "browser-call", "agentId": "other", "call": "clipboard.write", "params": map[string]any{"text": marker}})
			write(map[string]any{"id": "h:other:2", "type": "browser-call", "agentId": "other", "call": "clipboard.read", "params": map[string]any{}})
			write(map[string]any{"id": "h:other:3", "type": "prompt", "agentId": "other", "operation": "clipboard.write", "permission": "clipboard.write",
				"class": "REQUIRES_CONFIRMATION", "target": map[string]any{"textLength": 5}, "reason": "it asks", "timeoutMs": 60000,
				"offers": []string{"allow-once", "always-allow", "deny"}})
			write(map[string]any{"id": "h:other:4", "type": "prompt-cancel", "code": "prompt_cancelled", "reason": "a host of another protocol withdraws"})
		}
	}
}

func write(v any) {
	out, _ := json.Marshal(v)
	binary.Write(os.Stdout, binary.NativeEndian, uint32(len(out)))
	os.Stdout.Write(out)
}
