package mcpgw

import (
	"testing"

	"github.com/agentgate/nmhost/mediator"
)

// TestConfigIsReadExactly: the person's mcp.json is refused, with
// bad_request, for a name that is not plain, a server with both or
// neither of command and url, plain http off loopback, credentials in a
// URL, an unknown class, an unknown or repeated member.
func TestConfigIsReadExactly(t *testing.T) {
	for _, tc := range []struct{ name, json string }{
		{"a dot in a server's name", `{"mcpServers":{"a.b":{"command":"x"}}}`},
		{"a bidi override in a server's name", `{"mcpServers":{"a\u202eb":{"command":"x"}}}`},
		{"both command and url", `{"mcpServers":{"s":{"command":"x","url":"https://h/"}}}`},
		{"neither", `{"mcpServers":{"s":{}}}`},
		{"plain http to another host", `{"mcpServers":{"s":{"url":"http://example.com/mcp"}}}`},
		{"plain http to a private address", `{"mcpServers":{"s":{"url":"http://10.0.0.1/mcp"}}}`},
		{"credentials in the url", `{"mcpServers":{"s":{"url":"https://u:p@h/mcp"}}}`},
		{"another scheme", `{"mcpServers":{"s":{"url":"file:///etc/passwd"}}}`},
		{"a type that does not fit", `{"mcpServers":{"s":{"type":"http","command":"x"}}}`},
		{"an unknown class", `{"mcpServers":{"s":{"command":"x","tools":{"t":"ALWAYS_FINE"}}}}`},
		{"an unknown member", `{"mcpServers":{"s":{"command":"x","autoApprove":["t"]}}}`},
		{"a repeated member", `{"mcpServers":{"s":{"command":"x","command":"y"}}}`},
		{"args beside a url", `{"mcpServers":{"s":{"url":"https://h/","args":["x"]}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ParseConfig([]byte(tc.json)); mediator.CodeOf(err) != mediator.CodeBadRequest {
				t.Fatalf("ParseConfig = %v; want bad_request", err)
			}
		})
	}
	for _, ok := range []string{
		`{"mcpServers":{"fs":{"command":"npx","args":["-y","x"],"env":{"A":"b"}}}}`,
		`{"mcpServers":{"local":{"type":"http","url":"http://127.0.0.1:8000/mcp"}}}`,
		`{"mcpServers":{"v6":{"url":"http://[::1]:8000/mcp"}}}`,
		`{"mcpServers":{"remote":{"url":"https://mcp.example.com/mcp","trusted":true,"tools":{"write":"ALWAYS_CONFIRM"}}}}`,
	} {
		if _, err := ParseConfig([]byte(ok)); err != nil {
			t.Errorf("%s refused: %v", ok, err)
		}
	}
}
