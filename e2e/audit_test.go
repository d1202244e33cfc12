//go:build linux && e2e

package e2e

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/mediator"
)

// TestOptionsPageShowsTheAuditTrailBreak: the options page checks the
// audit trail against the checkpoint the extension keeps each time it
// opens. It says "consistent since"; then the newest records are deleted
// from the database behind the host's back, leaves and all, which leaves
// a log that verifies on its own, and the next opening of the page names
// the break. Starting a new chain, a person's click, clears it.
func TestOptionsPageShowsTheAuditTrailBreak(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(dataDir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for range 3 {
		e := mediator.AuditEntry{Kind: mediator.AuditDecision, Operation: mediator.Operation{AgentID: "e2e-audited", Name: mediator.OpLog}, Reason: "e2e"}
		if _, err := st.AppendAudit(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	_, size, _, err := st.AuditCheckpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}

	ext := page(t, extURL("options.html"))
	waitFor(t, ext, `document.getElementById('audit-status').dataset.state === 'consistent'`)
	if line := eval[string](t, ext, `document.getElementById('audit-status').textContent`); !strings.HasPrefix(line, "audit trail consistent since ") {
		t.Fatalf("options page says %q", line)
	}
	if kept := eval[int64](t, ext, `chrome.storage.local.get('auditCheckpoint').then(x => x.auditCheckpoint.size)`); kept != size {
		t.Fatalf("the extension keeps a checkpoint of %d records; the log holds %d", kept, size)
	}
	screenshot(t, ext, "options-audit-consistent")

	db, err := sql.Open("sqlite", filepath.Join(dataDir, "nmhost.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`DELETE FROM audit WHERE seq > ?; DELETE FROM audit_tree WHERE seq > ?`, size-2, size-2); err != nil {
		t.Fatal(err)
	}
	if rep, err := st.VerifyAudit(ctx); err != nil || !rep.OK {
		t.Fatalf("the truncated log should verify on its own: %+v %v", rep, err)
	}

	again := page(t, extURL("options.html"))
	waitFor(t, again, `document.getElementById('audit-status').dataset.state === 'broken'`)
	line := eval[string](t, again, `document.getElementById('audit-status').textContent`)
	code := eval[string](t, again, `document.getElementById('audit-status').dataset.code`)
	if !strings.HasPrefix(line, "audit trail broken: the log is shorter than the checkpoint seen at ") || code != string(mediator.CodeAuditTruncated) {
		t.Fatalf("after truncation the options page says %q (code %q)", line, code)
	}
	// The break keeps the old checkpoint: asking again still shows it.
	if kept := eval[int64](t, again, `chrome.storage.local.get('auditCheckpoint').then(x => x.auditCheckpoint.size)`); kept != size {
		t.Fatalf("after the break the extension keeps %d records; want the old %d", kept, size)
	}
	screenshot(t, again, "options-audit-broken")

	click(t, again, "audit-restart")
	waitFor(t, again, `document.getElementById('audit-status').dataset.state === 'consistent'`)
	if kept := eval[int64](t, again, `chrome.storage.local.get('auditCheckpoint').then(x => x.auditCheckpoint.size)`); kept != size-2 {
		t.Fatalf("a new chain keeps %d records; want %d", kept, size-2)
	}
}

// TestViewerPageShowsTheAuditTrailBreak: the viewer page keeps its own
// checkpoint in localStorage and checks it on each load, the same way.
func TestViewerPageShowsTheAuditTrailBreak(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	st, err := store.Open(data, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for range 4 {
		e := mediator.AuditEntry{Kind: mediator.AuditDecision, Operation: mediator.Operation{AgentID: "e2e-viewed", Name: mediator.OpLog}, Reason: "e2e"}
		if _, err := st.AppendAudit(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	link := startViewer(t, data)
	view := page(t, link)
	waitFor(t, view, `document.getElementById('audit-status').classList.contains('consistent')`)
	if line := eval[string](t, view, `document.getElementById('audit-status').textContent`); !strings.HasPrefix(line, "audit trail consistent since ") || !strings.HasSuffix(line, "(4 records)") {
		t.Fatalf("the viewer says %q", line)
	}

	db, err := sql.Open("sqlite", filepath.Join(data, "nmhost.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`DELETE FROM audit WHERE seq > 1; DELETE FROM audit_tree WHERE seq > 1`); err != nil {
		t.Fatal(err)
	}
	again := page(t, link)
	waitFor(t, again, `document.getElementById('audit-status').classList.contains('broken')`)
	if line := eval[string](t, again, `document.getElementById('audit-status').textContent`); !strings.HasPrefix(line, "audit trail broken: the log is shorter than the checkpoint seen at ") || !strings.HasSuffix(line, "(audit_truncated)") {
		t.Fatalf("after truncation the viewer says %q", line)
	}
	screenshot(t, again, "viewer-audit-broken")

	// What the page keeps is checked as the extension checks its own
	// (checkpoint.js, the same module): a kept checkpoint spoilt or
	// removed behind its back is a break, never a new chain.
	for _, c := range []struct{ name, spoil, code string }{
		{"malformed", `localStorage.setItem('nmhost-audit-checkpoint', '{"checkpoint":"not one","size":3}')`, "checkpoint_malformed"},
		{"missing", `localStorage.removeItem('nmhost-audit-checkpoint')`, "checkpoint_missing"},
	} {
		eval[any](t, again, "("+c.spoil+", null)")
		spoilt := page(t, link)
		waitFor(t, spoilt, `document.getElementById('audit-status').classList.contains('broken')`)
		if line := eval[string](t, spoilt, `document.getElementById('audit-status').textContent`); !strings.HasSuffix(line, "("+c.code+")") {
			t.Fatalf("%s: the viewer says %q; want %s", c.name, line, c.code)
		}
	}
}

// TestCheckKeepsABreakMadeWhileTheHostIsAsked: the extension's own
// checkpoint module, in the extension's page, with the kept checkpoint
// spoilt or removed while the host is being asked. The check reports the
// break; it does not keep the host's newer checkpoint over it.
func TestCheckKeepsABreakMadeWhileTheHostIsAsked(t *testing.T) {
	ext := page(t, extURL("options.html"))
	for _, c := range []struct{ name, spoil, code string }{
		{"spoilt", `data.kept = { checkpoint: 'not one', size: 3 }`, "checkpoint_malformed"},
		{"removed", `delete data.kept`, "checkpoint_missing"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := eval[string](t, ext, `(async () => {
				const { checkOnce } = await import('./checkpoint.js');
				const kept = { checkpoint: 'h\n3\nx', size: 3, time: 1, since: 1 };
				const data = { kept, chain: { started: 1 } };
				const store = {
					load: async () => JSON.parse(JSON.stringify(data)),
					save: async (v) => { Object.assign(data, JSON.parse(JSON.stringify(v))); },
				};
				const ask = async () => {
					`+c.spoil+`;
					return { success: true, data: { consistent: true, oldSize: 3, size: 4, checkpoint: 'h\n4\nx', time: 2 } };
				};
				const o = await checkOnce(store, ask);
				return o.state + ' ' + o.code + ' ' + JSON.stringify(data.kept ?? null);
			})()`)
			if !strings.HasPrefix(got, "broken "+c.code+" ") || strings.Contains(got, `"size":4`) {
				t.Fatalf("a check whose kept checkpoint was %s while the host was asked: %s; want broken %s, the host's checkpoint not kept", c.name, got, c.code)
			}
		})
	}
}
