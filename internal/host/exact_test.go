package host

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/netproxy"
)

// TestMessagesAreReadExactly: a message must have one reading. A member
// given twice, a case variant of a parameter, or a parameter the type does
// not have is refused before anything acts on it; Go's encoding/json alone
// would have matched "AgentId" to agentId or kept the last duplicate. A
// repeated id or type leaves no id to answer to; other refusals name it.
func TestMessagesAreReadExactly(t *testing.T) {
	cases := []struct {
		name string
		msg  string
		id   string // expected id in the reply
	}{
		{"duplicate id", `{"id":1,"id":2,"type":"hello"}`, "null"},
		{"duplicate type", `{"id":1,"type":"hello","type":"grant"}`, "null"},
		{"case-variant id", `{"ID":1,"type":"hello"}`, "null"},
		{"case-variant parameter", `{"id":3,"type":"grant","agentId":"a","AgentId":"b","permission":"page.read"}`, "3"},
		{"case-variant parameter alone", `{"id":4,"type":"revoke","AGENTID":"a","permission":"page.read"}`, "4"},
		{"duplicate parameter", `{"id":5,"type":"grant","agentId":"a","agentId":"b","permission":"page.read"}`, "5"},
		{"unknown parameter", `{"id":6,"type":"grant","agentId":"a","permission":"page.read","sudo":true}`, "6"},
		{"duplicate nested member", `{"id":7,"type":"network-fetch","agentId":"a","url":"http://127.0.0.1/","options":{"method":"GET","method":"POST"}}`, "7"},
		{"case-variant nested member", `{"id":8,"type":"network-fetch","agentId":"a","url":"http://127.0.0.1/","options":{"Method":"DELETE"}}`, "8"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, true)
			go h.in.Write(frameOf([]byte(tc.msg)))
			select {
			case r := <-h.client.Unmatched:
				if r.Success || r.Code != string(mediator.CodeBadRequest) {
					t.Fatalf("want bad_request, got success=%v code=%q (%s)", r.Success, r.Code, r.Error)
				}
				if string(r.ID) != tc.id {
					t.Fatalf("want id %s, got %s", tc.id, r.ID)
				}
			case <-time.After(2 * time.Minute):
				// A guard against a hang, not a timing: a million headers
				// (12 MB) decoded under the race detector on a loaded
				// machine took over 20 s.
				t.Fatal("no reply")
			}
		})
	}
}

// TestFetchHeadersAreBoundedWhileDecoded: headers past netproxy's limits
// are refused while the message is decoded, before they are held; the
// target is never contacted.
func TestFetchHeadersAreBoundedWhileDecoded(t *testing.T) {
	web := newCanary(t)
	many := func(n int, value string) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"X-H%d":%q`, i, value)
		}
		return "{" + b.String() + "}"
	}
	cases := []struct {
		name, headers string
		ok            bool
	}{
		{"at the count limit", many(netproxy.MaxHeaders, "v"), true},
		{"one header too many", many(netproxy.MaxHeaders+1, "v"), false},
		{"a million headers", many(1_000_000, ""), false},
		{"over the byte limit", many(2, strings.Repeat("v", netproxy.MaxHeaderBytes/2)), false},
		{"a value that is not a string", `{"X-A":1}`, false},
		{"an array", `["X-A"]`, false},
		{"null", `null`, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, true)
			h.install("hdr", []string{"network.fetch"}, true, hostPort(web.URL))
			before := web.Hits.Load()
			msg := fmt.Sprintf(`{"id":"h","type":"network-fetch","agentId":"hdr","url":%q,"options":{"headers":%s}}`, web.URL, c.headers)
			go h.in.Write(frameOf([]byte(msg)))
			select {
			case r := <-h.client.Unmatched:
				if r.Success != c.ok || !c.ok && r.Code != string(mediator.CodeBadRequest) {
					t.Fatalf("success=%v code=%q (%s); want success=%v", r.Success, r.Code, r.Error, c.ok)
				}
			case <-time.After(2 * time.Minute):
				// A guard against a hang, not a timing: a million headers
				// (12 MB) decoded under the race detector on a loaded
				// machine took over 20 s.
				t.Fatal("no reply")
			}
			if !c.ok && web.Hits.Load() != before {
				t.Fatal("a refused request reached the server")
			}
		})
	}
}
