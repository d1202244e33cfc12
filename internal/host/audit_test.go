package host

import (
	"context"
	"crypto/rand"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/mediator"
)

// appendAudit appends n records to the harness's log, as decisions would.
func (h *harness) appendAudit(n int) {
	h.t.Helper()
	for range n {
		e := mediator.AuditEntry{Kind: mediator.AuditDecision, Operation: mediator.Operation{AgentID: "audited", Name: mediator.OpLog}, Reason: "test"}
		if _, err := h.st.AppendAudit(context.Background(), e); err != nil {
			h.t.Fatal(err)
		}
	}
}

// tamper runs SQL on the host's database behind its back: what anyone who
// can write nmhost.db can do.
func (h *harness) tamper(query string) {
	h.t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(h.st.Dir(), "nmhost.db"))
	if err != nil {
		h.t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(query); err != nil {
		h.t.Fatal(err)
	}
}

// signWithKeyFile signs a tree head with the data dir's key file, as
// someone who read it could.
func (h *harness) signWithKeyFile(tree tlog.Tree) string {
	h.t.Helper()
	b, err := os.ReadFile(filepath.Join(h.st.Dir(), store.AuditKeyFile))
	if err != nil {
		h.t.Fatal(err)
	}
	signer, err := note.NewSigner(strings.SplitN(string(b), "\n", 2)[0])
	if err != nil {
		h.t.Fatal(err)
	}
	cp, err := note.Sign(&note.Note{Text: string(tlog.FormatTree(tree))}, signer)
	if err != nil {
		h.t.Fatal(err)
	}
	return string(cp)
}

func TestAuditCheckpointAndConsistency(t *testing.T) {
	h := newHarness(t, true)
	h.appendAudit(3)
	var cp auditCheckpointReply
	h.mustOK("audit-checkpoint", nil, &cp)
	vkey, err := h.st.AuditVerifierKey()
	if err != nil {
		t.Fatal(err)
	}
	if cp.Size != 3 || cp.Time == 0 || cp.Key != vkey || !strings.HasPrefix(cp.Checkpoint, "go.sum database tree\n3\n") {
		t.Fatalf("audit-checkpoint = %+v", cp)
	}
	// The checkpoint checks with the key alone.
	v, err := note.NewVerifier(cp.Key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := note.Open([]byte(cp.Checkpoint), note.VerifierList(v)); err != nil {
		t.Fatalf("the checkpoint does not verify with the key it came with: %v", err)
	}

	h.appendAudit(2)
	var c auditConsistencyReply
	h.mustOK("audit-consistency", map[string]any{"checkpoint": cp.Checkpoint}, &c)
	if !c.Consistent || c.OldSize != 3 || c.Since != cp.Time || c.Size != 5 || c.Time < cp.Time || !strings.HasPrefix(c.Checkpoint, "go.sum database tree\n5\n") {
		t.Fatalf("audit-consistency = %+v (checkpoint time %d)", c, cp.Time)
	}
	// The newest checkpoint is the next one to hand in.
	var next auditConsistencyReply
	h.mustOK("audit-consistency", map[string]any{"checkpoint": c.Checkpoint}, &next)
	if next.OldSize != 5 || next.Size != 5 || next.Since != c.Time {
		t.Fatalf("second audit-consistency = %+v", next)
	}
}

// TestAuditConsistencyRefusesBreaks: each way the log or the checkpoint
// can be wrong gets its own reason code, and the reply carries no
// checkpoint to keep.
func TestAuditConsistencyRefusesBreaks(t *testing.T) {
	cases := []struct {
		name       string
		tamper     string                                 // SQL run on the database after the checkpoint
		checkpoint func(h *harness, honest string) string // replaces the honest checkpoint
		code       mediator.Code
	}{
		{name: "newest records and their leaves deleted (truncation)",
			tamper: `DELETE FROM audit WHERE seq > 2; DELETE FROM audit_tree WHERE seq > 2`, code: mediator.CodeAuditTruncated},
		{name: "the whole log deleted",
			tamper: `DELETE FROM audit; DELETE FROM audit_tree`, code: mediator.CodeAuditTruncated},
		{name: "a checkpoint of a bigger tree", checkpoint: func(h *harness, _ string) string {
			return h.signWithKeyFile(tlog.Tree{N: 40, Hash: tlog.Hash{7}})
		}, code: mediator.CodeAuditTruncated},
		{name: "a checkpoint whose head differs (rewrite)", checkpoint: func(h *harness, _ string) string {
			return h.signWithKeyFile(tlog.Tree{N: 3, Hash: tlog.Hash{7}})
		}, code: mediator.CodeAuditInconsistent},
		{name: "the checkpoint's newest record edited", tamper: `UPDATE audit SET body = replace(body, '"test"', '"edited"') WHERE seq = 3`,
			code: mediator.CodeAuditInconsistent},
		{name: "forged: signed by another key", checkpoint: func(h *harness, honest string) string {
			skey, _, err := note.GenerateKey(rand.Reader, store.AuditKeyName)
			if err != nil {
				h.t.Fatal(err)
			}
			signer, _ := note.NewSigner(skey)
			text, _, _ := strings.Cut(honest, "\n\n")
			cp, err := note.Sign(&note.Note{Text: text + "\n"}, signer)
			if err != nil {
				h.t.Fatal(err)
			}
			return string(cp)
		}, code: mediator.CodeAuditBadSignature},
		{name: "altered: size changed after signing", checkpoint: func(_ *harness, honest string) string {
			return strings.Replace(honest, "\n3\n", "\n2\n", 1)
		}, code: mediator.CodeAuditBadSignature},
		{name: "garbage text", checkpoint: func(*harness, string) string { return "go.sum database tree\nplease trust me\n" },
			code: mediator.CodeBadRequest},
		{name: "empty", checkpoint: func(*harness, string) string { return "" }, code: mediator.CodeBadRequest},
		{name: "oversized", checkpoint: func(_ *harness, honest string) string {
			return honest + strings.Repeat("a", store.MaxAuditCheckpointBytes)
		}, code: mediator.CodeTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, true)
			h.appendAudit(3)
			var cp auditCheckpointReply
			h.mustOK("audit-checkpoint", nil, &cp)
			h.appendAudit(1)
			checkpoint := cp.Checkpoint
			if c.checkpoint != nil {
				checkpoint = c.checkpoint(h, checkpoint)
			}
			if c.tamper != "" {
				h.tamper(c.tamper)
			}
			r := h.call("audit-consistency", map[string]any{"checkpoint": checkpoint})
			h.wantCode(r, c.code)
			if len(r.Data) != 0 {
				t.Fatalf("a refusal carried data: %s", r.Data)
			}
			t.Log(r.Error)
		})
	}
}

// The parameters are read exactly, like every request's.
func TestAuditMessagesAreReadExactly(t *testing.T) {
	cases := []struct {
		name, typ string
		params    map[string]any
	}{
		{"checkpoint with a parameter", "audit-checkpoint", map[string]any{"size": 1}},
		{"consistency without a checkpoint", "audit-consistency", map[string]any{}},
		{"case-variant checkpoint", "audit-consistency", map[string]any{"Checkpoint": "x"}},
		{"checkpoint not a string", "audit-consistency", map[string]any{"checkpoint": map[string]any{"size": 3}}},
		{"extra parameter", "audit-consistency", map[string]any{"checkpoint": "x", "trust": true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, true)
			h.wantCode(h.call(c.typ, c.params), mediator.CodeBadRequest)
		})
	}
}
