package pyagent

import (
	"testing"

	"github.com/agentgate/nmhost/mediator"
)

// FuzzInspect: any source is read or refused with a source code; a read
// names a known set, a confidence that is never certain (Python can reach
// names its text does not spell), and only known functions' permissions.
func FuzzInspect(f *testing.F) {
	f.Add([]byte("text = await restricted_api.getPageText()\nrestricted_api.log(text)\n"))
	f.Add([]byte("f = getattr(restricted_api, 'fe' + 'tch')\n"))
	f.Add([]byte("# restricted_api.writeToClipboard('x')\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		in, err := Inspect(src)
		if err != nil {
			if code := mediator.CodeOf(err); code != mediator.CodeBadRequest && code != mediator.CodeTooLarge {
				t.Fatalf("refused with %s: %v", code, err)
			}
			return
		}
		if _, ok := mediator.SetRule(in.Set); !ok {
			t.Fatalf("unknown set %q", in.Set)
		}
		if !(in.Confidence > 0 && in.Confidence < 1) {
			t.Fatalf("confidence %v", in.Confidence)
		}
		for _, u := range in.Uses {
			if u.Permission != "" {
				if _, err := mediator.ParsePermission(string(u.Permission)); err != nil {
					t.Fatalf("use %+v names an unknown permission", u)
				}
			}
		}
	})
}
