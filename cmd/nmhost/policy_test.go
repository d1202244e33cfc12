package main

import (
	"context"
	"database/sql"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/mediator"
)

func nmhost(t *testing.T, dir string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(nmhostBin, args...)
	cmd.Env = hostEnv(dir)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

func TestPrefsAndAuditCommands(t *testing.T) {
	dir := newDataDir(t)
	ctx := context.Background()
	s, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pref, err := s.SetPreference(ctx, mediator.Preference{AgentID: "demo", Operation: mediator.OpClipboardRead, Answer: mediator.AnswerAlwaysBlock})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := s.AppendAudit(ctx, mediator.AuditEntry{Kind: mediator.AuditDecision, Operation: mediator.Operation{AgentID: "demo", Name: mediator.OpLog}, Allowed: true, Code: mediator.CodeAllowed}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()

	if out, code := nmhost(t, dir, "prefs", "list", "--json"); code != 0 || !strings.Contains(out, `"always-block"`) {
		t.Fatalf("prefs list: %d %s", code, out)
	}
	if out, code := nmhost(t, dir, "audit", "tail", "-n", "2"); code != 0 || strings.Count(out, "\n") != 2 || !strings.Contains(out, "log") {
		t.Fatalf("audit tail: %d %q", code, out)
	}
	if out, code := nmhost(t, dir, "audit", "verify"); code != 0 || !strings.Contains(out, "ok: 3 records") {
		t.Fatalf("audit verify: %d %s", code, out)
	}
	if out, code := nmhost(t, dir, "prefs", "revoke", "x; DROP TABLE"); code == 0 {
		t.Fatalf("revoke of a non-id succeeded: %s", out)
	}
	if out, code := nmhost(t, dir, "prefs", "revoke", "999"); code == 0 {
		t.Fatalf("revoke of a missing id succeeded: %s", out)
	}
	if out, code := nmhost(t, dir, "prefs", "revoke", "1"); code != 0 || pref.ID != 1 {
		t.Fatalf("prefs revoke: %d %s", code, out)
	}

	// Someone edits record 2 behind the host's back.
	db, err := sql.Open("sqlite", filepath.Join(dir, store.DBFileName))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE audit SET body = replace(body, '"allowed":true', '"allowed":false') WHERE seq = 2`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	out, code := nmhost(t, dir, "audit", "verify")
	if code == 0 || !strings.Contains(out, "BROKEN at record 2") {
		t.Fatalf("verify of an edited chain: %d %s", code, out)
	}
}
