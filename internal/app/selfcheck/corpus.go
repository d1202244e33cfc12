package selfcheck

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/netproxy"
	"github.com/agentgate/nmhost/workspace"
)

// The hostile corpus nmhost check tries, one family of rules a function.

// checkURLs tries URL spellings that hide the canary's address, or another
// host behind a listed one.
func checkURLs(ctx context.Context, srv *checkServers, acl *netproxy.ACL) []Result {
	cp := srv.canaryPort()
	listed := "example.com"
	if ns := listedNames(acl, 1); len(ns) > 0 {
		listed = ns[0].Host
	}
	type c struct {
		u        string
		code     mediator.Code
		loopback bool // refused only because loopback is not listed
	}
	cases := []c{
		{"http://2130706433:" + cp + "/", mediator.CodeNonCanonicalHost, false},
		{"http://0x7f000001:" + cp + "/", mediator.CodeNonCanonicalHost, false},
		{"http://0177.0.0.1:" + cp + "/", mediator.CodeNonCanonicalHost, false},
		{"http://0x7f.0.0.1:" + cp + "/", mediator.CodeNonCanonicalHost, false},
		{"http://127.1:" + cp + "/", mediator.CodeNonCanonicalHost, false},
		{"http://\uff11\uff12\uff17.\uff10.\uff10.\uff11:" + cp + "/", mediator.CodeNonCanonicalHost, false},
		{"http://127\u30020\u30020\u30021:" + cp + "/", mediator.CodeNonCanonicalHost, false},
		{"http://%31%32%37.0.0.1:" + cp + "/", mediator.CodeNonCanonicalHost, false},
		{"http://127.0.0.1:" + cp + "/", mediator.CodeHostNotAllowed, true},
		{"http://127.0.0.1.:" + cp + "/", mediator.CodeHostNotAllowed, true},
		{"http://[::ffff:127.0.0.1]:" + cp + "/", mediator.CodeHostNotAllowed, true},
		{"http://[0:0:0:0:0:ffff:7f00:1]:" + cp + "/", mediator.CodeHostNotAllowed, true},
		{"http://[::1]:" + cp + "/", mediator.CodeHostNotAllowed, true},
		{"http://[::127.0.0.1]:" + cp + "/", mediator.CodeHostNotAllowed, true},
		{"http://localhost:" + cp + "/", mediator.CodeHostNotAllowed, true},
		{"http://[fe80::1%25lo]:" + cp + "/", mediator.CodeInvalidURL, false},
		{"http://" + listed + "@127.0.0.1:" + cp + "/", mediator.CodeInvalidURL, false},
		{"http://" + listed + ":" + cp + "@127.0.0.1:" + cp + "/", mediator.CodeInvalidURL, false},
		{"http://" + listed + "\\@127.0.0.1:" + cp + "/", mediator.CodeInvalidURL, false},
		{"http://127.0.0.1:" + cp + "\\@" + listed + "/", mediator.CodeInvalidURL, false},
		{"http://127.0.0.1:" + cp + "\\" + listed + "/", mediator.CodeInvalidURL, false},
		{"http://" + listed + ".check.invalid:" + cp + "/", mediator.CodeHostNotAllowed, false},
		{"http://check-" + listed + ":" + cp + "/", mediator.CodeHostNotAllowed, false},
		{"file:///etc/passwd", mediator.CodeSchemeNotAllowed, false},
		{"gopher://127.0.0.1:" + cp + "/", mediator.CodeSchemeNotAllowed, false},
	}
	if l, ok := lookalike(listed); ok {
		cases = append(cases, c{"http://" + l + ":" + cp + "/", mediator.CodeHostNotAllowed, false})
	}
	f := srv.fetcher(checkResolver{})
	defer f.CloseIdleConnections()
	loop := coversLoopback(acl)
	var out []Result
	for _, k := range cases {
		r := Result{Class: "url", Tried: "GET " + k.u, Want: codeWant(k.code)}
		if k.loopback && loop {
			r.Skip = "the profile lists loopback itself, so the canary is allowed"
			out = append(out, r)
			continue
		}
		code, _, refused := fetchOutcome(ctx, f, acl, k.u)
		r.Got, r.OK = codeGot(code, refused), refused && code == k.code
		out = append(out, r)
	}
	return out
}

// checkRedirects: a loopback redirector the check allows (beside the
// agent's own entries, deny entries included) redirects to the canary in
// several spellings; each hop must be refused.
func checkRedirects(ctx context.Context, srv *checkServers, entries []string) []Result {
	cp := srv.canaryPort()
	list := append(slices.Clone(entries), srv.redirectorAddr)
	acl, err := netproxy.NewACL(list)
	if err != nil {
		return []Result{{Class: "redirect", Tried: "allow the check's redirector", Skip: "cannot add it: " + err.Error()}}
	}
	res := checkResolver{}
	name := ""
	if ns := listedNames(acl, 1); len(ns) > 0 {
		name = "check-redirect." + ns[0].Host
		res[name] = []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	}
	f := srv.fetcher(res)
	defer f.CloseIdleConnections()
	loop := coversLoopback(acl) // the redirector entry names a port: only the agent's entries count
	type c struct {
		to       string
		code     mediator.Code
		loopback bool
	}
	cases := []c{
		{"http://127.0.0.1:" + cp + "/", mediator.CodeHostNotAllowed, true},
		{"//127.0.0.1:" + cp + "/", mediator.CodeHostNotAllowed, true},
		{"http://localhost:" + cp + "/", mediator.CodeHostNotAllowed, true},
		{"http://[::ffff:127.0.0.1]:" + cp + "/", mediator.CodeHostNotAllowed, true},
		{"http://2130706433:" + cp + "/", mediator.CodeNonCanonicalHost, false},
		{"http://" + srv.redirectorAddr + "@127.0.0.1:" + cp + "/", mediator.CodeInvalidURL, false},
		{"file:///etc/passwd", mediator.CodeSchemeNotAllowed, false},
	}
	if name != "" {
		cases = append(cases, c{"http://" + name + ":" + cp + "/", mediator.CodePrivateAddress, false})
	}
	var out []Result
	for _, k := range cases {
		u := "http://" + srv.redirectorAddr + "/r?" + url.Values{"to": {k.to}}.Encode()
		r := Result{Class: "redirect", Tried: "302 to " + k.to, Want: codeWant(k.code) + " at hop 1"}
		if k.loopback && loop {
			r.Skip = "the profile lists loopback itself, so the canary is allowed"
			out = append(out, r)
			continue
		}
		code, hop, refused := fetchOutcome(ctx, f, acl, u)
		if refused && hop == 0 {
			r.Skip = fmt.Sprintf("the agent's own entries refuse the redirector itself (%s)", code)
			out = append(out, r)
			continue
		}
		r.Got = codeGot(code, refused)
		if refused {
			r.Got += fmt.Sprintf(" at hop %d", hop)
		}
		r.OK = refused && code == k.code && hop == 1
		out = append(out, r)
	}
	return out
}

// privateAnswers are what a listed name is made to resolve to: each must
// be refused, because only an entry that names an address (or range)
// reaches a non-public one, never a name.
var privateAnswers = []string{"127.0.0.1", "::1", "::ffff:127.0.0.1", "10.0.0.1", "192.168.0.1", "100.64.0.1",
	"169.254.169.254", "fd00::1", "0.0.0.0"}

// checkPrivateNames makes names the agent's entries allow resolve to
// private addresses (from a table, not DNS).
func checkPrivateNames(ctx context.Context, srv *checkServers, acl *netproxy.ACL) []Result {
	names := listedNames(acl, 3)
	if len(names) == 0 {
		return []Result{{Class: "dns", Tried: "names resolving to private addresses", Skip: "the profile lists no names"}}
	}
	cp := srv.canaryPort()
	res := checkResolver{}
	type c struct{ u, host, addr string }
	var cases []c
	for i, e := range names {
		for j, a := range privateAnswers {
			host := fmt.Sprintf("check-%d-%d.%s", i, j, e.Host)
			res[host] = []netip.Addr{netip.MustParseAddr(a)}
			scheme := e.Scheme
			if scheme == "" {
				scheme = "http"
			}
			port := cp
			if e.Port != 0 {
				port = fmt.Sprint(e.Port)
			}
			cases = append(cases, c{scheme + "://" + host + ":" + port + "/", host, a})
		}
	}
	f := srv.fetcher(res)
	defer f.CloseIdleConnections()
	var out []Result
	for _, k := range cases {
		r := Result{Class: "dns", Tried: "GET " + k.u + " (" + k.host + " -> " + k.addr + ")", Want: "refused (private_address or host_not_allowed)"}
		code, _, refused := fetchOutcome(ctx, f, acl, k.u)
		r.Got = codeGot(code, refused)
		r.OK = refused && (code == mediator.CodePrivateAddress || code == mediator.CodeHostNotAllowed)
		out = append(out, r)
	}
	return out
}

// checkOperations decides each row of the operation table against the
// agent's grants at the level, with nobody to answer a prompt. What should
// happen is read from the row and the grants, not from the policy: no
// grant, no operation; a row that needs confirmation runs only at a high
// level (REQUIRES_CONFIRMATION) or by a remembered "always allow".
func checkOperations(ctx context.Context, pol *mediator.Policy, rec mediator.AgentRecord, level string) []Result {
	held := map[mediator.Permission]bool{}
	for _, g := range rec.Grants {
		held[g.Permission] = true
	}
	var out []Result
	for _, row := range mediator.Operations() {
		op := mediator.Operation{AgentID: rec.Profile.AgentID, Permission: row.Permission, Name: row.Name, Method: row.Method, SessionLevel: level}
		label := row.Name
		switch {
		case row.Name == mediator.OpNetworkFetch:
			op.URL, op.Host = "https://check.invalid/", "check.invalid"
			label += " " + row.Method
		case strings.HasPrefix(row.Name, mediator.OpShellPrefix):
			op = mediator.ShellOp(rec.Profile.AgentID, level, mediator.ShellStep{Command: strings.TrimPrefix(row.Name, mediator.OpShellPrefix),
				Writes: !row.ReadOnly})
		case row.Target == "origin":
			op.Origin = "https://check.invalid"
		case row.Name == mediator.OpWorkspaceRead || row.Name == mediator.OpWorkspaceWrite:
			op.Path = "check.txt"
		case row.Name == mediator.OpToolCall:
			// Its own checks follow (checkTools); here, a call that
			// names no tool is not run.
		}
		d := pol.Decide(ctx, op)
		r := Result{Class: "operation", Tried: label + " (" + string(row.Class) + ")"}
		byPref := strings.HasPrefix(d.DecidedBy, "pref:")
		switch {
		case row.Permission != "" && !held[row.Permission]:
			r.Want = "refused: " + string(row.Permission) + " is not granted"
			r.OK = !d.Allowed && !d.RequiresPrompt
		case row.Class == mediator.AlwaysConfirm:
			r.Want = "not run without a person's answer"
			r.OK = !d.Allowed || byPref
		case row.Class == mediator.RequiresConfirmation && level != mediator.LevelHigh:
			r.Want = "not run without a person's answer at level " + level
			r.OK = !d.Allowed || byPref
		default:
			r.Want = "decided by its grants, capabilities and level"
			r.OK = true
		}
		r.Got = describeDecision(d)
		out = append(out, r)
	}
	return out
}

func describeDecision(d mediator.PolicyDecision) string {
	switch {
	case d.Allowed:
		return "allowed (" + d.DecidedBy + ")"
	case d.RequiresPrompt:
		return "needs a prompt, which nobody answers (" + string(d.Code) + ")"
	}
	return "refused (" + string(d.Code) + ")"
}

// checkOrigins: a page write for an origin the person never approved is
// not run without asking, and an allow remembered for one origin (of any
// scope) does not carry over to another.
func checkOrigins(ctx context.Context, pol *mediator.Policy, rec mediator.AgentRecord, prefs []mediator.Preference, level string) []Result {
	origins := []string{"https://other-origin.check.invalid"}
	for _, p := range prefs {
		if p.Operation == mediator.OpPageSetElementText && p.Answer.Allows() && p.Target != "" {
			// The same host on another port, and another scheme: other origins.
			if u, err := url.Parse(p.Target); err == nil && u.Hostname() != "" {
				origins = append(origins, "https://"+u.Hostname()+":1", "http://"+u.Hostname()+":1")
			}
		}
	}
	var out []Result
	for _, o := range origins {
		op := mediator.Operation{AgentID: rec.Profile.AgentID, Permission: mediator.PermPageWrite, Name: mediator.OpPageSetElementText,
			Origin: o, Selector: "#check", TextLength: 1, SessionLevel: level}
		d := pol.Decide(ctx, op)
		r := Result{Class: "origin", Tried: "page.write.setElementText on " + o, Want: "not run without a person's answer for that origin", Got: describeDecision(d)}
		r.OK = !d.Allowed || (level == mediator.LevelHigh && d.DecidedBy == "level:high")
		out = append(out, r)
	}
	return out
}

// checkWorkspace tries to leave a temporary workspace (never the person's
// own): each attempt must be refused with path_not_allowed and leave the
// directory beside it untouched.
func checkWorkspace(dir string) []Result {
	outside := filepath.Join(filepath.Dir(dir), "outside")
	if err := os.MkdirAll(outside, 0o700); err != nil {
		return []Result{{Class: "workspace", Tried: "make a temporary workspace", Skip: err.Error()}}
	}
	ws, err := workspace.Open(dir, workspace.Limits{})
	if err != nil {
		return []Result{{Class: "workspace", Tried: "make a temporary workspace", Skip: err.Error()}}
	}
	defer ws.Close()
	type c struct {
		tried string
		do    func() error
	}
	cases := []c{
		{"write ../outside/x", func() error { return ws.WriteFile("../outside/x", []byte("x"), false) }},
		{"write " + filepath.Join(outside, "x") + " (absolute)", func() error { return ws.WriteFile(filepath.Join(outside, "x"), []byte("x"), false) }},
		{"read ../../etc/passwd", func() error { _, err := ws.ReadFile("../../etc/passwd", 1<<10); return err }},
		{"write a\\x00b (NUL)", func() error { return ws.WriteFile("a\x00b", []byte("x"), false) }},
	}
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err == nil {
		cases = append(cases,
			c{"write link/x (a link out)", func() error { return ws.WriteFile("link/x", []byte("x"), false) }},
			c{"read link/../.. (through a link)", func() error { _, err := ws.ReadFile("link/../../x", 1<<10); return err }})
	}
	var out []Result
	for _, k := range cases {
		err := k.do()
		r := Result{Class: "workspace", Tried: k.tried, Want: "refused (path_not_allowed)"}
		switch {
		case err == nil:
			r.Got = "not refused"
		default:
			r.Got = "refused (" + string(mediator.CodeOf(err)) + ")"
			r.OK = mediator.CodeOf(err) == mediator.CodePathNotAllowed
		}
		out = append(out, r)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		out = append(out, Result{Class: "workspace", Tried: "the directory beside the workspace", Want: "untouched", Got: fmt.Sprintf("%d entries appeared", len(ents))})
	}
	return out
}

// checkTools: MCP tool calls of a server the agent's profile does not
// list are refused; a tool named as destructive is not run without a
// person's answer even when its server calls it read-only; a tool whose
// definition changed since an answer is asked about again.
func checkTools(ctx context.Context, pol *mediator.Policy, rec mediator.AgentRecord, level string) []Result {
	call := func(server, tool, desc string, hints mediator.ToolHints) mediator.Operation {
		def := mediator.ToolDefinitionHash(tool, desc, json.RawMessage(`{"type":"object"}`), nil)
		return mediator.Operation{AgentID: rec.Profile.AgentID, Name: mediator.OpToolCall, Permission: mediator.PermMCPCall, SessionLevel: level,
			Tool: &mediator.ToolCall{Server: server, Tool: tool, Definition: def, ArgsSHA256: mediator.ArgsHash([]byte("{}")), Hints: hints}}
	}
	yes := true
	var out []Result
	unlisted := call("check-unlisted-server", "read_file", "", mediator.ToolHints{})
	d := pol.Decide(ctx, unlisted)
	out = append(out, Result{Class: "tool", Tried: "mcp.call of a server the profile does not list", Want: "refused",
		Got: describeDecision(d), OK: !d.Allowed && !d.RequiresPrompt})
	for _, server := range listedServers(rec.Profile.Capabilities.MCPTools) {
		liar := call(server, "delete_everything", "", mediator.ToolHints{ReadOnly: &yes})
		d := pol.Decide(ctx, liar)
		out = append(out, Result{Class: "tool", Tried: "mcp.call " + server + ".delete_everything that its server calls read-only",
			Want: "not run without a person's answer", Got: describeDecision(d), OK: !d.Allowed || strings.HasPrefix(d.DecidedBy, "pref:")})
	}
	return out
}

// listedServers is the servers an mcpTools list names, at most three.
func listedServers(rules []string) []string {
	var out []string
	for _, r := range rules {
		server, _, _ := strings.Cut(r, "/")
		if !slices.Contains(out, server) && len(out) < 3 {
			out = append(out, server)
		}
	}
	return out
}
