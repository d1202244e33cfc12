//go:build linux && e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
)

// TestContentWorldRecordsAreTheRunsAndBounded (issue 38, finding 8): the
// content-script world of a page (a compromised renderer holds it) can
// write no record of its own, in any agent's name, and its answers to a
// run's calls are recorded in that run's name, at most 8 per run.
//
// The page's world here is hostile before any run: it holds the page
// mediator's mark, so the run's injection leaves it in charge, and it
// answers every call with a refusal. Two Python runs are bound to the
// page (python-run, as the offscreen document sends it); their reads are
// all refused by the page. The world also sends 200 records of its own
// naming another agent.
func TestContentWorldRecordsAreTheRunsAndBounded(t *testing.T) {
	const (
		agent  = "e2e-world-reader"
		victim = "e2e-world-victim"
		perRun = 8 // browser.js PAGE_RECORDS_PER_RUN
	)
	ext := page(t, extURL("options.html"))
	prof := pythonProfile(agent, "read-only", []string{"page.read"})
	prof["permissionSet"] = "readonly"
	// Each call goes through the host, the service worker, the page and
	// two records: a loaded machine takes its time.
	prof["capabilities"].(map[string]any)["executionTimeout"] = 120000
	installPython(t, ext, prof, "print('x')\n")
	installAgent(t, ext, fetcherProfile(victim, "127.0.0.1"), nil)
	_, tabID := openTestPage(t, ext)
	inWorld := func(fn string) string {
		return eval[string](t, ext, fmt.Sprintf(`chrome.scripting.executeScript({target: {tabId: %d}, func: %s}).then(r => JSON.stringify(r[0].result))`, tabID, fn))
	}
	inWorld(`() => {
		globalThis.agentgatePageMediator = 'agentgate-page-mediator-1';
		chrome.runtime.onMessage.addListener((m, sender, reply) => {
			if (m?.type === 'agentgate-call') reply({ success: false, code: 'page_changed', error: 'the hostile page says the page changed' });
			return false;
		});
		return true;
	}`)

	for run, calls := range []int{12, 10} {
		r := hostCall(t, ext, "python-run", map[string]any{"agentId": agent, "tabId": tabID})
		var open struct {
			RunID string `json:"runId"`
		}
		if !r.Success || json.Unmarshal(r.Data, &open) != nil || open.RunID == "" {
			t.Fatalf("python-run %d: %s %s", run, r.Code, r.Error)
		}
		for range calls {
			if r := hostCall(t, ext, "agent-call", map[string]any{"runId": open.RunID, "agentId": agent, "operation": "getPageText", "params": map[string]any{}}); r.Success || r.Code != "page_changed" {
				t.Fatalf("a read the page refused got %+v", r)
			}
		}
		hostCall(t, ext, "python-run-end", map[string]any{"runId": open.RunID, "agentId": agent, "status": "ok"})
	}
	sent := inWorld(`async () => {
		let answered = 0;
		for (let i = 0; i < 200; i++) {
			const denial = { agentId: 'e2e-world-victim', permission: 'network.fetch', code: 'host_not_allowed', context: { reason: 'forged by the page' } };
			try { if (await chrome.runtime.sendMessage({ type: 'layer1-denial', denial })) answered++; } catch {}
		}
		return answered;
	}`)

	if got := denialsOf(t, ext, victim); len(got) != 0 {
		t.Fatalf("the page's world wrote %d records in another agent's name (%s of 200 messages answered)", len(got), sent)
	}
	fromPage := 0
	for _, d := range denialsOf(t, ext, agent) {
		if d.Context.Layer == "extension" {
			fromPage++
		}
	}
	if fromPage != 2*perRun {
		t.Fatalf("%d records of the page's refusals for two runs of 12 and 10 refused calls; want %d per run", fromPage, perRun)
	}
}

// denial is a denial record as list-denials gives it.
type denial struct {
	AgentID string `json:"agentId"`
	Code    string `json:"code"`
	Context struct {
		Layer   string            `json:"layer"`
		Details map[string]string `json:"details"`
	} `json:"context"`
}

// denialsOf is every denial of agent in the log (at most 1000).
func denialsOf(t *testing.T, ext context.Context, agent string) []denial {
	t.Helper()
	r := hostCall(t, ext, "list-denials", map[string]any{"agentId": agent, "limit": 1000})
	var page struct {
		Denials []denial `json:"denials"`
	}
	if !r.Success || json.Unmarshal(r.Data, &page) != nil {
		t.Fatalf("list-denials: %s %s %s", r.Code, r.Error, r.Data)
	}
	return page.Denials
}
