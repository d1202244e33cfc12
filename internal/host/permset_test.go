package host

import (
	"context"
	"encoding/base64"
	"testing"

	"github.com/agentgate/nmhost/internal/testwasm"
	"github.com/agentgate/nmhost/mediator"
)

// fetchOnlyModule imports restricted_api.fetch and calls it from _start.
func fetchOnlyModule(called bool) []byte {
	types := testwasm.Section(1, testwasm.Vec([][]byte{{0x60, 0x02, 0x7f, 0x7f, 0x01, 0x7f}, {0x60, 0x00, 0x00}}))
	imports := testwasm.Section(2, testwasm.Vec([][]byte{append(append(testwasm.Name("restricted_api"), testwasm.Name("fetch")...), 0x00, 0x00)}))
	funcs := testwasm.Section(3, testwasm.Vec([][]byte{{0x01}}))
	exports := testwasm.Section(7, testwasm.Vec([][]byte{append(testwasm.Name("_start"), 0x00, 0x01)}))
	body := []byte{0x00, 0x0b}
	if called {
		body = []byte{0x00, 0x41, 0x00, 0x41, 0x00, 0x10, 0x00, 0x1a, 0x0b}
	}
	code := testwasm.Section(10, testwasm.Vec([][]byte{append(testwasm.ULEB128(uint32(len(body))), body...)}))
	out := []byte("\x00asm\x01\x00\x00\x00")
	for _, s := range [][]byte{types, imports, funcs, exports, code} {
		out = append(out, s...)
	}
	return out
}

// TestInstallChoosesThePermissionSet: install-agent stores the set the
// profile names (manual) or the one it infers, with its source and
// confidence, and refuses a required permission outside the set it will
// use, an unsure inference's fallback included.
func TestInstallChoosesThePermissionSet(t *testing.T) {
	h := newHarness(t, true)
	profile := func(id string, set string, required ...string) map[string]any {
		p := map[string]any{
			"agentId":      id,
			"permissions":  map[string]any{"required": required},
			"capabilities": map[string]any{"networkAccess": true, "allowedHosts": []string{"example.com"}},
		}
		if set != "" {
			p["permissionSet"] = set
		}
		return p
	}
	module := func(called bool) string { return base64.StdEncoding.EncodeToString(fetchOnlyModule(called)) }
	for _, tc := range []struct {
		name       string
		params     map[string]any
		code       mediator.Code
		set        mediator.PermissionSet
		source     string
		confidence float64
	}{
		{"inferred from the module", map[string]any{"profile": profile("inf", "", "network.fetch"), "module": module(true)},
			"", mediator.SetNetworkAPI, mediator.SetSourceInferred, 1},
		{"inferred from the profile without a module", map[string]any{"profile": profile("bare", "", "network.fetch", "page.read")},
			"", mediator.SetMCPStandard, mediator.SetSourceInferred, 1},
		{"manual", map[string]any{"profile": profile("man", "trusted", "network.fetch"), "module": module(true)},
			"", mediator.SetTrusted, mediator.SetSourceManual, 0},
		{"manual set below what is required", map[string]any{"profile": profile("low", "readonly", "network.fetch")},
			mediator.CodePermissionOutsideSet, "", "", 0},
		{"unsure inference falls back to minimal", map[string]any{"profile": profile("unsure", "", "network.fetch"), "module": module(false)},
			mediator.CodePermissionOutsideSet, "", "", 0},
		{"a profile vouching for itself", map[string]any{"profile": func() map[string]any {
			p := profile("self", "trusted", "network.fetch")
			p["permissionSource"], p["permissionConfidence"] = "inferred", 1
			return p
		}()}, mediator.CodeInvalidProfile, "", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.call("install-agent", tc.params)
			if tc.code != "" {
				h.wantCode(r, tc.code)
				return
			}
			if !r.Success {
				t.Fatalf("%+v", r)
			}
			id := tc.params["profile"].(map[string]any)["agentId"].(string)
			rec, err := h.st.Agent(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			p := rec.Profile
			if p.PermissionSet != tc.set || p.PermissionSource != tc.source || p.PermissionConfidence != tc.confidence {
				t.Fatalf("stored %q %q %v; want %q %q %v", p.PermissionSet, p.PermissionSource, p.PermissionConfidence, tc.set, tc.source, tc.confidence)
			}
		})
	}
	for _, id := range []string{"low", "unsure", "self"} {
		if _, err := h.st.Agent(context.Background(), id); mediator.CodeOf(err) != mediator.CodeUnknownAgent {
			t.Errorf("refused install of %s left a record: %v", id, err)
		}
	}
}
