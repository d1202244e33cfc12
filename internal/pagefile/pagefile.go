// Package pagefile answers an agent's page calls from an HTML file, so that
// `nmhost run --page FILE.html` can run page agents without a browser.
package pagefile

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"

	"golang.org/x/net/html"

	"github.com/agentgate/nmhost/mediator"
)

// MaxSelectorBytes bounds a selector; it is the agent's input.
const MaxSelectorBytes = 1024

// Page is a parsed HTML document that implements wasmhost.Browser for the
// page calls. Writes change the parsed document only, never the file.
// Clipboard and notification calls get no_browser.
type Page struct {
	mu   sync.Mutex
	root *html.Node
	url  string
}

// Parse reads an HTML document.
func Parse(r io.Reader, url string) (*Page, error) {
	root, err := html.Parse(r)
	if err != nil {
		return nil, err
	}
	return &Page{root: root, url: url}, nil
}

type element struct {
	Found      bool              `json:"found"`
	Text       string            `json:"text,omitempty"`
	Tag        string            `json:"tag,omitempty"`
	Attributes map[string]string `json:"attributes,omitempty"`
}

// Call implements wasmhost.Browser.
func (p *Page) Call(_ context.Context, call string, params any) (json.RawMessage, error) {
	var args struct {
		Selector string `json:"selector"`
		Text     string `json:"text"`
		Limit    int    `json:"limit"`
	}
	b, _ := json.Marshal(params)
	_ = json.Unmarshal(b, &args)
	p.mu.Lock()
	defer p.mu.Unlock()
	switch call {
	case mediator.OpPageGetPageText:
		return json.Marshal(map[string]string{"text": text(p.root), "url": p.url, "title": p.title()})
	case mediator.OpPageQuerySelector, mediator.OpPageQuerySelectorAll, mediator.OpPageSetElementText:
	default:
		return nil, mediator.Errorf(mediator.CodeNoBrowser, "%s needs the browser; --page answers page calls only", call)
	}
	sel, err := parseSelector(args.Selector)
	if err != nil {
		return nil, err
	}
	limit := 1
	if call == mediator.OpPageQuerySelectorAll {
		limit = max(1, min(args.Limit, 1000))
	}
	nodes := sel.match(p.root, limit)
	switch call {
	case mediator.OpPageQuerySelector:
		if len(nodes) == 0 {
			return json.Marshal(element{})
		}
		return json.Marshal(describe(nodes[0]))
	case mediator.OpPageQuerySelectorAll:
		out := make([]element, 0, len(nodes))
		for _, n := range nodes {
			out = append(out, describe(n))
		}
		return json.Marshal(map[string]any{"elements": out})
	}
	if len(nodes) == 0 {
		return json.Marshal(map[string]bool{"found": false})
	}
	n := nodes[0]
	for c := n.FirstChild; c != nil; {
		next := c.NextSibling
		n.RemoveChild(c)
		c = next
	}
	n.AppendChild(&html.Node{Type: html.TextNode, Data: args.Text})
	return json.Marshal(map[string]bool{"found": true})
}

func describe(n *html.Node) element {
	e := element{Found: true, Text: strings.TrimSpace(text(n)), Tag: strings.ToUpper(n.Data), Attributes: map[string]string{}}
	for _, a := range n.Attr {
		e.Attributes[a.Key] = a.Val
	}
	return e
}

func (p *Page) title() string {
	var t string
	walk(p.root, func(n *html.Node) bool {
		if n.Type == html.ElementNode && n.Data == "title" {
			t = strings.TrimSpace(text(n))
			return false
		}
		return true
	})
	return t
}

// text is the visible text under n: scripts and styles are not text.
func text(n *html.Node) string {
	var b strings.Builder
	walk(n, func(c *html.Node) bool {
		if c.Type == html.ElementNode && (c.Data == "script" || c.Data == "style" || c.Data == "head") {
			return false
		}
		if c.Type == html.TextNode {
			if s := strings.TrimSpace(c.Data); s != "" {
				if b.Len() > 0 {
					b.WriteByte(' ')
				}
				b.WriteString(s)
			}
		}
		return true
	})
	return b.String()
}

// walk visits n and its descendants in document order; visit returns
// false to skip a node's children.
func walk(n *html.Node, visit func(*html.Node) bool) {
	if !visit(n) {
		return
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, visit)
	}
}

// compound is one simple selector: tag, #id and .classes together.
type compound struct {
	tag, id string
	classes []string
}

// selector is compounds joined by descendant combinators (spaces): the
// subset of CSS a file-backed page supports.
type selector []compound

func parseSelector(s string) (selector, error) {
	if len(s) == 0 || len(s) > MaxSelectorBytes {
		return nil, mediator.Errorf(mediator.CodeBadRequest, "a selector must be 1-%d bytes", MaxSelectorBytes)
	}
	var sel selector
	for _, part := range strings.Fields(s) {
		var c compound
		rest := part
		cut := func() string {
			i := strings.IndexAny(rest[1:], "#.")
			var tok string
			if i < 0 {
				tok, rest = rest[1:], ""
			} else {
				tok, rest = rest[1:i+1], rest[i+1:]
			}
			return tok
		}
		if i := strings.IndexAny(rest, "#."); i != 0 {
			if i < 0 {
				i = len(rest)
			}
			c.tag, rest = strings.ToLower(rest[:i]), rest[i:]
		}
		for rest != "" {
			kind := rest[0]
			tok := cut()
			if tok == "" {
				return nil, mediator.Errorf(mediator.CodeBadRequest, "selector %q: empty name after %c", s, kind)
			}
			if kind == '#' {
				c.id = tok
			} else {
				c.classes = append(c.classes, tok)
			}
		}
		if strings.ContainsAny(c.tag+c.id+strings.Join(c.classes, ""), "[]>+~:*(),\"'") {
			return nil, mediator.Errorf(mediator.CodeBadRequest, "selector %q: --page supports tag, #id, .class and descendant selectors only", s)
		}
		sel = append(sel, c)
	}
	return sel, nil
}

func (c compound) matches(n *html.Node) bool {
	if n.Type != html.ElementNode || (c.tag != "" && n.Data != c.tag) {
		return false
	}
	attr := func(k string) string {
		for _, a := range n.Attr {
			if a.Key == k {
				return a.Val
			}
		}
		return ""
	}
	if c.id != "" && attr("id") != c.id {
		return false
	}
	have := strings.Fields(attr("class"))
	for _, want := range c.classes {
		found := false
		for _, h := range have {
			found = found || h == want
		}
		if !found {
			return false
		}
	}
	return true
}

// match returns up to limit elements matching sel, in document order.
func (sel selector) match(root *html.Node, limit int) []*html.Node {
	var out []*html.Node
	last := sel[len(sel)-1]
	walk(root, func(n *html.Node) bool {
		if len(out) < limit && last.matches(n) && sel.ancestorsMatch(n) {
			out = append(out, n)
		}
		return len(out) < limit
	})
	return out
}

// ancestorsMatch checks the compounds before the last against n's ancestors.
func (sel selector) ancestorsMatch(n *html.Node) bool {
	i := len(sel) - 2
	for a := n.Parent; a != nil && i >= 0; a = a.Parent {
		if sel[i].matches(a) {
			i--
		}
	}
	return i < 0
}
