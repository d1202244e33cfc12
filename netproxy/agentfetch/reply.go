package agentfetch

import (
	"encoding/base64"
	"encoding/json"

	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/netproxy"
)

// Reply is a fetch result as the protocol and the restricted API carry it.
// Body is text when the bytes are valid UTF-8 and that is no larger than
// base64 once escaped, and base64 otherwise; BodyEncoding says which. It is
// the shape a reader decodes; Result writes it.
type Reply struct {
	Status       int                 `json:"status"`
	StatusText   string              `json:"statusText"`
	Headers      map[string][]string `json:"headers"`
	Body         string              `json:"body"`
	BodyEncoding string              `json:"bodyEncoding"`
	FinalURL     string              `json:"finalUrl"`
	Redirects    []string            `json:"redirects,omitempty"`
}

// replyHead is Reply without its body, which Result appends itself.
type replyHead struct {
	Status       int                 `json:"status"`
	StatusText   string              `json:"statusText"`
	Headers      map[string][]string `json:"headers"`
	BodyEncoding string              `json:"bodyEncoding"`
	FinalURL     string              `json:"finalUrl"`
	Redirects    []string            `json:"redirects,omitempty"`
}

// Result is a response ready to be sent as a Reply. It writes the JSON
// straight from the response body into one buffer of the exact size:
// a body of up to 32 MiB would otherwise be copied into a string, escaped
// into the encoder's growing buffer and copied again, about five times its
// size at peak. Text that would grow past base64 when escaped (a body of
// control characters grows six-fold) is sent as base64, so the body's JSON
// is never more than 4/3 of its size.
type Result struct {
	resp    *netproxy.Response
	base64  bool
	escaped int    // the body's length as the inside of a JSON string, when !base64
	head    []byte // the JSON of every field but the body, without the closing brace
}

// NewResult prepares resp to be sent. The caller calls Release once the
// reply is written.
func NewResult(resp *netproxy.Response) (*Result, error) {
	r := &Result{resp: resp}
	escaped, ok := escapedLen(resp.Body)
	r.base64 = !ok || escaped > base64.StdEncoding.EncodedLen(len(resp.Body))
	r.escaped = escaped
	encoding := "text"
	if r.base64 {
		encoding = "base64"
	}
	head, err := json.Marshal(replyHead{Status: resp.Status, StatusText: resp.StatusText, Headers: resp.Headers,
		BodyEncoding: encoding, FinalURL: resp.FinalURL, Redirects: resp.Redirects})
	if err != nil {
		return nil, err
	}
	r.head = head[:len(head)-1]
	return r, nil
}

// JSONLen is the exact length of the JSON AppendJSON writes.
func (r *Result) JSONLen() int {
	n := len(r.head) + len(`,"body":"`) + len(`"}`)
	if r.base64 {
		return n + base64.StdEncoding.EncodedLen(len(r.resp.Body))
	}
	return n + r.escaped
}

// AppendJSON appends the Reply's JSON to dst, the body member last.
func (r *Result) AppendJSON(dst []byte) []byte {
	dst = append(dst, r.head...)
	dst = append(dst, `,"body":"`...)
	if r.base64 {
		dst = base64.StdEncoding.AppendEncode(dst, r.resp.Body)
	} else {
		dst = appendEscaped(dst, r.resp.Body)
	}
	return append(dst, `"}`...)
}

// JSONParts is what AppendJSON writes, in three pieces: the fields before
// the body's text, the body's text, and the closing bytes. The middle one
// is the fetched body itself when it is text with nothing to escape, so a
// reply split into frames is encoded from it straight into each frame.
func (r *Result) JSONParts() [][]byte {
	head := make([]byte, 0, len(r.head)+len(`,"body":"`))
	head = append(append(head, r.head...), `,"body":"`...)
	var body []byte
	switch {
	case r.base64:
		body = base64.StdEncoding.AppendEncode(make([]byte, 0, base64.StdEncoding.EncodedLen(len(r.resp.Body))), r.resp.Body)
	case r.escaped == len(r.resp.Body):
		body = r.resp.Body
	default:
		body = appendEscaped(make([]byte, 0, r.escaped), r.resp.Body)
	}
	return [][]byte{head, body, []byte(`"}`)}
}

// MarshalJSON makes a Result usable wherever JSON is encoded.
func (r *Result) MarshalJSON() ([]byte, error) {
	return r.AppendJSON(make([]byte, 0, r.JSONLen())), nil
}

// Release returns the body's memory to the fetcher's budget.
func (r *Result) Release() { r.resp.Release() }

// DecodeBody is a request body as an agent or the extension sends it:
// text as is, or base64 for bytes that are not text. Anything else is
// bad_request. The module runtime, network-fetch and Python agents'
// fetches all read bodies through it.
func DecodeBody(body, encoding string) ([]byte, error) {
	switch encoding {
	case "", "text":
		return []byte(body), nil
	case "base64":
		b, err := base64.StdEncoding.DecodeString(body)
		if err != nil {
			return nil, mediator.Errorf(mediator.CodeBadRequest, "the fetch body is not valid base64")
		}
		return b, nil
	}
	return nil, mediator.Errorf(mediator.CodeBadRequest, "bodyEncoding must be text or base64, not %q", mediator.Truncate(encoding, 16))
}
