package frame_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentgate/nmhost/internal/frame"
)

func Example() {
	var wire bytes.Buffer
	w := frame.NewWriter(&wire)
	_ = w.Write([]byte(`{"id":"1","type":"getAgentInfo","agentId":"demo"}`))

	r := frame.NewReader(&wire)
	msg, err := r.Next()
	fmt.Println(string(msg), err)
	// Output: {"id":"1","type":"getAgentInfo","agentId":"demo"} <nil>
}

func ExampleSplit() {
	// A 3 MiB reply does not fit Chrome's 1 MiB limit, so it goes in chunks.
	reply := []byte(`{"id":"8","success":true,"data":"` + strings.Repeat("a", 3<<20) + `"}`)
	frames, _ := frame.Split(json.RawMessage(`"8"`), reply)
	for _, f := range frames {
		fmt.Println(len(f) <= frame.MaxOutbound, string(f[:40]))
	}
	joined, _ := frame.Join(frames)
	fmt.Println(bytes.Equal(joined, reply))
	// Output:
	// true {"id":"8","chunk":{"seq":0,"total":5,"da
	// true {"id":"8","chunk":{"seq":1,"total":5,"da
	// true {"id":"8","chunk":{"seq":2,"total":5,"da
	// true {"id":"8","chunk":{"seq":3,"total":5,"da
	// true {"id":"8","chunk":{"seq":4,"total":5,"da
	// true
}
