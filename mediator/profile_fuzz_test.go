package mediator

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzParseProfile: any bytes either parse into a profile that is already
// normal (Normalize changes nothing, and encoding and parsing it again
// gives it back) or are refused with a profile code; never a panic.
func FuzzParseProfile(f *testing.F) {
	f.Add([]byte(`{"agentId":"a","permissions":{"required":["network.fetch"]},"capabilities":{"networkAccess":true,"allowedHosts":["api.example.com"]}}`))
	f.Add([]byte(`{"agentId":"a","permissions":{"required":[]},"permissionSet":"filesystem","capabilities":{}}`))
	f.Add([]byte(`{"agentId":"a","AgentId":"b","permissions":{"required":[]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParseProfile(data)
		if err != nil {
			switch CodeOf(err) {
			case CodeInvalidProfile, CodeTooLarge, CodeUnknownPermission, CodeInvalidAllowedHost, CodePermissionOutsideSet:
			default:
				t.Fatalf("refused with %s: %v", CodeOf(err), err)
			}
			return
		}
		again := p
		if err := again.Normalize(); err != nil || !reflect.DeepEqual(again, p) {
			t.Fatalf("a parsed profile is not normal: %v\n%+v\n%+v", err, p, again)
		}
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseProfile(b)
		if err != nil || !reflect.DeepEqual(back, p) {
			t.Fatalf("the profile does not survive encoding: %v\n%s", err, b)
		}
	})
}
