package netproxy

import (
	"errors"
	"fmt"

	"github.com/agentgate/nmhost/mediator"
)

// DenyError is a policy refusal: the URL (or one of its redirect hops, or the
// address its name resolved to) is not something the ACL permits. Nothing
// was sent to the refused target.
type DenyError struct {
	Code   mediator.Code
	Reason string // a sentence for people
	URL    string // the URL that was refused: the request's, or a redirect hop's
	Hop    int    // 0 for the request's own URL, n for the n-th redirect
}

func (e *DenyError) Error() string {
	if e.Hop > 0 {
		return fmt.Sprintf("netproxy: redirect %d to %q denied (%s): %s", e.Hop, e.URL, e.Code, e.Reason)
	}
	return fmt.Sprintf("netproxy: %q denied (%s): %s", e.URL, e.Code, e.Reason)
}

// Unwrap exposes the reason code to mediator.CodeOf and errors.As.
func (e *DenyError) Unwrap() error { return &mediator.Error{Code: e.Code, Msg: e.Reason} }

// IsDenial reports whether err is a policy denial (a *DenyError somewhere in
// its chain), as opposed to a timeout, a DNS failure or an upstream error.
func IsDenial(err error) bool {
	var de *DenyError
	return errors.As(err, &de)
}

func deny(code mediator.Code, format string, args ...any) mediator.Decision {
	return mediator.Deny(code, fmt.Sprintf(format, args...))
}

// denyErr turns a denying decision into a *DenyError for the given URL/hop.
func denyErr(d mediator.Decision, rawURL string, hop int) *DenyError {
	code := d.Code
	if code == "" || code == mediator.CodeAllowed {
		code = mediator.CodeInternal
	}
	return &DenyError{Code: code, Reason: d.Reason, URL: truncURL(rawURL), Hop: hop}
}

// truncURL keeps refused URLs in errors and logs to a readable size; a
// hostile URL may be many kilobytes.
func truncURL(s string) string { return mediator.Truncate(s, maxURLInMessage) }

// maxURLInMessage bounds a URL quoted in an error or a log line.
const maxURLInMessage = 512
