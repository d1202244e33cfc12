package host

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/pyagent"
)

// TestFunctionParamsCoverEveryFunction: every restricted_api function has
// its parameter list, and every name in it is a field of callParams.
func TestFunctionParamsCoverEveryFunction(t *testing.T) {
	for _, f := range pyagent.Functions() {
		t.Run(f.Name, func(t *testing.T) {
			params, ok := functionParams[f.Name]
			if !ok {
				t.Fatalf("no parameter list")
			}
			if got := paramTypes()[f.Name].NumField(); got != len(params) {
				t.Fatalf("%d of its %d parameters are callParams fields", got, len(params))
			}
		})
	}
	if len(functionParams) != len(pyagent.Functions()) {
		t.Errorf("%d parameter lists for %d functions", len(functionParams), len(pyagent.Functions()))
	}
}

// TestAgentCallRefusesParamsItDoesNotTake: a call of each function with
// one parameter more than it takes (one another function takes, or none
// does), a parameter given twice or a case variant of its own is
// bad_request before any decision, and each refusal is in the denial log
// with its audit record.
func TestAgentCallRefusesParamsItDoesNotTake(t *testing.T) {
	h := newHarness(t, true)
	runID, _ := openPythonRun(h, "pyparams", []string{"console.log"})
	// extra is a parameter the function does not take: another function's
	// when there is one.
	extra := func(fn string) string {
		for _, other := range []string{"url", "command", "text", "selector"} {
			if !slices.Contains(functionParams[fn], other) {
				return other
			}
		}
		return "unknown"
	}
	type row struct {
		name   string
		fn     string
		params string
		// envelope: the message as a whole is refused while it is read
		// (a repeated member anywhere in it), before the run is known,
		// as any malformed message is; no denial names an agent then.
		envelope bool
	}
	var rows []row
	for _, f := range pyagent.Functions() {
		fields := []string{}
		for _, p := range functionParams[f.Name] {
			fields = append(fields, `"`+p+`":`+exampleParam(p))
		}
		fields = append(fields, `"`+extra(f.Name)+`":"x"`)
		rows = append(rows, row{f.Name + " with " + extra(f.Name), f.Name, "{" + strings.Join(fields, ",") + "}", false})
	}
	rows = append(rows,
		row{"log with text twice", "log", `{"text":"a","text":"b"}`, true},
		row{"log with Text", "log", `{"Text":"a"}`, false},
		row{"getPageText with a null extra", "getPageText", `{"selector":null}`, false},
		row{"params not an object", "log", `["text"]`, false},
	)
	for _, c := range rows {
		t.Run(c.name, func(t *testing.T) {
			r := h.call("agent-call", map[string]any{"runId": runID, "agentId": "pyparams", "operation": c.fn, "params": json.RawMessage(c.params)})
			if r.Success || r.Code != string(mediator.CodeBadRequest) {
				t.Errorf("success=%v code=%q (%s); want bad_request", r.Success, r.Code, r.Error)
			}
		})
	}
	t.Run("each refusal is a denial with its audit record", func(t *testing.T) {
		var page struct{ Denials []mediator.Denial }
		h.mustOK("list-denials", map[string]any{"agentId": "pyparams", "limit": 100}, &page)
		// Every row is on record: a parameter given twice is refused
		// when the message is read, before the run is known, and the
		// host records that refusal too (with no function named).
		got, recorded := map[string]int{}, len(rows)
		for _, d := range page.Denials {
			if d.Code != mediator.CodeBadRequest || d.AuditSeq <= 0 || d.Context.Layer != "host" {
				t.Errorf("denial %+v", d)
			}
			got[d.Context.Details["function"]]++
		}
		for _, c := range rows {
			if !c.envelope && got[c.fn] == 0 {
				t.Errorf("no denial for %s", c.name)
			}
		}
		if len(page.Denials) != recorded {
			t.Errorf("%d denials for %d refusals: %v", len(page.Denials), recorded, got)
		}
	})
	t.Run("the parameters a function takes are read", func(t *testing.T) {
		r := h.call("agent-call", map[string]any{"runId": runID, "agentId": "pyparams", "operation": "log", "params": map[string]any{"text": "hi"}})
		if !r.Success {
			t.Fatalf("log = %s %s", r.Code, r.Error)
		}
	})
}

// exampleParam is a well-typed value of parameter p.
func exampleParam(p string) string {
	switch p {
	case "limit":
		return "5"
	case "tags":
		return `["a"]`
	case "options":
		return `{"method":"GET"}`
	}
	return `"x"`
}
