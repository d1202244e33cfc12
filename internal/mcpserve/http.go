package mcpserve

import (
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTPConfig is what the Streamable HTTP endpoint admits.
type HTTPConfig struct {
	// Token admits a request that presents it as "Authorization: Bearer
	// TOKEN" (the viewer's token: one secret for the person's local
	// doors). Required: nil admits nothing.
	Token func(presented string) bool
	// Hosts are the Host headers the endpoint answers to (its loopback
	// address): another name is DNS rebinding.
	Hosts []string
}

// Handler is the Streamable HTTP endpoint. Before the MCP handler sees a
// request it passes: the Host check, no Origin but the endpoint's own (a
// web page elsewhere never gets to call a tool; MCP clients send none, and
// the endpoint serves no page that could), and the token. The token is never
// taken from a URL.
func (s *Server) Handler(c HTTPConfig) http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.srv }, nil)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		if !hostAllowed(r.Host, c.Hosts) {
			http.Error(w, "the Host header is not this gateway's loopback address", http.StatusForbidden)
			return
		}
		if o := r.Header.Get("Origin"); o != "" && !originAllowed(o, c.Hosts) {
			http.Error(w, "requests from web pages are refused", http.StatusForbidden)
			return
		}
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || c.Token == nil || !c.Token(tok) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="nmhost"`)
			http.Error(w, "no valid token: send Authorization: Bearer with the token in the data directory's viewer-token file", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func originAllowed(origin string, hosts []string) bool {
	for _, h := range hosts {
		if strings.EqualFold(origin, "http://"+h) {
			return true
		}
	}
	return false
}

func hostAllowed(host string, hosts []string) bool {
	for _, h := range hosts {
		if strings.EqualFold(host, h) {
			return true
		}
	}
	return false
}
