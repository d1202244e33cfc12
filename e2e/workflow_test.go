//go:build linux && e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestWorkflowAsksOncePerSideEffectingLayer: a three-layer workflow sent
// from the extension (pure step, then a POST beside a GET and a pure step,
// then a pure step) shows exactly one prompt, for its middle layer, and
// that prompt lists only the POST with its exact target. Allowing it once
// lets the layer run; the server gets one POST and one GET.
func TestWorkflowAsksOncePerSideEffectingLayer(t *testing.T) {
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
	var details struct {
		Workflow string
		Layer    int
		Tasks    []struct {
			Task, AgentID, Operation string
			Target                   struct{ Method, URL string }
		}
	}
	if err := json.Unmarshal([]byte(frag), &details); err != nil {
		t.Fatalf("prompt details %q: %v", frag, err)
	}
	if details.Workflow != "e2e-three" || details.Layer != 2 || len(details.Tasks) != 1 ||
		details.Tasks[0].Task != "send" || details.Tasks[0].Target.Method != "POST" || details.Tasks[0].Target.URL != web.URL+"/in" {
		t.Fatalf("the layer prompt shows %+v", details)
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
	// The summary counts the layer prompts the host sent; the browser
	// agrees: no other prompt window is open.
	targets, _ := chromedp.Targets(browser)
	for _, tg := range targets {
		if isPrompt(tg) && !answered[tg.TargetID] {
			t.Fatalf("a second prompt appeared: %s", tg.URL)
		}
	}
}
