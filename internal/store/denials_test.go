package store

import (
	"testing"
	"time"

	"github.com/agentgate/nmhost/mediator"
)

func TestParseFilterTime(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_000)
	cases := []struct {
		name, in string
		want     int64
		code     mediator.Code // "" when it must parse
	}{
		{"empty is no bound", "", 0, ""},
		{"ms", "1700000000000", 1_700_000_000_000, ""},
		{"rfc3339", "2026-01-02T03:04:05Z", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixMilli(), ""},
		{"duration ago", "90m", now.Add(-90 * time.Minute).UnixMilli(), ""},
		{"negative ms", "-5", 0, mediator.CodeBadRequest},
		{"before 1970", "1969-12-31T23:59:59Z", 0, mediator.CodeBadRequest},
		// A duration longer than the time since 1970 lands before it.
		{"duration past the epoch", "600000h", 0, mediator.CodeBadRequest},
		{"words", "yesterday", 0, mediator.CodeBadRequest},
		{"overflowing ms", "99999999999999999999", 0, mediator.CodeBadRequest},
		{"nul", "1\x00", 0, mediator.CodeBadRequest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseFilterTime(c.in, now)
			if c.code != "" {
				wantCode(t, err, c.code)
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("ParseFilterTime(%q) = %d, %v; want %d", c.in, got, err, c.want)
			}
		})
	}
}
