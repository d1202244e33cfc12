package netproxy

import (
	"unicode/utf8"

	"golang.org/x/net/http/httpguts"

	"github.com/agentgate/nmhost/mediator"
)

// rawURLChecks are the rules on a URL's raw text, before any parsing: they
// apply to agent URLs and to redirect Locations alike.
func rawURLChecks(raw string) mediator.Decision {
	if len(raw) > MaxURLLen {
		return deny(mediator.CodeTooLarge, "the URL is %d bytes long; at most %d are allowed", len(raw), MaxURLLen)
	}
	if raw == "" {
		return deny(mediator.CodeInvalidURL, "the URL is empty")
	}
	if !utf8.ValidString(raw) {
		return deny(mediator.CodeInvalidURL, "the URL is not valid UTF-8")
	}
	for _, r := range raw {
		switch {
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			return deny(mediator.CodeInvalidURL, "the URL contains a control character")
		case r == ' ':
			return deny(mediator.CodeInvalidURL, "the URL contains a space; percent-encode it")
		case r == '\\':
			// Browsers read '\' as '/', Go does not: refusing it removes
			// the disagreement about where the host ends.
			return deny(mediator.CodeInvalidURL, "the URL contains a backslash")
		}
	}
	return mediator.Allow("")
}

func validHeaderName(s string) bool { return httpguts.ValidHeaderFieldName(s) }

func validHeaderValue(s string) bool {
	return len(s) <= MaxHeaderBytes && httpguts.ValidHeaderFieldValue(s)
}
