package mediator

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func TestDeterminePermissionSet(t *testing.T) {
	sure := SetInference{Set: SetNetworkAPI, Confidence: 1}
	for _, tc := range []struct {
		name     string
		profile  Profile
		inf      SetInference
		want     PermissionSet
		fallback bool
		warning  string
	}{
		{"manual is used as stored", Profile{PermissionSet: SetTrusted, PermissionSource: SetSourceManual}, sure, SetTrusted, false, ""},
		{"manual without a source", Profile{PermissionSet: SetReadonly}, sure, SetReadonly, false, ""},
		{"manual ignores a low inference", Profile{PermissionSet: SetFilesystem, PermissionSource: SetSourceManual}, SetInference{Set: SetTrusted, Confidence: 0.1}, SetFilesystem, false, ""},
		{"inferred and stored, sure", Profile{PermissionSet: SetNetworkAPI, PermissionSource: SetSourceInferred, PermissionConfidence: 0.9}, SetInference{}, SetNetworkAPI, false, ""},
		{"inferred at the threshold", Profile{PermissionSet: SetNetworkAPI, PermissionSource: SetSourceInferred, PermissionConfidence: 0.7}, SetInference{}, SetNetworkAPI, false, ""},
		{"inferred just below the threshold", Profile{PermissionSet: SetNetworkAPI, PermissionSource: SetSourceInferred, PermissionConfidence: 0.69}, SetInference{}, SetMinimal, true, "confidence 0.69, below 0.7"},
		{"inferred NaN", Profile{PermissionSet: SetTrusted, PermissionSource: SetSourceInferred, PermissionConfidence: math.NaN()}, SetInference{}, SetMinimal, true, "below 0.7"},
		{"no stored set: the inference, sure", Profile{}, sure, SetNetworkAPI, false, ""},
		{"no stored set: the inference, unsure", Profile{}, SetInference{Set: SetTrusted, Confidence: 0.5}, SetMinimal, true, "inferred trusted with confidence 0.50"},
		{"no stored set and no inference", Profile{}, SetInference{}, SetMinimal, true, "not known"},
		{"unknown manual name", Profile{PermissionSet: "everything", PermissionSource: SetSourceManual}, sure, SetMinimal, true, `"everything" is not known`},
		{"unknown inferred name", Profile{PermissionSet: "root", PermissionSource: SetSourceInferred, PermissionConfidence: 1}, sure, SetMinimal, true, `"root" is not known`},
		{"unknown source", Profile{PermissionSet: SetTrusted, PermissionSource: "vendor", PermissionConfidence: 1}, sure, SetMinimal, true, `source "vendor"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := DeterminePermissionSet(tc.profile, tc.inf)
			if got.Set != tc.want || got.Fallback != tc.fallback || !strings.Contains(got.Warning, tc.warning) {
				t.Fatalf("got %+v; want %s fallback=%v warning ~ %q", got, tc.want, tc.fallback, tc.warning)
			}
			if tc.warning == "" && got.Warning != "" {
				t.Fatalf("unexpected warning %q", got.Warning)
			}
		})
	}
}

// TestPermissionSetTable holds the table to what docs/permissions.md says
// of it: ordered least to most, every set links what minimal links, and
// trusted is every permission and nothing else.
func TestPermissionSetTable(t *testing.T) {
	want := []PermissionSet{SetMinimal, SetReadonly, SetFilesystem, SetNetworkAPI, SetMCPStandard, SetTrusted}
	if !slices.Equal(PermissionSets(), want) {
		t.Fatalf("order %v; want %v", PermissionSets(), want)
	}
	for _, tc := range []struct {
		set       PermissionSet
		perms     []Permission
		workspace WorkspaceAccess
		fetch     bool
		env       []string
	}{
		{SetMinimal, []Permission{PermConsoleLog}, WorkspaceNone, false, nil},
		{SetReadonly, []Permission{PermConsoleLog, PermPageRead, PermShell, PermWorkspaceRead}, WorkspaceRead, false, nil},
		{SetFilesystem, []Permission{PermConsoleLog, PermPageRead, PermMemory, PermShell, PermWorkspaceRead, PermWorkspaceWrite}, WorkspaceReadWrite, false, nil},
		{SetNetworkAPI, []Permission{PermConsoleLog, PermNetworkFetch}, WorkspaceNone, true, nil},
		{SetMCPStandard, []Permission{PermConsoleLog, PermPageRead, PermPageWrite, PermClipboardWrite, PermNotifications, PermNetworkFetch, PermMemory, PermShell, PermWorkspaceRead, PermWorkspaceWrite, PermMCPCall}, WorkspaceReadWrite, true, []string{EnvAgentID, EnvSessionLevel}},
		{SetTrusted, knownPermissions, WorkspaceReadWrite, true, []string{EnvAgentID, EnvSessionLevel}},
	} {
		t.Run(string(tc.set), func(t *testing.T) {
			r, ok := SetRule(tc.set)
			if !ok {
				t.Fatal("no row")
			}
			for _, p := range knownPermissions {
				if r.Allows(p) != slices.Contains(tc.perms, p) {
					t.Errorf("Allows(%s) = %v", p, r.Allows(p))
				}
			}
			if r.Workspace != tc.workspace || r.Fetch() != tc.fetch || !slices.Equal(r.Env, tc.env) {
				t.Errorf("row %+v", r)
			}
			// Nothing outside the known permissions can be in any set:
			// processes, sockets and foreign functions are not permissions.
			for _, p := range r.Permissions {
				if _, err := ParsePermission(string(p)); err != nil {
					t.Errorf("%s: %v", p, err)
				}
			}
		})
	}
	for _, name := range []string{"run", "ffi", "process", "socket", "net.listen", "fs.any"} {
		if _, err := ParsePermission(name); CodeOf(err) != CodeUnknownPermission {
			t.Errorf("%q is a permission (%v); no set may offer it", name, err)
		}
	}
}

func TestSmallestSet(t *testing.T) {
	for _, tc := range []struct {
		perms []Permission
		want  PermissionSet
	}{
		{nil, SetMinimal},
		{[]Permission{PermConsoleLog}, SetMinimal},
		{[]Permission{PermPageRead}, SetReadonly},
		{[]Permission{PermNetworkFetch}, SetNetworkAPI},
		{[]Permission{PermNetworkFetch, PermPageRead}, SetMCPStandard},
		{[]Permission{PermNotifications}, SetMCPStandard},
		{[]Permission{PermClipboardRead}, SetTrusted},
	} {
		if got := SmallestSet(tc.perms); got != tc.want {
			t.Errorf("SmallestSet(%v) = %s; want %s", tc.perms, got, tc.want)
		}
	}
}

func TestProfilePermissionSet(t *testing.T) {
	for _, tc := range []struct {
		name string
		json string
		code Code
		set  PermissionSet
	}{
		{"none named", `{"agentId":"a","permissions":{"required":["network.fetch"]},"capabilities":{}}`, "", ""},
		{"named, source filled", `{"agentId":"a","permissionSet":"network-api","permissions":{"required":["network.fetch"]},"capabilities":{}}`, "", SetNetworkAPI},
		{"manual said", `{"agentId":"a","permissionSet":"readonly","permissionSource":"manual","permissions":{"required":[]},"capabilities":{}}`, "", SetReadonly},
		{"required outside the set", `{"agentId":"a","permissionSet":"minimal","permissions":{"required":["network.fetch"]},"capabilities":{}}`, CodePermissionOutsideSet, ""},
		{"optional outside the set is kept", `{"agentId":"a","permissionSet":"minimal","permissions":{"required":[],"optional":["network.fetch"]},"capabilities":{}}`, "", SetMinimal},
		{"unknown name", `{"agentId":"a","permissionSet":"root","permissions":{"required":[]},"capabilities":{}}`, CodeInvalidProfile, ""},
		{"case variant name", `{"agentId":"a","permissionSet":"Trusted","permissions":{"required":[]},"capabilities":{}}`, CodeInvalidProfile, ""},
		{"claims to be inferred", `{"agentId":"a","permissionSet":"trusted","permissionSource":"inferred","permissionConfidence":1,"permissions":{"required":[]},"capabilities":{}}`, CodeInvalidProfile, ""},
		{"claims a confidence", `{"agentId":"a","permissionSet":"trusted","permissionConfidence":0.9,"permissions":{"required":[]},"capabilities":{}}`, CodeInvalidProfile, ""},
		{"source without a set", `{"agentId":"a","permissionSource":"manual","permissions":{"required":[]},"capabilities":{}}`, CodeInvalidProfile, ""},
		{"repeated set", `{"agentId":"a","permissionSet":"minimal","permissionSet":"trusted","permissions":{"required":[]},"capabilities":{}}`, CodeInvalidProfile, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParseProfile([]byte(tc.json))
			if CodeOf(err) != tc.code {
				t.Fatalf("code %q (%v); want %q", CodeOf(err), err, tc.code)
			}
			if err == nil && p.PermissionSet != tc.set {
				t.Fatalf("set %q; want %q", p.PermissionSet, tc.set)
			}
			if err == nil && p.PermissionSet != "" && p.PermissionSource != SetSourceManual {
				t.Fatalf("source %q; want manual", p.PermissionSource)
			}
		})
	}
	// What the host stores after inferring normalises as it was written.
	stored := Profile{AgentID: "a", PermissionSet: SetNetworkAPI, PermissionSource: SetSourceInferred, PermissionConfidence: 0.8}
	if err := stored.Normalize(); err != nil || stored.PermissionConfidence != 0.8 {
		t.Fatalf("%v %+v", err, stored)
	}
}
