package wasmhost

import (
	"testing"

	"github.com/agentgate/nmhost/mediator"
)

// FuzzInspect: the inspector answers any module validate accepts, never
// panics, and its answer is well formed: a known set, a confidence
// between 0 and 1, 0 exactly when an import is refused, and pure only
// under minimal.
func FuzzInspect(f *testing.F) {
	f.Add(wmodule{}.bytes())
	f.Add(wmodule{imports: []wimport{importOf("log"), importOf("fetch")}, start: callAndDrop(1, 2)}.bytes())
	f.Add(wmodule{imports: []wimport{wasi("path_open", 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7e, 0x7e, 0x7f, 0x7f)}}.bytes())
	f.Fuzz(func(t *testing.T, module []byte) {
		in, err := Inspect(module)
		if err != nil {
			if code := mediator.CodeOf(err); code != mediator.CodeInvalidModule && code != mediator.CodeModuleLimits {
				t.Fatalf("refused with %s: %v", code, err)
			}
			return
		}
		if _, ok := mediator.SetRule(in.Set); !ok {
			t.Fatalf("unknown set %q", in.Set)
		}
		if !(in.Confidence >= 0 && in.Confidence <= 1) || (in.Refused != "") != (in.Confidence == 0) {
			t.Fatalf("confidence %v with refused %q", in.Confidence, in.Refused)
		}
		if in.Pure && in.Set != mediator.SetMinimal {
			t.Fatalf("pure under %s", in.Set)
		}
		if len(in.Reasons) == 0 {
			t.Fatal("no reason given")
		}
	})
}
