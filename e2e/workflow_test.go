//go:build linux && e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestWorkflowAsksOnceForItsSideEffects: a three-layer workflow sent
// from the extension (pure step, then a POST beside a GET and a pure step,
// then a pure step) shows exactly one prompt, for its plan, before
// anything runs, and that prompt lists only the POST, in its middle layer,
// with its exact target. Allowing it once lets the workflow run; the
// server gets one POST and one GET.
func TestWorkflowAsksOnceForItsSideEffects(t *testing.T) {
	var posts, gets int
	web := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "POST" {
			posts++
		} else {
			gets++
		}
		io.WriteString(w, "ok")
	})
	ext := page(t, extURL("options.html"))
	installAgent(t, ext, fetcherProfile("e2e-wf", hostOf(web.URL)), nil)
	wf := map[string]any{"id": "e2e-three", "tasks": []map[string]any{
		{"id": "prep", "code": map[string]any{"op": "code:expr", "expr": "'note'"}},
		{"id": "send", "dependsOn": []string{"prep"}, "call": map[string]any{"agentId": "e2e-wf", "operation": "network.fetch", "method": "POST", "url": web.URL + "/in", "body": "x"}},
		{"id": "look", "dependsOn": []string{"prep"}, "call": map[string]any{"agentId": "e2e-wf", "operation": "network.fetch", "method": "GET", "url": web.URL + "/peek"}},
		{"id": "shout", "dependsOn": []string{"prep"}, "code": map[string]any{"op": "code:case", "expr": "r.prep.upperAscii()"}},
		{"id": "done", "dependsOn": []string{"send", "look", "shout"}, "code": map[string]any{"op": "code:logic", "expr": "r.send.status == 200 && r.shout == 'NOTE'"}},
	}}
	b, _ := json.Marshal(map[string]any{"type": "host", "request": map[string]any{"type": "run-workflow", "workflow": wf}})
	result := make(chan string, 1)
	go func() {
		r, err := evalErr[string](ext, fmt.Sprintf("chrome.runtime.sendMessage(%s).then(JSON.stringify)", b))
		if err != nil {
			r = "error: " + err.Error()
		}
		result <- r
	}()
	tg := nextPrompt(t)
	frag, _ := url.PathUnescape(tg.URL[strings.Index(tg.URL, "#")+1:])
	var details planDetails
	if err := json.Unmarshal([]byte(frag), &details); err != nil {
		t.Fatalf("prompt details %q: %v", frag, err)
	}
	if details.Workflow != "e2e-three" || details.Layer != 0 || details.Plan == nil || details.Plan.Layers != 3 || len(details.Tasks) != 1 ||
		details.Tasks[0].Task != "send" || details.Tasks[0].Layer != 2 || details.Tasks[0].Target.Method != "POST" || details.Tasks[0].Target.URL != web.URL+"/in" {
		t.Fatalf("the plan's prompt shows %+v", details)
	}
	if posts+gets != 0 {
		t.Fatalf("the server was reached before the plan was approved: %d POST, %d GET", posts, gets)
	}
	clickPrompt(t, tg, "allow-once")
	var r reply
	if err := json.Unmarshal([]byte(<-result), &r); err != nil || !r.Success {
		t.Fatalf("run-workflow: %v %+v", err, r)
	}
	var sum struct {
		Status  string
		Prompts int
		Layers  int
	}
	json.Unmarshal(r.Data, &sum)
	if sum.Status != "ok" || sum.Prompts != 1 || sum.Layers != 3 || posts != 1 || gets != 1 {
		t.Fatalf("summary %+v; server saw %d POST, %d GET", sum, posts, gets)
	}
	// The summary counts the prompts the host sent; the browser
	// agrees: no other prompt window is open.
	targets, _ := chromedp.Targets(browser)
	for _, tg := range targets {
		if isPrompt(tg) && !answered[tg.TargetID] {
			t.Fatalf("a second prompt appeared: %s", tg.URL)
		}
	}
}

// planDetails is what a plan's prompt window is opened with (its URL's
// fragment).
type planDetails struct {
	Workflow string
	Layer    int
	Plan     *struct {
		Hash   string
		Layers int
	}
	Tasks []struct {
		Task, AgentID, Operation string
		Layer                    int
		Target                   struct{ Method, URL string }
	}
}

// TestWorkflowPlanApprovedInTheBrowser: a four-layer workflow (a GET, a
// pure step, a POST, a pure step, then a PUT) shows one prompt window for
// its whole plan before any request reaches the server, listing the POST
// and the PUT with their layers. "Always allow this plan" lets it run:
// the server gets exactly the three requests. The same workflow again
// runs without a window, on the remembered plan.
func TestWorkflowPlanApprovedInTheBrowser(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	web := serve(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path)
		mu.Unlock()
		io.WriteString(w, "ok")
	})
	requests := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
	ext := page(t, extURL("options.html"))
	installAgent(t, ext, fetcherProfile("e2e-plan", hostOf(web.URL)), nil)
	call := func(id, method, path string, deps ...string) map[string]any {
		return map[string]any{"id": id, "dependsOn": deps, "call": map[string]any{"agentId": "e2e-plan", "operation": "network.fetch",
			"method": method, "url": web.URL + path, "body": map[bool]string{true: "", false: "x"}[method == "GET"]}}
	}
	wf := map[string]any{"id": "e2e-plan", "tasks": []map[string]any{
		call("read", "GET", "/read"),
		{"id": "size", "dependsOn": []string{"read"}, "code": map[string]any{"op": "code:get_length", "expr": "size(r.read.body)"}},
		call("write", "POST", "/write", "size"),
		{"id": "check", "dependsOn": []string{"write"}, "code": map[string]any{"op": "code:equals", "expr": "r.write.status == 200"}},
		call("update", "PUT", "/update", "check"),
	}}
	run := func() <-chan string {
		b, _ := json.Marshal(map[string]any{"type": "host", "request": map[string]any{"type": "run-workflow", "workflow": wf}})
		result := make(chan string, 1)
		go func() {
			r, err := evalErr[string](ext, fmt.Sprintf("chrome.runtime.sendMessage(%s).then(JSON.stringify)", b))
			if err != nil {
				r = "error: " + err.Error()
			}
			result <- r
		}()
		return result
	}
	type summary struct {
		Status  string
		Prompts int
		Plan    struct{ ApprovedBy, Hash string }
	}
	summaryOf := func(raw string) summary {
		var r reply
		var sum summary
		if err := json.Unmarshal([]byte(raw), &r); err != nil || !r.Success || json.Unmarshal(r.Data, &sum) != nil {
			t.Fatalf("run-workflow: %v %s", err, raw)
		}
		return sum
	}

	result := run()
	tg := nextPrompt(t)
	frag, _ := url.PathUnescape(tg.URL[strings.Index(tg.URL, "#")+1:])
	var details planDetails
	if err := json.Unmarshal([]byte(frag), &details); err != nil {
		t.Fatalf("prompt details %q: %v", frag, err)
	}
	var listed []string
	for _, task := range details.Tasks {
		listed = append(listed, fmt.Sprintf("%d %s %s %s", task.Layer, task.Task, task.Target.Method, task.Target.URL))
	}
	want := []string{"3 write POST " + web.URL + "/write", "5 update PUT " + web.URL + "/update"}
	if details.Plan == nil || details.Plan.Layers != 5 || len(details.Plan.Hash) != 64 || !slices.Equal(listed, want) {
		t.Fatalf("the plan's prompt shows %+v, listing %v", details, listed)
	}
	if got := requests(); len(got) != 0 {
		t.Fatalf("requests before the plan was approved: %v", got)
	}
	clickPrompt(t, tg, "always-allow")
	sum := summaryOf(<-result)
	if sum.Status != "ok" || sum.Prompts != 1 || !strings.HasPrefix(sum.Plan.ApprovedBy, "pref:always:") || sum.Plan.Hash != details.Plan.Hash {
		t.Fatalf("first run: %+v", sum)
	}
	if got := requests(); !slices.Equal(got, []string{"GET /read", "POST /write", "PUT /update"}) {
		t.Fatalf("the server got %v", got)
	}

	// The same plan again: remembered, no window.
	sum = summaryOf(<-run())
	if sum.Status != "ok" || sum.Prompts != 0 || !strings.HasPrefix(sum.Plan.ApprovedBy, "pref:always:") {
		t.Fatalf("second run: %+v", sum)
	}
	targets, _ := chromedp.Targets(browser)
	for _, tg := range targets {
		if isPrompt(tg) && !answered[tg.TargetID] {
			t.Fatalf("the remembered plan opened a prompt: %s", tg.URL)
		}
	}
	if got := requests(); len(got) != 6 {
		t.Fatalf("the server got %v", got)
	}
}
