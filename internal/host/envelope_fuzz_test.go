package host

import (
	"testing"

	"github.com/agentgate/nmhost/mediator"
)

// FuzzParseRequest: any message is a request with a valid id and a type,
// or bad_request; never a panic, and never an id the reply could not echo.
func FuzzParseRequest(f *testing.F) {
	f.Add([]byte(`{"id":1,"type":"hello"}`))
	f.Add([]byte(`{"id":"x","type":"grant","agentId":"a","permission":"page.read"}`))
	f.Add([]byte(`{"id":1,"type":"hello","type":"grant"}`))
	f.Fuzz(func(t *testing.T, msg []byte) {
		req, err := parseRequest(msg)
		if err != nil {
			if mediator.CodeOf(err) != mediator.CodeBadRequest {
				t.Fatalf("refused with %s: %v", mediator.CodeOf(err), err)
			}
			if req != nil && string(req.ID) != "null" && !validID(req.ID) {
				t.Fatalf("a refusal echoes the invalid id %s", req.ID)
			}
			return
		}
		if req == nil || req.Type == "" || !validID(req.ID) {
			t.Fatalf("accepted %q as %+v", msg, req)
		}
	})
}
