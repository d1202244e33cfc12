package cli

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentgate/nmhost/internal/app/selfcheck"
)

// TestPrintCheckFails: one rule that did not fire makes the command fail,
// and its line says FAIL with what was tried, wanted and got; skips do not.
func TestPrintCheckFails(t *testing.T) {
	tests := []struct {
		name    string
		results []selfcheck.Result
		fail    bool
		line    string
	}{
		{"all fired", []selfcheck.Result{{Class: "url", Tried: "GET x", Want: "refused (a)", Got: "refused (a)", OK: true}}, false,
			"ok   url       GET x: want refused (a); got refused (a)"},
		{"one did not", []selfcheck.Result{{Class: "url", Tried: "GET x", Want: "refused (a)", Got: "refused (a)", OK: true},
			{Class: "dns", Tried: "GET y", Want: "refused (b)", Got: "not refused"}}, true,
			"FAIL dns       GET y: want refused (b); got not refused"},
		{"skip", []selfcheck.Result{{Class: "redirect", Tried: "302 to z", Skip: "why"}}, false,
			"skip redirect  302 to z: why"},
		{"escaped", []selfcheck.Result{{Class: "url", Tried: "GET \x1b[2J", Want: "w", Got: "g"}}, true,
			`FAIL url       GET \x1b[2J: want w; got g`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			err := printCheck(&b, "a", "medium", tt.results)
			if errors.Is(err, errCheckFailed) != tt.fail {
				t.Fatalf("err %v, want failure %v", err, tt.fail)
			}
			if !strings.Contains(b.String(), tt.line+"\n") {
				t.Fatalf("output\n%s\nlacks\n%s", b.String(), tt.line)
			}
		})
	}
}
