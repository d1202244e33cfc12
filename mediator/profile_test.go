package mediator

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// fixtureCodes maps each file in testdata/profiles to the code ParseProfile
// must return ("" = must parse). testdata/profiles/README.md explains each.
var fixtureCodes = map[string]Code{
	"good_minimal.json": "",
	"good_full.json":    "",
	"bad_unknown_field_misspelt_allowedhosts.json": CodeInvalidProfile,
	"bad_unknown_permission_run.json":              CodeUnknownPermission,
	"bad_unknown_permission_ffi_in_optional.json":  CodeUnknownPermission,
	"bad_agentid_path_traversal.json":              CodeInvalidProfile,
	"bad_agentid_nul_byte.json":                    CodeInvalidProfile,
	"bad_agentid_unicode_bidi.json":                CodeInvalidProfile,
	"bad_allowedhosts_10001_entries.json":          CodeInvalidProfile,
	"bad_allowedhosts_empty_entry.json":            CodeInvalidAllowedHost,
	"bad_negative_maxmemory.json":                  CodeInvalidProfile,
	"bad_maxmemory_fraction.json":                  CodeInvalidProfile,
	"bad_executiontimeout_over_limit.json":         CodeInvalidProfile,
	"bad_domaccess_uppercase_FULL.json":            CodeInvalidProfile,
	"bad_trailing_garbage.json":                    CodeInvalidProfile,
	"bad_not_an_object_array.json":                 CodeInvalidProfile,
	"bad_not_an_object_string.json":                CodeInvalidProfile,
	"bad_null.json":                                CodeInvalidProfile,
	"bad_empty_file.json":                          CodeInvalidProfile,
	"bad_deeply_nested_100k.json":                  CodeInvalidProfile,
	"bad_required_not_a_list.json":                 CodeInvalidProfile,
	"bad_modulesha256_uppercase.json":              CodeInvalidProfile,
	"bad_duplicate_key_last_wins_invalid.json":     CodeInvalidProfile,
	"bad_duplicate_key_same_value.json":            CodeInvalidProfile,
	"bad_case_variant_capabilities.json":           CodeInvalidProfile,
	"bad_case_variant_required.json":               CodeInvalidProfile,
	"bad_case_variant_top_level.json":              CodeInvalidProfile,
}

func TestParseProfileFixtures(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "profiles", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(fixtureCodes) {
		t.Errorf("%d fixture files, %d table entries: keep them in step", len(files), len(fixtureCodes))
	}
	readme, err := os.ReadFile(filepath.Join("testdata", "profiles", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(strings.TrimSuffix(name, ".json"), func(t *testing.T) {
			want, ok := fixtureCodes[name]
			if !ok {
				t.Fatalf("fixture %s has no expected code in fixtureCodes", name)
			}
			if !strings.Contains(string(readme), name) {
				t.Errorf("fixture %s is not explained in README.md", name)
			}
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			p, err := ParseProfile(data)
			if want == "" {
				if err != nil {
					t.Fatalf("ParseProfile: %v", err)
				}
				checkNormalised(t, p)
				return
			}
			if err == nil {
				t.Fatalf("ParseProfile accepted it: %+v", p)
			}
			if got := CodeOf(err); got != want {
				t.Fatalf("code = %s; want %s (%v)", got, want, err)
			}
			if len(err.Error()) > 2000 {
				t.Errorf("error message is %d bytes; hostile input must not blow it up", len(err.Error()))
			}
		})
	}
}

// checkNormalised asserts the invariants Normalize promises.
func checkNormalised(t *testing.T, p Profile) {
	t.Helper()
	c := p.Capabilities
	if c.AllowedHosts == nil || c.MaxMemory <= 0 || c.ExecutionTimeout <= 0 || c.DOMAccess == "" {
		t.Errorf("defaults not filled: %+v", c)
	}
	for _, perms := range [][]Permission{p.Permissions.Required, p.Permissions.Optional} {
		if !slices.IsSorted(perms) || len(slices.Compact(slices.Clone(perms))) != len(perms) {
			t.Errorf("permissions not sorted and unique: %v", perms)
		}
	}
	q := p
	q.Permissions.Required = slices.Clone(p.Permissions.Required)
	q.Permissions.Optional = slices.Clone(p.Permissions.Optional)
	q.Capabilities.AllowedHosts = slices.Clone(p.Capabilities.AllowedHosts)
	if err := q.Normalize(); err != nil || !reflect.DeepEqual(p, q) {
		t.Errorf("Normalize is not idempotent: %+v -> %+v, %v", p, q, err)
	}
}

func TestParseProfile(t *testing.T) {
	good := []struct {
		name  string
		in    string
		check func(t *testing.T, p Profile)
	}{
		{"documented shape", `{"agentId":"a","permissions":{"required":["network.fetch"]},"capabilities":{"networkAccess":true,"allowedHosts":["api.example.com"],"maxMemory":1048576,"executionTimeout":5000,"domAccess":"full"}}`,
			func(t *testing.T, p Profile) {
				if !p.Capabilities.NetworkAccess || p.Capabilities.DOMAccess != DOMFull || p.Capabilities.Timeout().Seconds() != 5 {
					t.Errorf("capabilities = %+v", p.Capabilities)
				}
			}},
		{"defaults", `{"agentId":"a"}`, func(t *testing.T, p Profile) {
			c := p.Capabilities
			if c.MaxMemory != DefaultMaxMemory || c.ExecutionTimeout != DefaultTimeoutMS || c.DOMAccess != DOMNone || c.NetworkAccess || len(c.AllowedHosts) != 0 {
				t.Errorf("defaults = %+v", c)
			}
			if p.Permissions.Required == nil {
				t.Error("required is nil; want an empty list")
			}
		}},
		{"duplicates dropped and sorted", `{"agentId":"a","permissions":{"required":["page.read","console.log","page.read"]}}`, func(t *testing.T, p Profile) {
			if !slices.Equal(p.Permissions.Required, []Permission{PermConsoleLog, PermPageRead}) {
				t.Errorf("required = %v", p.Permissions.Required)
			}
		}},
		{"max agent id", `{"agentId":"` + strings.Repeat("a", MaxAgentIDLen) + `"}`, nil},
		{"max limits", `{"agentId":"a","capabilities":{"maxMemory":4294967296,"executionTimeout":600000}}`, nil},
		{"exactly 10000 hosts", `{"agentId":"a","capabilities":{"allowedHosts":` + hostsJSON(MaxAllowedHosts) + `}}`, nil},
		{"trailing whitespace", "{\"agentId\":\"a\"}\n\t \n", nil},
		{"all permissions", `{"agentId":"a","permissions":{"required":["console.log","page.read","page.write","clipboard.read","clipboard.write","network.fetch","notifications"]}}`, nil},
		{"python runtime", `{"agentId":"a","runtime":"python"}`, func(t *testing.T, p Profile) {
			if !p.IsPython() || p.Runtime != RuntimePython {
				t.Errorf("runtime = %q, IsPython = %v", p.Runtime, p.IsPython())
			}
		}},
		{"audit strict and per call", `{"agentId":"a","audit":{"durability":"strict","calls":"per-call"}}`, func(t *testing.T, p Profile) {
			if !p.Audit.Strict() || !p.Audit.PerCall() {
				t.Errorf("audit %+v; want strict and per-call", p.Audit)
			}
		}},
		{"audit asking nothing", `{"agentId":"a","audit":{}}`, func(t *testing.T, p Profile) {
			if p.Audit != nil || p.Audit.Strict() || p.Audit.PerCall() {
				t.Errorf("audit %+v; want none", p.Audit)
			}
		}},
		{"wasm runtime named", `{"agentId":"a","runtime":"wasm"}`, func(t *testing.T, p Profile) {
			if p.IsPython() {
				t.Error("a wasm profile reads as python")
			}
		}},
		{"no runtime is wasm", `{"agentId":"a"}`, func(t *testing.T, p Profile) {
			if p.IsPython() || p.Runtime != "" {
				t.Errorf("runtime = %q", p.Runtime)
			}
		}},
	}
	for _, c := range good {
		t.Run("good/"+c.name, func(t *testing.T) {
			p, err := ParseProfile([]byte(c.in))
			if err != nil {
				t.Fatalf("ParseProfile: %v", err)
			}
			checkNormalised(t, p)
			if c.check != nil {
				c.check(t, p)
			}
		})
	}

	bad := []struct {
		name string
		in   string
		code Code
	}{
		{"too large", `{"agentId":"a","description":"` + strings.Repeat("x", MaxProfileBytes) + `"}`, CodeTooLarge},
		{"agent id too long", `{"agentId":"` + strings.Repeat("a", MaxAgentIDLen+1) + `"}`, CodeInvalidProfile},
		{"agent id leading dot", `{"agentId":".hidden"}`, CodeInvalidProfile},
		{"agent id with slash", `{"agentId":"a/b"}`, CodeInvalidProfile},
		{"agent id with space", `{"agentId":"a b"}`, CodeInvalidProfile},
		{"agent id not a string", `{"agentId":7}`, CodeInvalidProfile},
		{"missing agent id", `{"permissions":{"required":[]}}`, CodeInvalidProfile},
		{"unknown nested field", `{"agentId":"a","capabilities":{"allowedHosts":[],"fileAccess":true}}`, CodeInvalidProfile},
		{"unknown permission run", `{"agentId":"a","permissions":{"required":["run"]}}`, CodeUnknownPermission},
		{"unknown permission ffi", `{"agentId":"a","permissions":{"required":["ffi"]}}`, CodeUnknownPermission},
		{"permission wrong case", `{"agentId":"a","permissions":{"required":["Network.Fetch"]}}`, CodeUnknownPermission},
		{"empty permission", `{"agentId":"a","permissions":{"required":[""]}}`, CodeUnknownPermission},
		{"10001 hosts", `{"agentId":"a","capabilities":{"allowedHosts":` + hostsJSON(MaxAllowedHosts+1) + `}}`, CodeInvalidProfile},
		{"host too long", `{"agentId":"a","capabilities":{"allowedHosts":["` + strings.Repeat("a", MaxAllowedHostLen+1) + `"]}}`, CodeInvalidAllowedHost},
		{"negative maxMemory", `{"agentId":"a","capabilities":{"maxMemory":-1}}`, CodeInvalidProfile},
		{"maxMemory over 4 GiB", `{"agentId":"a","capabilities":{"maxMemory":4294967297}}`, CodeInvalidProfile},
		{"maxMemory overflows int64", `{"agentId":"a","capabilities":{"maxMemory":99999999999999999999}}`, CodeInvalidProfile},
		{"negative timeout", `{"agentId":"a","capabilities":{"executionTimeout":-5}}`, CodeInvalidProfile},
		{"domAccess FULL", `{"agentId":"a","capabilities":{"domAccess":"FULL"}}`, CodeInvalidProfile},
		{"domAccess readonly", `{"agentId":"a","capabilities":{"domAccess":"readonly"}}`, CodeInvalidProfile},
		{"networkAccess as string", `{"agentId":"a","capabilities":{"networkAccess":"true"}}`, CodeInvalidProfile},
		{"trailing garbage", `{"agentId":"a"}x`, CodeInvalidProfile},
		{"two objects", `{"agentId":"a"}{"agentId":"b"}`, CodeInvalidProfile},
		{"not an object", `["agentId","a"]`, CodeInvalidProfile},
		{"number", `42`, CodeInvalidProfile},
		{"empty", ``, CodeInvalidProfile},
		{"truncated", `{"agentId":"a"`, CodeInvalidProfile},
		{"invalid UTF-8 in name", "{\"agentId\":\"a\",\"name\":\"\xff\xfe\"}", ""},
		{"control char in name", `{"agentId":"a","name":"x\u0007y"}`, CodeInvalidProfile},
		{"deeply nested", `{"agentId":"a","name":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`, CodeInvalidProfile},
		{"bad moduleSha256", `{"agentId":"a","moduleSha256":"abc"}`, CodeInvalidProfile},
		{"runtime Python (case)", `{"agentId":"a","runtime":"Python"}`, CodeInvalidProfile},
		// A profile may only ask the audit trail for more, never less.
		{"audit durability written", `{"agentId":"a","audit":{"durability":"written"}}`, CodeInvalidProfile},
		{"audit durability none", `{"agentId":"a","audit":{"durability":"none"}}`, CodeInvalidProfile},
		{"audit durability Strict (case)", `{"agentId":"a","audit":{"durability":"Strict"}}`, CodeInvalidProfile},
		{"audit calls aggregate", `{"agentId":"a","audit":{"calls":"aggregate"}}`, CodeInvalidProfile},
		{"audit calls off", `{"agentId":"a","audit":{"calls":"off"}}`, CodeInvalidProfile},
		{"audit member case variant", `{"agentId":"a","audit":{"Durability":"strict"}}`, CodeInvalidProfile},
		{"audit member repeated", `{"agentId":"a","audit":{"durability":"strict","durability":""}}`, CodeInvalidProfile},
		{"audit unknown member", `{"agentId":"a","audit":{"level":"none"}}`, CodeInvalidProfile},
		{"runtime javascript", `{"agentId":"a","runtime":"javascript"}`, CodeInvalidProfile},
		{"runtime not a string", `{"agentId":"a","runtime":1}`, CodeInvalidProfile},
		{"runtime twice", `{"agentId":"a","runtime":"wasm","runtime":"python"}`, CodeInvalidProfile},
	}
	for _, c := range bad {
		t.Run("hostile/"+c.name, func(t *testing.T) {
			p, err := ParseProfile([]byte(c.in))
			if c.code == "" {
				// Go replaces invalid UTF-8 with U+FFFD; the result must at
				// least be valid text.
				if err == nil && !json.Valid(mustJSON(t, p)) {
					t.Fatalf("accepted profile does not re-encode: %+v", p)
				}
				return
			}
			if err == nil {
				t.Fatalf("ParseProfile accepted it: %+v", p)
			}
			if got := CodeOf(err); got != c.code {
				t.Fatalf("code = %s; want %s (%v)", got, c.code, err)
			}
		})
	}
}

func hostsJSON(n int) string {
	hs := make([]string, n)
	for i := range hs {
		hs[i] = "h.example.com"
	}
	b, _ := json.Marshal(hs)
	return string(b)
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParsePermission(t *testing.T) {
	for _, p := range knownPermissions {
		if got, err := ParsePermission(string(p)); err != nil || got != p {
			t.Errorf("ParsePermission(%q) = %q, %v", p, got, err)
		}
	}
	for _, s := range []string{"", "run", "ffi", "network.fetch ", "NETWORK.FETCH", "network.*", "*"} {
		if _, err := ParsePermission(s); CodeOf(err) != CodeUnknownPermission {
			t.Errorf("ParsePermission(%q) err = %v; want unknown_permission", s, err)
		}
	}
}

// TestAggregateHashIsLengthPrefixed: contents that concatenate alike hash
// apart, and the same contents hash alike.
func TestAggregateHashIsLengthPrefixed(t *testing.T) {
	cases := []struct {
		name string
		a, b []string
		same bool
	}{
		{"same calls", []string{"ab", "c"}, []string{"ab", "c"}, true},
		{"split moved", []string{"ab", "c"}, []string{"a", "bc"}, false},
		{"empty call added", []string{"abc"}, []string{"abc", ""}, false},
		{"order", []string{"a", "b"}, []string{"b", "a"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := AggregateHash(c.a...) == AggregateHash(c.b...); got != c.same {
				t.Errorf("hash(%q) == hash(%q): %v; want %v", c.a, c.b, got, c.same)
			}
		})
	}
}

// TestValidAgentIDIsItsPattern: the hand-written check accepts exactly the
// ids its documented pattern does.
func TestValidAgentIDIsItsPattern(t *testing.T) {
	re := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
	ids := []string{"", "a", "A", "0", ".", "-a", "_a", "a.b-c_d", "a b", "a/b", "a\n", "é", "a\x00",
		strings.Repeat("a", MaxAgentIDLen), strings.Repeat("a", MaxAgentIDLen+1)}
	for c := range 256 {
		ids = append(ids, string([]byte{byte(c)}), "a"+string([]byte{byte(c)}), string([]byte{byte(c)})+"a")
	}
	for _, id := range ids {
		want := id != "" && len(id) <= MaxAgentIDLen && re.MatchString(id)
		if got := ValidAgentID(id) == nil; got != want {
			t.Errorf("ValidAgentID(%q) ok = %v; the pattern says %v", id, got, want)
		}
	}
}

// TestProfileCloneSharesNothing: every field of a Profile that refers to
// memory (a slice, a map, a pointer) is one Clone copies, and a clone's
// edits never reach the original.
func TestProfileCloneSharesNothing(t *testing.T) {
	var refs []string
	var walk func(ty reflect.Type, path string)
	walk = func(ty reflect.Type, path string) {
		for i := 0; i < ty.NumField(); i++ {
			f := ty.Field(i)
			switch f.Type.Kind() {
			case reflect.Struct:
				walk(f.Type, path+f.Name+".")
			case reflect.Slice, reflect.Map, reflect.Pointer, reflect.Interface, reflect.Func, reflect.Chan:
				refs = append(refs, path+f.Name)
			}
		}
	}
	walk(reflect.TypeOf(Profile{}), "")
	copied := []string{"Permissions.Required", "Permissions.Optional", "Capabilities.AllowedHosts", "Capabilities.MCPTools", "Audit"}
	if !slices.Equal(refs, copied) {
		t.Fatalf("Profile's fields that refer to memory are %v; Clone copies %v: copy the new ones in Clone", refs, copied)
	}
	p := Profile{AgentID: "a", Permissions: Permissions{Required: []Permission{PermConsoleLog}, Optional: []Permission{PermNetworkFetch}},
		Capabilities: Capabilities{AllowedHosts: []string{"a.example"}}, Audit: &AuditRequest{Calls: AuditCallsPerCall}}
	c := p.Clone()
	c.Permissions.Required[0], c.Permissions.Optional[0], c.Capabilities.AllowedHosts[0] = "x", "x", "x"
	c.Audit.Calls = ""
	if p.Permissions.Required[0] != PermConsoleLog || p.Permissions.Optional[0] != PermNetworkFetch ||
		p.Capabilities.AllowedHosts[0] != "a.example" || p.Audit.Calls != AuditCallsPerCall {
		t.Fatalf("an edit of the clone reached the original: %+v", p)
	}
}
