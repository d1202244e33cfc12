package pagefile

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentgate/nmhost/mediator"
)

const doc = `<html><head><title>Demo page</title><style>p{}</style></head>
<body><h1 id="top" class="big title">Hello</h1><div class="card"><p>First</p><p class="note">Second</p></div>
<script>var secret = 1</script></body></html>`

func TestPageCalls(t *testing.T) {
	p, err := Parse(strings.NewReader(doc), "file:///demo.html")
	if err != nil {
		t.Fatal(err)
	}
	call := func(op string, params map[string]any) (string, mediator.Code) {
		b, err := p.Call(context.Background(), op, params)
		return string(b), mediator.CodeOf(err)
	}
	cases := []struct {
		name, op string
		params   map[string]any
		want     string
		code     mediator.Code
	}{
		{"page text skips script and style", mediator.OpPageGetPageText, nil, `{"text":"Hello First Second","title":"Demo page","url":"file:///demo.html"}`, ""},
		{"by tag", mediator.OpPageQuerySelector, map[string]any{"selector": "h1"}, `"text":"Hello"`, ""},
		{"by id", mediator.OpPageQuerySelector, map[string]any{"selector": "#top"}, `"tag":"H1"`, ""},
		{"by classes", mediator.OpPageQuerySelector, map[string]any{"selector": "h1.big.title"}, `"found":true`, ""},
		{"descendant", mediator.OpPageQuerySelector, map[string]any{"selector": ".card p.note"}, `"text":"Second"`, ""},
		{"all", mediator.OpPageQuerySelectorAll, map[string]any{"selector": "div p", "limit": 10}, `"text":"First"`, ""},
		{"no match", mediator.OpPageQuerySelector, map[string]any{"selector": "table"}, `{"found":false}`, ""},
		{"unsupported selector", mediator.OpPageQuerySelector, map[string]any{"selector": "p:has(script)"}, "", mediator.CodeBadRequest},
		{"attribute selector", mediator.OpPageQuerySelector, map[string]any{"selector": "[onclick]"}, "", mediator.CodeBadRequest},
		{"empty selector", mediator.OpPageQuerySelector, map[string]any{"selector": ""}, "", mediator.CodeBadRequest},
		{"dangling dot", mediator.OpPageQuerySelector, map[string]any{"selector": "p."}, "", mediator.CodeBadRequest},
		{"huge selector", mediator.OpPageQuerySelector, map[string]any{"selector": strings.Repeat("a ", 1000)}, "", mediator.CodeBadRequest},
		{"clipboard is not a page", mediator.OpClipboardRead, nil, "", mediator.CodeNoBrowser},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, code := call(c.op, c.params)
			if code != c.code || !strings.Contains(got, c.want) {
				t.Fatalf("got %s %q; want %q containing %s", code, got, c.code, c.want)
			}
		})
	}
	if got, _ := call(mediator.OpPageSetElementText, map[string]any{"selector": "#top", "text": "Changed"}); got != `{"found":true}` {
		t.Fatalf("write: %s", got)
	}
	got, _ := call(mediator.OpPageQuerySelector, map[string]any{"selector": "h1"})
	var e element
	json.Unmarshal([]byte(got), &e)
	if e.Text != "Changed" {
		t.Fatalf("after write: %s", got)
	}
}
