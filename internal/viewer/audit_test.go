package viewer

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/mediator"
)

func (v *testViewer) appendAudit(n int) {
	v.t.Helper()
	for range n {
		e := mediator.AuditEntry{Kind: mediator.AuditDecision, Operation: mediator.Operation{AgentID: "audited", Name: mediator.OpLog}, Reason: "test"}
		if _, err := v.st.AppendAudit(context.Background(), e); err != nil {
			v.t.Fatal(err)
		}
	}
}

// tamper runs SQL on the database behind the server's back.
func (v *testViewer) tamper(query string) {
	v.t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(v.dir, "nmhost.db"))
	if err != nil {
		v.t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(query); err != nil {
		v.t.Fatal(err)
	}
}

// sign signs a tree head with the given signer key, or the data dir's own
// key file when skey is "" (as someone who read it could).
func (v *testViewer) sign(skey string, tree tlog.Tree) string {
	v.t.Helper()
	if skey == "" {
		b, err := os.ReadFile(filepath.Join(v.dir, store.AuditKeyFile))
		if err != nil {
			v.t.Fatal(err)
		}
		skey, _, _ = strings.Cut(string(b), "\n")
	}
	signer, err := note.NewSigner(skey)
	if err != nil {
		v.t.Fatal(err)
	}
	cp, err := note.Sign(&note.Note{Text: string(tlog.FormatTree(tree))}, signer)
	if err != nil {
		v.t.Fatal(err)
	}
	return string(cp)
}

func checkpointBody(cp string) string {
	b, _ := json.Marshal(map[string]string{"checkpoint": cp})
	return string(b)
}

func TestAuditConsistencyAPI(t *testing.T) {
	v := newTestViewer(t, nil)
	v.appendAudit(3)
	var cp auditCheckpointReply
	v.api("GET", "/api/audit/checkpoint", "", 200, &cp)
	vkey, err := v.st.AuditVerifierKey()
	if err != nil {
		t.Fatal(err)
	}
	if !cp.OK || cp.Size != 3 || cp.Time == 0 || cp.Key != vkey || !strings.HasPrefix(cp.Checkpoint, "go.sum database tree\n3\n") {
		t.Fatalf("checkpoint %+v", cp)
	}
	v.appendAudit(2)
	var c auditConsistencyReply
	v.api("POST", "/api/audit/consistency", checkpointBody(cp.Checkpoint), 200, &c, header("Origin", v.base), header("Sec-Fetch-Site", "same-origin"))
	if !c.OK || !c.Consistent || c.OldSize != 3 || c.Since != cp.Time || c.Size != 5 || !strings.HasPrefix(c.Checkpoint, "go.sum database tree\n5\n") {
		t.Fatalf("consistency %+v", c)
	}
	// The checkpoint to keep now checks too.
	var next auditConsistencyReply
	v.api("POST", "/api/audit/consistency", checkpointBody(c.Checkpoint), 200, &next)
	if next.OldSize != 5 || next.Since != c.Time {
		t.Fatalf("second consistency %+v", next)
	}

	otherKey, _, err := note.GenerateKey(rand.Reader, store.AuditKeyName)
	if err != nil {
		t.Fatal(err)
	}
	honest := c.Checkpoint
	big := strings.Repeat("a", MaxBodyBytes)
	cases := []struct {
		name   string
		body   string
		opts   []reqOpt
		status int
		code   mediator.Code
	}{
		{"forged: another key", checkpointBody(v.sign(otherKey, tlog.Tree{N: 5, Hash: tlog.Hash{1}})), nil, 409, mediator.CodeAuditBadSignature},
		{"altered after signing", checkpointBody(strings.Replace(honest, "\n5\n", "\n4\n", 1)), nil, 409, mediator.CodeAuditBadSignature},
		{"a bigger tree (truncation)", checkpointBody(v.sign("", tlog.Tree{N: 9, Hash: tlog.Hash{1}})), nil, 409, mediator.CodeAuditTruncated},
		{"a different head (rewrite)", checkpointBody(v.sign("", tlog.Tree{N: 4, Hash: tlog.Hash{1}})), nil, 409, mediator.CodeAuditInconsistent},
		{"garbage text", checkpointBody("go.sum database tree\n5\nnot base64\n\n— x y\n"), nil, 400, mediator.CodeBadRequest},
		{"empty checkpoint", checkpointBody(""), nil, 400, mediator.CodeBadRequest},
		{"oversized checkpoint", checkpointBody(honest + strings.Repeat("a", store.MaxAuditCheckpointBytes)), nil, 413, mediator.CodeTooLarge},
		{"oversized body", checkpointBody(big), nil, 413, mediator.CodeTooLarge},
		{"checkpoint not a string", `{"checkpoint":{"size":5}}`, nil, 400, mediator.CodeBadRequest},
		{"repeated checkpoint", `{"checkpoint":"x","checkpoint":` + checkpointBody(honest)[len(`{"checkpoint":`):], nil, 400, mediator.CodeBadRequest},
		{"case-variant checkpoint", `{"Checkpoint":"x"}`, nil, 400, mediator.CodeBadRequest},
		{"unknown member", `{"checkpoint":"x","trust":true}`, nil, 400, mediator.CodeBadRequest},
		{"form content type", checkpointBody(honest), []reqOpt{header("Content-Type", "text/plain")}, 400, mediator.CodeBadRequest},
		{"another origin", checkpointBody(honest), []reqOpt{header("Origin", "http://evil.example")}, 403, mediator.CodeUnauthorized},
		{"cross-site fetch", checkpointBody(honest), []reqOpt{header("Origin", v.base), header("Sec-Fetch-Site", "cross-site")}, 403, mediator.CodeUnauthorized},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, body, _ := v.do("POST", "/api/audit/consistency", c.body, append([]reqOpt{bearer(v.token.String())}, c.opts...)...)
			wantRefusal(t, status, body, c.status, c.code)
			if strings.Contains(body, `"checkpoint"`) {
				t.Fatalf("a refusal carried a checkpoint: %s", body)
			}
		})
	}
	for _, c := range []struct{ name, method, path string }{
		{"checkpoint without the token", "GET", "/api/audit/checkpoint"},
		{"consistency without the token", "POST", "/api/audit/consistency"},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, body, _ := v.do(c.method, c.path, checkpointBody(honest))
			wantRefusal(t, status, body, http.StatusUnauthorized, mediator.CodeUnauthorized)
		})
	}

	// The newest records go, leaves and all, behind the server's back:
	// only the kept checkpoint shows it.
	t.Run("log truncated behind the server's back", func(t *testing.T) {
		v.tamper(`DELETE FROM audit WHERE seq > 3; DELETE FROM audit_tree WHERE seq > 3`)
		status, body, _ := v.do("POST", "/api/audit/consistency", checkpointBody(honest), bearer(v.token.String()))
		wantRefusal(t, status, body, http.StatusConflict, mediator.CodeAuditTruncated)
		if !strings.Contains(body, "removed") {
			t.Fatalf("the refusal does not say what happened: %s", body)
		}
		// The present log alone still looks fine to a new checkpoint.
		v.api("GET", "/api/audit/checkpoint", "", 200, &cp)
		if cp.Size != 3 {
			t.Fatalf("checkpoint after truncation %+v", cp)
		}
	})
}

// TestAuditRecordsAPI: GET /api/audit pages the records themselves, the
// newest with tail=1; hostile or malformed parameters are refused, named.
func TestAuditRecordsAPI(t *testing.T) {
	v := newTestViewer(t, nil)
	v.appendAudit(5)
	var page store.AuditPage
	v.api("GET", "/api/audit?tail=1&limit=2", "", 200, &page)
	if len(page.Records) != 2 || page.Records[0].Seq != 4 || page.Records[1].Seq != 5 || page.Records[1].Operation.AgentID != "audited" {
		t.Fatalf("tail page %+v", page)
	}
	v.api("GET", "/api/audit?afterSeq=1&limit=2", "", 200, &page)
	if len(page.Records) != 2 || page.Records[0].Seq != 2 || page.NextAfterSeq != 3 {
		t.Fatalf("page after 1 %+v", page)
	}
	v.api("GET", "/api/audit", "", 200, &page)
	if len(page.Records) != 5 {
		t.Fatalf("default page %+v", page)
	}
	for _, c := range []struct{ name, query string }{
		{"negative afterSeq", "afterSeq=-1"},
		{"afterSeq not a number", "afterSeq=1e3"},
		{"limit zero", "limit=0"},
		{"limit too big", "limit=100000"},
		{"limit twice", "limit=1&limit=2"},
		{"unknown parameter", "agentId=x"},
		{"tail not 0 or 1", "tail=yes"},
		{"tail with afterSeq", "tail=1&afterSeq=2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var e apiError
			v.api("GET", "/api/audit?"+c.query, "", 400, &e)
			if e.Code != mediator.CodeBadRequest {
				t.Fatalf("%s: %+v", c.query, e)
			}
		})
	}
}
