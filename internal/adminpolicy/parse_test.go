package adminpolicy

import (
	"errors"
	"testing"

	"github.com/agentgate/nmhost/mediator"
)

// TestParseRefusesWhatIsNotAPolicyObject: a policy is one JSON object.
// JSON null, an array, a string, a number or an object with a member the
// schema does not have is a malformed file, refused with bad_request like
// any other, never read as "no policy" (which would let a truncated or
// hand-broken file lift every rule without a word).
func TestParseRefusesWhatIsNotAPolicyObject(t *testing.T) {
	for _, tc := range []struct {
		name string
		doc  string
	}{
		{"null", `null`},
		{"null with spaces", " \n null \t"},
		{"an empty array", `[]`},
		{"an array of a policy", `[{"maxSessionLevel":"low"}]`},
		{"an empty string", `""`},
		{"a string", `"maxSessionLevel"`},
		{"a number", `0`},
		{"true", `true`},
		{"an empty file", ``},
		{"only spaces", "  \n"},
		{"an unknown member", `{"allowEverything":true}`},
		{"an unknown member beside a known one", `{"maxSessionLevel":"low","extra":1}`},
		{"two documents", `{} {}`},
		{"an object then null", `{} null`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse([]byte(tc.doc), "test")
			var me *mediator.Error
			if !errors.As(err, &me) || me.Code != mediator.CodeBadRequest {
				t.Fatalf("Parse(%q) = %+v, %v; want a %s refusal", tc.doc, p, err, mediator.CodeBadRequest)
			}
		})
	}
	t.Run("an empty object is a policy without rules", func(t *testing.T) {
		p, err := Parse([]byte(` {} `), "test")
		if err != nil || p.Source != "test" || len(p.DeniedHosts)+len(p.BlockedPermissions) != 0 {
			t.Fatalf("Parse({}) = %+v, %v", p, err)
		}
	})
}
