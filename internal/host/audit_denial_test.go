package host

import (
	"context"
	"encoding/base64"
	"testing"

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/internal/testwasm"
	"github.com/agentgate/nmhost/mediator"
)

// TestDenialsOutsideThePolicyAreAudited: refusals the host decides before
// the policy (link time, a caller origin it was not installed for) and the
// ones the extension reports each name an audit record with their code
// and what decided; the trail verifies.
func TestDenialsOutsideThePolicyAreAudited(t *testing.T) {
	module, err := testwasm.Probe()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		do    func(h *harness)
		code  mediator.Code
		agent string
		by    string // the record's decidedBy, or its prefix for link time
	}{
		{"link time", func(h *harness) {
			// The probe imports every function; only console.log is granted.
			h.mustOK("install-agent", map[string]any{"module": base64.StdEncoding.EncodeToString(module), "profile": map[string]any{
				"agentId": "linker", "permissions": map[string]any{"required": []string{"console.log"}}}}, nil)
			h.mustOK("run-agent", map[string]any{"agentId": "linker"}, nil)
		}, mediator.CodeImportNotGranted, "linker", "link:"},
		// Hostile: the extension names a host rule as what decided, and
		// cannot name an audit record of its choosing.
		{"reported by the extension", func(h *harness) {
			h.wantCode(h.call("log-denial", map[string]any{"agentId": "ext", "permission": "page.write", "code": "permission_not_granted",
				"auditSeq": 1, "context": map[string]any{"reason": "r"}}), mediator.CodeBadRequest)
			h.mustOK("log-denial", map[string]any{"agentId": "ext", "permission": "page.write", "code": "permission_not_granted",
				"context": map[string]any{"reason": "domAccess is read-only", "details": map[string]string{"decidedBy": "grant:page.write"}}}, nil)
		}, mediator.CodePermissionNotGranted, "ext", "extension:grant:page.write"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, true)
			c.do(h)
			ctx := context.Background()
			page, err := h.st.ListDenials(ctx, store.DenialFilter{AgentID: c.agent, Code: c.code})
			if err != nil || len(page.Denials) != 1 {
				t.Fatalf("denials %+v %v", page, err)
			}
			d := page.Denials[0]
			a, err := h.st.ListAudit(ctx, d.AuditSeq-1, 1, false)
			if err != nil || d.AuditSeq == 0 || len(a.Records) != 1 {
				t.Fatalf("denial %+v names no audit record: %+v %v", d, a, err)
			}
			r := a.Records[0]
			if r.Seq != d.AuditSeq || r.Allowed || r.Code != c.code || r.Operation.AgentID != c.agent || string(r.Operation.Permission) != d.Permission ||
				len(r.DecidedBy) < len(c.by) || r.DecidedBy[:len(c.by)] != c.by || (c.by != "link:" && r.DecidedBy != c.by) {
				t.Fatalf("audit record %+v for denial %+v; want code %s decided by %s", r, d, c.code, c.by)
			}
			if rep, err := h.st.VerifyAudit(ctx); err != nil || !rep.OK {
				t.Fatalf("verify %+v %v", rep, err)
			}
		})
	}
}
