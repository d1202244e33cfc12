package selfcheck

import (
	"strings"
	"testing"

	"github.com/agentgate/nmhost/netproxy"
)

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
