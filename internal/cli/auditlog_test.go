package cli

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentgate/nmhost/internal/datadir"
	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/mediator"
)

// auditCmd runs one audit command against the data dir dir and returns
// its stdout and error.
func auditCmd(t *testing.T, dir string, run func(context.Context, Env) error, stdin string, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	env := Env{
		Args:   args,
		Stdin:  strings.NewReader(stdin),
		Stdout: &out,
		Stderr: &errOut,
		Getenv: func(k string) string {
			if k == datadir.EnvVar {
				return dir
			}
			return ""
		},
	}
	err := run(context.Background(), env)
	return out.String(), err
}

func TestAuditLogCommands(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := st.AppendAudit(context.Background(), mediator.AuditEntry{Kind: mediator.AuditDecision, Operation: mediator.Operation{AgentID: "demo", Name: mediator.OpLog}, Allowed: true}); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	file := func(name, text string) string {
		path := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}

	vkey, err := auditCmd(t, dir, runAuditKey, "")
	vkey = strings.TrimSpace(vkey)
	if err != nil || !strings.HasPrefix(vkey, store.AuditKeyName+"+") {
		t.Fatalf("audit key: %q %v", vkey, err)
	}
	cp, err := auditCmd(t, dir, runAuditCheckpoint, "")
	if err != nil || !strings.HasPrefix(cp, "go.sum database tree\n3\n") || !strings.Contains(cp, "\n\n— "+store.AuditKeyName+" ") {
		t.Fatalf("audit checkpoint: %q %v", cp, err)
	}
	cpFile := file("checkpoint", cp)

	if out, err := auditCmd(t, dir, runAuditVerifyCheckpoint, ""); err != nil || !strings.HasPrefix(out, "ok: 3 records, log intact; tree head ") {
		t.Fatalf("audit verify: %q %v", out, err)
	}
	if out, err := auditCmd(t, dir, runAuditVerifyCheckpoint, "", "--checkpoint", cpFile); err != nil || !strings.Contains(out, "extends the checkpoint of 3 records") {
		t.Fatalf("audit verify --checkpoint: %q %v", out, err)
	}
	if out, err := auditCmd(t, dir, runAuditVerifyCheckpoint, cp, "--checkpoint", "-", "--json"); err != nil || !strings.Contains(out, `"ok":true`) || !strings.Contains(out, `"checkpoint":3`) {
		t.Fatalf("audit verify --checkpoint - --json: %q %v", out, err)
	}

	proof, err := auditCmd(t, dir, runAuditProve, "", "2")
	if err != nil || !strings.Contains(proof, `"format": "nmhost-audit-proof/1"`) {
		t.Fatalf("audit prove: %q %v", proof, err)
	}
	proofFile := file("proof.json", proof)
	// check-proof opens no data dir: it runs with nothing but the key.
	nowhere := filepath.Join(t.TempDir(), "absent")
	if out, err := auditCmd(t, nowhere, runAuditCheckProof, "", "--key", vkey, proofFile); err != nil || !strings.HasPrefix(out, "ok: record 2 is in the log of 3 records") {
		t.Fatalf("audit check-proof: %q %v", out, err)
	}
	if _, err := os.Stat(nowhere); !os.IsNotExist(err) {
		t.Fatalf("check-proof touched a data dir: %v", err)
	}
	if out, err := auditCmd(t, nowhere, runAuditCheckProof, strings.Replace(proof, `\"allowed\":true`, `\"allowed\":false`, 1), "--key", vkey); !errors.Is(err, errAuditBroken) || !strings.HasPrefix(out, "NOT PROVED") {
		t.Fatalf("check-proof of an edited record: %q %v", out, err)
	}

	// The newest record goes, leaves and all: only the checkpoint shows it.
	db, err := sql.Open("sqlite", filepath.Join(dir, store.DBFileName))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`DELETE FROM audit WHERE seq = 3; DELETE FROM audit_tree WHERE seq = 3`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if out, err := auditCmd(t, dir, runAuditVerifyCheckpoint, ""); err != nil || !strings.HasPrefix(out, "ok: 2 records") {
		t.Fatalf("audit verify without the checkpoint: %q %v", out, err)
	}
	if out, err := auditCmd(t, dir, runAuditVerifyCheckpoint, "", "--checkpoint", cpFile); !errors.Is(err, errAuditBroken) || !strings.Contains(out, "BROKEN at record 3") || !strings.Contains(out, "truncated") {
		t.Fatalf("audit verify --checkpoint after truncation: %q %v", out, err)
	}
}

func TestAuditLogCommandsRefuseBadArguments(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		run  func(context.Context, Env) error
		in   string
		args []string
		want string // in the error; "usage" for a usage error
	}{
		{"key with an argument", runAuditKey, "", []string{"x"}, "usage"},
		{"checkpoint with an argument", runAuditCheckpoint, "", []string{"x"}, "usage"},
		{"prove without a record", runAuditProve, "", nil, "usage"},
		{"prove of a non-number", runAuditProve, "", []string{"1; DROP TABLE audit"}, "not a record number"},
		{"prove of record 0", runAuditProve, "", []string{"0"}, "not a record number"},
		{"prove beyond the log", runAuditProve, "", []string{"9"}, "no audit record 9"},
		{"check-proof without a key", runAuditCheckProof, "", []string{"proof.json"}, "usage"},
		{"verify against an empty checkpoint", runAuditVerifyCheckpoint, "", []string{"--checkpoint", "-"}, "empty"},
		{"verify against a missing file", runAuditVerifyCheckpoint, "", []string{"--checkpoint", filepath.Join(dir, "nope")}, "no such file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := auditCmd(t, dir, c.run, c.in, c.args...)
			var ue *usageError
			if c.want == "usage" && !errors.As(err, &ue) || c.want != "usage" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Fatalf("got %v; want %q", err, c.want)
			}
		})
	}
	t.Run("verify against a checkpoint that is not one", func(t *testing.T) {
		out, err := auditCmd(t, dir, runAuditVerifyCheckpoint, "hello\n", "--checkpoint", "-")
		if !errors.Is(err, errAuditBroken) || !strings.Contains(out, "BROKEN") {
			t.Fatalf("got %q %v", out, err)
		}
	})
}
