//go:build linux && e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// Issue 38, finding 3: for a browser effect the decision "perform or
// cancel" is taken once, and when Stop and an answer race, Stop wins.

// TestStopAndAnAnswerTogetherStopWins: a Python run waits on its prompt
// to write the page; Stop is pressed and "Allow once" given in the same
// moment (Stop first, the answer in the same task). The answer reaches
// the host first (Stop goes through the offscreen document), which allows
// the call; the service worker, which saw Stop, refuses to perform it.
// The page is not written, the run ends cancelled, and the call's outcome
// record says prompt_cancelled, the run was stopped.
func TestStopAndAnAnswerTogetherStopWins(t *testing.T) {
	ext := page(t, extURL("options.html"))
	prof := pythonProfile("e2e-py-race", "full", []string{"page.write"})
	prof["capabilities"].(map[string]any)["executionTimeout"] = 120000
	installPython(t, ext, prof, "print('asking to write')\nrestricted_api.setElementText('h1', 'RACED')\nprint('written')\n")
	tab, tabID := openTestPage(t, ext)
	popup := startInPopup(t, tabID, "e2e-py-race")
	waitLong(t, popup, `document.getElementById('output').textContent.includes('asking to write')`)
	tg := nextPrompt(t)
	copyTab := promptCopy(t, tg)
	waitFor(t, copyTab, `!document.getElementById('allow-once').disabled`)
	var runs struct {
		Runs []struct{ Ref, AgentID string }
	}
	raw := eval[string](t, ext, `chrome.runtime.sendMessage({type: 'python-runs'}).then((r) => JSON.stringify(r.data))`)
	if err := json.Unmarshal([]byte(raw), &runs); err != nil {
		t.Fatal(err)
	}
	ref := ""
	for _, r := range runs.Runs {
		if r.AgentID == "e2e-py-race" {
			ref = r.Ref
		}
	}
	if ref == "" {
		t.Fatalf("the service worker keeps no run of e2e-py-race: %s", raw)
	}
	eval[bool](t, copyTab, fmt.Sprintf(`(chrome.runtime.sendMessage({type: 'python-stop', ref: %q}), document.getElementById('allow-once').click(), true)`, ref))
	waitLong(t, popup, `document.getElementById('output').dataset.status`)
	if status := eval[string](t, popup, `document.getElementById('output').dataset.status`); status != "cancelled" {
		t.Fatalf("the stopped run ended with %s", status)
	}
	// The call's outcome record: it was decided (allowed, by the answer)
	// and then not performed, and says so.
	outcome := waitForOutcome(t, ext, "e2e-py-race", "page.write.setElementText")
	if h1 := eval[string](t, tab, `document.querySelector('h1').textContent`); h1 != "quiet heading" {
		t.Fatalf("the page was written although Stop came first: %q (its record: %+v)", h1, outcome)
	}
	if outcome.Code != "prompt_cancelled" || !strings.Contains(outcome.Error, "stopped") {
		t.Fatalf("the call's outcome record is %+v; want prompt_cancelled, the run was stopped", outcome)
	}
}

// auditOutcome is an "executed" record of the audit trail: what became of
// an allowed call.
type auditOutcome struct {
	Kind      string
	Operation struct{ AgentID, Operation string }
	Code      string
	Error     string
}

// waitForOutcome waits for the outcome record of agent's operation.
func waitForOutcome(t testing.TB, ext context.Context, agent, operation string) auditOutcome {
	t.Helper()
	deadline := time.Now().Add(guard)
	for {
		var page struct{ Records []auditOutcome }
		r := hostCall(t, ext, "list-audit", map[string]any{"tail": true, "limit": 50})
		if err := json.Unmarshal(r.Data, &page); err != nil {
			t.Fatalf("list-audit: %v %s", err, r.Data)
		}
		for _, rec := range page.Records {
			if rec.Kind == "executed" && rec.Operation.AgentID == agent && rec.Operation.Operation == operation {
				return rec
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no outcome record of %s's %s: %.2000s", agent, operation, r.Data)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitForEnd waits for what became of agent's operation: its outcome
// record when it was allowed, or its denying decision when it never was
// (returned with that decision's code, as an outcome that did not run).
func waitForEnd(t testing.TB, ext context.Context, agent, operation string) auditOutcome {
	t.Helper()
	deadline := time.Now().Add(guard)
	for {
		var page struct {
			Records []struct {
				auditOutcome
				Allowed bool
				Reason  string
			}
		}
		r := hostCall(t, ext, "list-audit", map[string]any{"tail": true, "limit": 200})
		if err := json.Unmarshal(r.Data, &page); err != nil {
			t.Fatalf("list-audit: %v %s", err, r.Data)
		}
		for _, rec := range page.Records {
			if rec.Operation.AgentID != agent || rec.Operation.Operation != operation {
				continue
			}
			switch {
			case rec.Kind == "executed":
				return rec.auditOutcome
			case rec.Kind == "decision" && !rec.Allowed:
				out := rec.auditOutcome
				if out.Error == "" {
					out.Error = rec.Reason
				}
				return out
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no outcome or denial of %s's %s: %.2000s", agent, operation, r.Data)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestAnswerThenClosedPopupRecordSaysWhatHappened: "Allow once" is given
// and the popup that started the module's run closes in the same moment
// (its run is cancelled). Whether the write lands or not, the record of
// the call says the same: executed with no error when the page was
// written, and an error when it was not.
func TestAnswerThenClosedPopupRecordSaysWhatHappened(t *testing.T) {
	ext := page(t, extURL("options.html"))
	prof := pageReaderProfile("e2e-answer-close", "full")
	prof["capabilities"].(map[string]any)["executionTimeout"] = 120000
	installAgent(t, ext, prof, modules["page-reader"])
	tab, tabID := openTestPage(t, ext)
	popup := page(t, extURL(fmt.Sprintf("popup.html?tab=%d", tabID)))
	waitFor(t, popup, `document.querySelector('#agent option[value="e2e-answer-close"]')`)
	eval[bool](t, popup, `(document.getElementById('agent').value = 'e2e-answer-close', document.getElementById('input').value = 'shout', true)`)
	popupTab := eval[int](t, popup, `chrome.tabs.getCurrent().then((tab) => tab.id)`)
	click(t, popup, "run")
	tg := nextPrompt(t)
	copyTab := promptCopy(t, tg)
	waitFor(t, copyTab, `!document.getElementById('allow-once').disabled`)
	eval[bool](t, copyTab, fmt.Sprintf(`(document.getElementById('allow-once').click(), chrome.tabs.remove(%d), true)`, popupTab))
	// The popup's close may win before the answer counts: then the call
	// was never allowed (its decision says prompt_cancelled) and has no
	// outcome record; either way the page and the records must agree.
	outcome := waitForEnd(t, ext, "e2e-answer-close", "page.write.setElementText")
	h1 := eval[string](t, tab, `document.querySelector('h1').textContent`)
	t.Logf("h1 %q; record %+v", h1, outcome)
	written := h1 != "quiet heading"
	if written != (outcome.Code == "" && outcome.Error == "") {
		t.Fatalf("the page's heading is %q, and the call's record says %+v: they disagree", h1, outcome)
	}
}
