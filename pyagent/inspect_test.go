package pyagent

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentgate/nmhost/mediator"
)

func TestInspect(t *testing.T) {
	cases := []struct {
		name    string
		src     string
		set     mediator.PermissionSet
		conf    float64
		names   []string
		dynamic bool
		pure    bool
	}{
		{"no calls", "print('hi')\n", mediator.SetMinimal, ConfidencePlain, nil, false, true},
		{"log only", "restricted_api.log('x')\n", mediator.SetMinimal, ConfidencePlain, []string{"log"}, false, true},
		{"page read", "t = restricted_api.getPageText()\nrestricted_api.log(t)\n", mediator.SetReadonly, ConfidencePlain, []string{"getPageText", "log"}, false, false},
		{"fetch awaited", "r = await restricted_api.fetch('http://a/')\n", mediator.SmallestSet([]mediator.Permission{mediator.PermNetworkFetch}), ConfidencePlain, []string{"fetch"}, false, false},
		{"spaces around the dot", "restricted_api . writeToClipboard('x')\n", mediator.SmallestSet([]mediator.Permission{mediator.PermClipboardWrite}), ConfidencePlain, []string{"writeToClipboard"}, false, false},
		{"comment line ignored", "# restricted_api.fetch('x')\nrestricted_api.log('a')\n", mediator.SetMinimal, ConfidencePlain, []string{"log"}, false, true},
		{"unknown name", "restricted_api.spawn('sh')\n", mediator.SetMinimal, ConfidencePlain, []string{"spawn"}, false, true},
		// Hostile: names reached without spelling them.
		{"getattr", "f = getattr(restricted_api, 'fe' + 'tch')\n", mediator.SetMinimal, ConfidenceDynamic, nil, true, false},
		{"eval", "eval('restricted_api.' + 'fetch')\n", mediator.SetMinimal, ConfidenceDynamic, []string{}, true, false},
		{"exec", "exec(code)\n", mediator.SetMinimal, ConfidenceDynamic, nil, true, false},
		{"__import__", "__import__('js')\n", mediator.SetMinimal, ConfidenceDynamic, nil, true, false},
		{"import js", "import js\nrestricted_api.log(1)\n", mediator.SetMinimal, ConfidenceDynamic, []string{"log"}, true, false},
		{"alias", "api = restricted_api\napi.fetch('x')\n", mediator.SetMinimal, ConfidenceDynamic, nil, true, false},
		{"__dict__", "restricted_api.__dict__['fetch']\n", mediator.SetMinimal, ConfidenceDynamic, []string{"__dict__"}, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in, err := Inspect([]byte(c.src))
			if err != nil {
				t.Fatal(err)
			}
			if in.Set != c.set || in.Confidence != c.conf || (len(in.Dynamic) > 0) != c.dynamic || in.Pure != c.pure {
				t.Errorf("set %s conf %v dynamic %v pure %v; want %s %v %v %v", in.Set, in.Confidence, in.Dynamic, in.Pure, c.set, c.conf, c.dynamic, c.pure)
			}
			var names []string
			for _, u := range in.Uses {
				names = append(names, u.Name)
			}
			if len(c.names) > 0 && !slices.Equal(names, c.names) {
				t.Errorf("names = %v, want %v", names, c.names)
			}
			if in.Confidence >= 1 {
				t.Error("a Python inference is never certain")
			}
		})
	}
}

func TestInspectRefusesWhatIsNotSource(t *testing.T) {
	cases := []struct {
		name string
		src  string
		code mediator.Code
	}{
		{"empty", "", mediator.CodeBadRequest},
		{"wasm module", "\x00asm\x01\x00\x00\x00", mediator.CodeBadRequest},
		{"not UTF-8", "print('\xff')", mediator.CodeBadRequest},
		{"NUL byte", "print(1)\x00", mediator.CodeBadRequest},
		{"too large", strings.Repeat("#", MaxSourceBytes+1), mediator.CodeTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Inspect([]byte(c.src))
			if got := mediator.CodeOf(err); got != c.code {
				t.Errorf("code = %q (%v), want %q", got, err, c.code)
			}
		})
	}
}

func TestFunctionsAreTheModuleOperations(t *testing.T) {
	for _, f := range functions {
		t.Run(f.Name, func(t *testing.T) {
			if f.Permission == "" {
				t.Errorf("%s (%s) has no permission in the policy's table", f.Name, f.Operation)
			}
			if got, ok := Lookup(f.Name); !ok || got != f {
				t.Errorf("Lookup(%q) = %v, %v", f.Name, got, ok)
			}
		})
	}
	for _, hostile := range []string{"", "Fetch", "FETCH", "fetch ", "__class__", "spawn"} {
		t.Run("unknown/"+hostile, func(t *testing.T) {
			if _, ok := Lookup(hostile); ok {
				t.Errorf("Lookup(%q) found a function", hostile)
			}
		})
	}
	got := Present([]mediator.Permission{mediator.PermPageRead, mediator.PermConsoleLog})
	if !slices.Equal(got, []string{"log", "querySelector", "querySelectorAll", "getPageText"}) {
		t.Errorf("Present(page.read, console.log) = %v", got)
	}
	if got := Present(nil); len(got) != 0 {
		t.Errorf("Present(nothing) = %v", got)
	}
}
