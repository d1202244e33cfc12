package netproxy

import (
	"net/http"
	"slices"
	"strings"

	"github.com/agentgate/nmhost/mediator"
)

// CheckRequest applies the rules on the request itself (method, headers,
// body) without sending anything, so that a caller can refuse a request
// the fetch would refuse anyway before it asks anybody about it. Fetch
// applies them again.
func (f *Fetcher) CheckRequest(req Request) mediator.Decision {
	_, _, d := f.checkRequest(req)
	return d
}

func (f *Fetcher) checkRequest(req Request) (string, http.Header, mediator.Decision) {
	method, d := checkMethod(req.Method)
	if !d.Allowed {
		return "", nil, d
	}
	hdr, d := checkHeaders(req.Headers)
	if !d.Allowed {
		return "", nil, d
	}
	if int64(len(req.Body)) > f.cfg.MaxRequestBytes {
		return "", nil, deny(mediator.CodeTooLarge, "the request body is %d bytes; at most %d are allowed", len(req.Body), f.cfg.MaxRequestBytes)
	}
	if len(req.Body) > 0 && mediator.FetchCarriesNoBody(method) {
		return "", nil, deny(mediator.CodeBodyNotAllowed, "a %s request carries no body (this one has %d bytes); use POST or PUT", method, len(req.Body))
	}
	return method, hdr, mediator.Allow("")
}

func checkMethod(m string) (string, mediator.Decision) {
	if m == "" {
		return http.MethodGet, mediator.Allow("")
	}
	u := strings.ToUpper(m)
	if slices.Contains(mediator.FetchMethods(), u) {
		return u, mediator.Allow("")
	}
	return "", deny(mediator.CodeMethodNotAllowed, "method %q is not allowed; use %s", truncURL(m), strings.Join(mediator.FetchMethods(), ", "))
}

// forbiddenHeaders are headers an agent may not set: they describe the
// connection or the message framing (which the transport owns, and which
// smuggling attacks abuse), address a proxy, or would name a different
// host than the one checked.
var forbiddenHeaders = map[string]bool{
	"Host":              true,
	"Content-Length":    true,
	"Transfer-Encoding": true,
	"Connection":        true,
	"Keep-Alive":        true,
	"Te":                true,
	"Trailer":           true,
	"Upgrade":           true,
	"Expect":            true,
	"Http2-Settings":    true,
}

// checkHeaders validates agent headers into an http.Header. Cookie and
// Authorization are allowed: the host keeps no cookie jar or credentials of
// its own, so an agent can only send what it already has; both are dropped
// on a redirect to another origin.
func checkHeaders(in map[string]string) (http.Header, mediator.Decision) {
	if len(in) > MaxHeaders {
		return nil, deny(mediator.CodeTooLarge, "%d headers; at most %d are allowed", len(in), MaxHeaders)
	}
	h := make(http.Header, len(in))
	total := 0
	for name, value := range in {
		total += len(name) + len(value)
		if !validHeaderName(name) {
			return nil, deny(mediator.CodeHeaderNotAllowed, "header name %q is not a valid HTTP token", truncURL(name))
		}
		if !validHeaderValue(value) {
			return nil, deny(mediator.CodeHeaderNotAllowed, "header %q has a value with control characters", truncURL(name))
		}
		key := http.CanonicalHeaderKey(name)
		if forbiddenHeaders[key] || strings.HasPrefix(key, "Proxy-") {
			return nil, deny(mediator.CodeHeaderNotAllowed, "header %q may not be set by an agent", key)
		}
		if _, dup := h[key]; dup {
			return nil, deny(mediator.CodeHeaderNotAllowed, "header %q is given twice", key)
		}
		h[key] = []string{value}
	}
	if total > MaxHeaderBytes {
		return nil, deny(mediator.CodeTooLarge, "the headers are %d bytes; at most %d are allowed", total, MaxHeaderBytes)
	}
	return h, mediator.Allow("")
}
