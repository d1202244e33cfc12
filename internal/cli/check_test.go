package cli

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentgate/nmhost/netproxy"
)

// TestPrintCheckFails: one rule that did not fire makes the command fail,
// and its line says FAIL with what was tried, wanted and got; skips do not.
func TestPrintCheckFails(t *testing.T) {
	tests := []struct {
		name    string
		results []checkResult
		fail    bool
		line    string
	}{
		{"all fired", []checkResult{{class: "url", tried: "GET x", want: "refused (a)", got: "refused (a)", ok: true}}, false,
			"ok   url       GET x: want refused (a); got refused (a)"},
		{"one did not", []checkResult{{class: "url", tried: "GET x", want: "refused (a)", got: "refused (a)", ok: true},
			{class: "dns", tried: "GET y", want: "refused (b)", got: "not refused"}}, true,
			"FAIL dns       GET y: want refused (b); got not refused"},
		{"skip", []checkResult{{class: "redirect", tried: "302 to z", skip: "why"}}, false,
			"skip redirect  302 to z: why"},
		{"escaped", []checkResult{{class: "url", tried: "GET \x1b[2J", want: "w", got: "g"}}, true,
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

func TestCoversLoopback(t *testing.T) {
	tests := []struct {
		entries []string
		want    bool
	}{
		{[]string{"example.com"}, false},
		{[]string{"127.0.0.1"}, true},
		{[]string{"127.0.0.1:8080"}, false}, // another port than the canary's
		{[]string{"[::1]"}, true},
		{[]string{"localhost"}, true},
		{[]string{"127.0.0.0/8"}, true},
		{[]string{"10.0.0.0/8"}, false},
		{[]string{"!127.0.0.1"}, false},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.entries, ","), func(t *testing.T) {
			acl, err := netproxy.NewACL(tt.entries)
			if err != nil {
				t.Fatal(err)
			}
			if got := coversLoopback(acl); got != tt.want {
				t.Fatalf("coversLoopback = %v, want %v", got, tt.want)
			}
		})
	}
	// A look-alike reads the same and is another name.
	if l, ok := lookalike("example.com"); !ok || l != "\u0435xample.com" {
		t.Fatalf("lookalike %q %v", l, ok)
	}
}
