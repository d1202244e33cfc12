package agentfetch

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/netproxy"
)

// TestResultEncodesExactlyAndCompactly: whatever the body, the JSON a
// Result writes decodes to the same bytes, has exactly JSONLen bytes, and
// its body is never larger than base64 of the body.
func TestResultEncodesExactlyAndCompactly(t *testing.T) {
	cases := []struct {
		name     string
		body     string
		encoding string
	}{
		{"plain text", "hello agent", "text"},
		{"empty", "", "text"},
		{"quotes and newlines", "some words: a \"b\"\n\\c\td\r", "text"},
		{"html is not escaped", "<script>&amp;</script>", "text"},
		{"unicode", "héllo \u2028 wörld 😀", "text"},
		{"control characters grow six-fold: base64", strings.Repeat("\x01", 3000), "base64"},
		{"a few controls stay text", "line\x00one" + strings.Repeat("x", 100), "text"},
		{"invalid UTF-8", "\xff\x00\xfe", "base64"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := &netproxy.Response{Status: 200, StatusText: "OK", Headers: map[string][]string{"X": {"1"}}, Body: []byte(c.body), FinalURL: "http://127.0.0.1/"}
			r, err := NewResult(resp)
			if err != nil {
				t.Fatal(err)
			}
			out := r.AppendJSON(nil)
			if len(out) != r.JSONLen() {
				t.Fatalf("wrote %d bytes; JSONLen said %d", len(out), r.JSONLen())
			}
			if joined := bytes.Join(r.JSONParts(), nil); !bytes.Equal(joined, out) {
				t.Fatalf("JSONParts joined:\n%s\nAppendJSON:\n%s", joined, out)
			}
			var got Reply
			dec := json.NewDecoder(strings.NewReader(string(out)))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&got); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			if got.BodyEncoding != c.encoding {
				t.Fatalf("encoding %s; want %s", got.BodyEncoding, c.encoding)
			}
			body := got.Body
			if got.BodyEncoding == "base64" {
				b, err := base64.StdEncoding.DecodeString(got.Body)
				if err != nil {
					t.Fatal(err)
				}
				body = string(b)
			}
			if body != c.body || got.Status != 200 || got.FinalURL != "http://127.0.0.1/" {
				t.Fatalf("round trip: %+v", got)
			}
			if bodyJSON := len(out) - len(r.head) - len(`,"body":""}`); bodyJSON > base64.StdEncoding.EncodedLen(len(c.body)) && c.encoding != "text" {
				t.Fatalf("body took %d bytes of JSON", bodyJSON)
			}
			if strings.Count(string(out), `"body"`) != 1 {
				t.Fatalf("body member not exactly once: %s", out)
			}
		})
	}
}

func TestDecodeBody(t *testing.T) {
	for _, tc := range []struct {
		name, body, enc, want string
		code                  mediator.Code
	}{
		{"text", "héllo", "", "héllo", ""},
		{"text named", "x", "text", "x", ""},
		{"base64", "AAEC", "base64", "\x00\x01\x02", ""},
		{"not base64", "!!!", "base64", "", mediator.CodeBadRequest},
		{"unknown encoding", "x", "gzip", "", mediator.CodeBadRequest},
		{"case variant", "x", "Base64", "", mediator.CodeBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := DecodeBody(tc.body, tc.enc)
			if mediator.CodeOf(err) != tc.code || string(b) != tc.want {
				t.Fatalf("%q %v; want %q %q", b, err, tc.want, tc.code)
			}
		})
	}
}
