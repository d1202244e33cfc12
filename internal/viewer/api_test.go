package viewer

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/mediator"
)

func TestSessionSettingsAPI(t *testing.T) {
	v := newTestViewer(t, nil)
	tok := v.token.String()

	status, body, _ := v.do("GET", "/api/sessions/chat-001/settings", "", bearer(tok))
	wantRefusal(t, status, body, http.StatusNotFound, mediator.CodeUnknownSession)

	var got settingsReply
	v.api("PUT", "/api/sessions/chat-001/settings", `{"settings":{"permissionLevel":"low"}}`, 200, &got)
	root := filepath.Join(v.dir, "session-workspaces", store.WorkspaceDirName("chat-001"))
	want := settingsReply{OK: true, SessionID: "chat-001", Settings: mediator.SessionSettings{
		PermissionLevel: "low", Workspace: mediator.SessionWorkspace{Mode: "session", RootDir: root}}}
	if got != want {
		t.Fatalf("PUT = %+v; want %+v", got, want)
	}
	got = settingsReply{}
	v.api("GET", "/api/sessions/chat-001/settings", "", 200, &got)
	if got != want {
		t.Fatalf("GET = %+v; want %+v", got, want)
	}
	// Default level for a new session.
	v.api("PUT", "/api/sessions/chat-002/settings", `{"settings":{"workspace":{}}}`, 200, &got)
	if got.Settings.PermissionLevel != "medium" {
		t.Fatalf("default level %q", got.Settings.PermissionLevel)
	}

	bad := []struct {
		name, path, body string
		status           int
		code             mediator.Code
	}{
		{"invalid level", "/api/sessions/chat-001/settings", `{"settings":{"permissionLevel":"admin"}}`, 400, mediator.CodeInvalidLevel},
		{"workspace not object", "/api/sessions/chat-001/settings", `{"settings":{"workspace":"/etc"}}`, 400, mediator.CodeBadRequest},
		{"workspace elsewhere", "/api/sessions/chat-001/settings", `{"settings":{"workspace":{"rootDir":"/"}}}`, 400, mediator.CodeBadRequest},
		{"malformed JSON", "/api/sessions/chat-001/settings", `{"settings":{"permissionLevel":"low"`, 400, mediator.CodeBadRequest},
		{"not JSON", "/api/sessions/chat-001/settings", `permissionLevel=low`, 400, mediator.CodeBadRequest},
		{"no settings key", "/api/sessions/chat-001/settings", `{"permissionLevel":"low"}`, 400, mediator.CodeBadRequest},
		{"settings null", "/api/sessions/chat-001/settings", `{"settings":null}`, 400, mediator.CodeBadRequest},
		{"settings array", "/api/sessions/chat-001/settings", `{"settings":[]}`, 400, mediator.CodeBadRequest},
		{"two objects", "/api/sessions/chat-001/settings", `{"settings":{}}{"settings":{}}`, 400, mediator.CodeBadRequest},
		{"repeated settings", "/api/sessions/chat-001/settings", `{"settings":{"permissionLevel":"low"},"settings":{"permissionLevel":"high"}}`, 400, mediator.CodeBadRequest},
		{"case-variant settings", "/api/sessions/chat-001/settings", `{"settings":{"permissionLevel":"low"},"Settings":{"permissionLevel":"high"}}`, 400, mediator.CodeBadRequest},
		{"case-variant level", "/api/sessions/chat-001/settings", `{"settings":{"Permission_Level":"high"}}`, 400, mediator.CodeBadRequest},
		{"oversized body", "/api/sessions/chat-001/settings", `{"settings":{"permissionLevel":"low"` + strings.Repeat(" ", MaxBodyBytes) + `}}`, 413, mediator.CodeTooLarge},
		{"NUL in id", "/api/sessions/a%00b/settings", `{"settings":{}}`, 404, mediator.CodeUnknownSession},
		{"newline in id", "/api/sessions/a%0Ab/settings", `{"settings":{}}`, 404, mediator.CodeUnknownSession},
		{"not UTF-8 id", "/api/sessions/a%FFb/settings", `{"settings":{}}`, 404, mediator.CodeUnknownSession},
		{"long id", "/api/sessions/" + strings.Repeat("a", mediator.MaxSessionIDLen+1) + "/settings", `{"settings":{}}`, 404, mediator.CodeUnknownSession},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			status, body, _ := v.do("PUT", c.path, c.body, bearer(tok))
			wantRefusal(t, status, body, c.status, c.code)
		})
	}
	// None of the refusals changed anything.
	v.api("GET", "/api/sessions/chat-001/settings", "", 200, &got)
	if got != want {
		t.Fatalf("after refusals: %+v", got)
	}
	status, body, _ = v.do("GET", "/api/sessions/nope/settings", "", bearer(tok))
	wantRefusal(t, status, body, http.StatusNotFound, mediator.CodeUnknownSession)
}

// TestSessionIDsInViewerPaths: the id is one URL-escaped path segment,
// whatever it holds: "/", "%", "..", spaces; each names its own session
// and workspace, inside session-workspaces.
func TestSessionIDsInViewerPaths(t *testing.T) {
	v := newTestViewer(t, nil)
	for _, id := range []string{"a/b", "50%", "%2F", "../../etc", "a/../b", "chat 1", "日記", "..", "."} {
		t.Run(id, func(t *testing.T) {
			path := "/api/sessions/" + url.PathEscape(id) + "/settings"
			if id == "." || id == ".." {
				// PathEscape leaves dots; a client escapes them so the
				// segment is not a path step.
				path = "/api/sessions/" + strings.Repeat("%2E", len(id)) + "/settings"
			}
			var got settingsReply
			v.api("PUT", path, `{"settings":{"permissionLevel":"low"}}`, 200, &got)
			root := filepath.Join(v.dir, "session-workspaces", store.WorkspaceDirName(id))
			if got.SessionID != id || got.Settings.Workspace != (mediator.SessionWorkspace{Mode: "session", RootDir: root}) {
				t.Fatalf("PUT %s = %+v", path, got)
			}
			got = settingsReply{}
			v.api("GET", path, "", 200, &got)
			if got.SessionID != id || got.Settings.PermissionLevel != "low" || got.Settings.Workspace.RootDir != root {
				t.Fatalf("GET %s = %+v", path, got)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(v.dir, "etc")); !os.IsNotExist(err) {
		t.Fatalf("a session id made a directory outside session-workspaces: %v", err)
	}
}

// seedDenials writes n denials for each agent, alternating permissions.
func seedDenials(t *testing.T, s *store.Store, n int, agents ...string) {
	t.Helper()
	for i := range n {
		for _, a := range agents {
			perm, code := "network.fetch", mediator.CodeHostNotAllowed
			if i%2 == 1 {
				perm, code = "clipboard.read", mediator.CodePermissionNotGranted
			}
			_, err := s.LogDenial(context.Background(), mediator.Denial{AgentID: a, Permission: perm, Code: code,
				Context: mediator.DenialContext{URL: fmt.Sprintf("https://%s.test/%d", a, i), Reason: "seeded " + a}})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestDenialsAPIFiltersAndPages(t *testing.T) {
	v := newTestViewer(t, nil)
	seedDenials(t, v.st, 10, "alpha", "beta")

	var p store.DenialPage
	v.api("GET", "/api/denials?agentId=alpha&permission=network.fetch&limit=3", "", 200, &p)
	if len(p.Denials) != 3 || p.NextBeforeID == 0 {
		t.Fatalf("page: %d denials, next %d", len(p.Denials), p.NextBeforeID)
	}
	for _, d := range p.Denials {
		if d.AgentID != "alpha" || d.Permission != "network.fetch" {
			t.Fatalf("filter leaked %+v", d)
		}
	}
	var p2 store.DenialPage
	v.api("GET", fmt.Sprintf("/api/denials?agentId=alpha&permission=network.fetch&limit=3&beforeId=%d", p.NextBeforeID), "", 200, &p2)
	if len(p2.Denials) != 2 || p2.NextBeforeID != 0 || p2.Denials[0].ID >= p.Denials[2].ID {
		t.Fatalf("second page: %+v", p2)
	}
	v.api("GET", "/api/denials?code=permission_not_granted&limit=1000", "", 200, &p)
	if len(p.Denials) != 10 {
		t.Fatalf("by code: %d", len(p.Denials))
	}
	// Search is a substring of what the table shows, case-insensitive.
	v.api("GET", "/api/denials?q=BETA.test/7", "", 200, &p)
	if len(p.Denials) != 1 || p.Denials[0].Context.URL != "https://beta.test/7" {
		t.Fatalf("search: %+v", p.Denials)
	}
	// Tailing: afterId gives what is newer, oldest first.
	last := p.Denials[0].ID
	v.api("GET", fmt.Sprintf("/api/denials?afterId=%d", last), "", 200, &p)
	if len(p.Denials) == 0 || p.Denials[0].ID != last+1 {
		t.Fatalf("tail after %d: %+v", last, p.Denials)
	}
	// Time range.
	v.api("GET", "/api/denials?since=4102444800000", "", 200, &p)
	if len(p.Denials) != 0 {
		t.Fatalf("since 2100: %d", len(p.Denials))
	}
	v.api("GET", "/api/denials?since=2000-01-01T00:00:00Z&until=2100-01-01T00:00:00Z&limit=1000", "", 200, &p)
	if len(p.Denials) != 20 {
		t.Fatalf("RFC 3339 range: %d", len(p.Denials))
	}

	for _, q := range []string{
		"agentid=alpha", // misspelt: must not widen to everything
		"limit=0", "limit=1001", "limit=ten",
		"since=yesterday", "since=-5", "beforeId=-1", "afterId=x",
		"agentId=a&agentId=b",
		"q=" + strings.Repeat("x", 300),
	} {
		t.Run(q[:min(len(q), 24)], func(t *testing.T) {
			status, body, _ := v.do("GET", "/api/denials?"+q, "", bearer(v.token.String()))
			wantRefusal(t, status, body, http.StatusBadRequest, mediator.CodeBadRequest)
		})
	}
}

func TestExportFollowsTheFilters(t *testing.T) {
	v := newTestViewer(t, nil)
	seedDenials(t, v.st, 3, "alpha", "beta")
	// A hostile agent id and reason meant for a spreadsheet.
	if _, err := v.st.LogDenial(context.Background(), mediator.Denial{AgentID: "=cmd", Permission: "network.fetch", Code: mediator.CodeHostNotAllowed,
		Context: mediator.DenialContext{URL: "https://x.test/", Reason: "+SUM(A1)\nline two, \"quoted\""}}); err != nil {
		t.Fatal(err)
	}

	status, body, resp := v.do("GET", "/api/denials/export?format=jsonl&agentId=alpha", "", bearer(v.token.String()))
	if status != 200 || !strings.Contains(resp.Header.Get("Content-Disposition"), "attachment") {
		t.Fatalf("jsonl: %d %v", status, resp.Header)
	}
	lines := strings.Split(strings.TrimSpace(body), "\n")
	if len(lines) != 3 {
		t.Fatalf("jsonl lines %d:\n%s", len(lines), body)
	}
	for _, l := range lines {
		var d mediator.Denial
		if err := json.Unmarshal([]byte(l), &d); err != nil || d.AgentID != "alpha" {
			t.Fatalf("jsonl line %q: %v", l, err)
		}
	}

	status, body, _ = v.do("GET", "/api/denials/export?format=csv", "", bearer(v.token.String()))
	if status != 200 {
		t.Fatalf("csv: %d %s", status, body)
	}
	recs, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil || len(recs) != 8 {
		t.Fatalf("csv: %d records, %v\n%s", len(recs), err, body)
	}
	hostile := recs[1] // newest first
	if hostile[2] != "'=cmd" || !strings.HasPrefix(hostile[6], "'+SUM") {
		t.Errorf("formula cells not defused: %q", hostile)
	}

	status, body, _ = v.do("GET", "/api/denials/export?format=xml", "", bearer(v.token.String()))
	wantRefusal(t, status, body, 400, mediator.CodeBadRequest)
}

// TestCSVExportDefusesEverySplitCell: a spreadsheet whose list separator
// is `;` or tab, or one that ignores quotes, splits a field where a comma
// reader would not, and runs any piece that starts with a formula trigger.
// Hostile text goes into every text column; the export is read as each
// such reader would, and no cell it yields may start with a trigger.
func TestCSVExportDefusesEverySplitCell(t *testing.T) {
	v := newTestViewer(t, nil)
	hostile := []string{
		"http://evil.test/a;=2*21;",
		"a,=1+1", "a\t=1+1", "a;+1", "a; -1", "a;@SUM(A1)", `a;"=1+1"`, `a; "" =1`,
		"x\n=cmd|' /C calc'!A0", "x\r\n=1", "\t\t=1", ";;=1", "=start", "-2+3", "@x", "\rx",
		"a;'=already text", "plain, harmless; text\twith breaks",
	}
	for i, h := range hostile {
		if _, err := v.st.LogDenial(context.Background(), mediator.Denial{AgentID: h, Permission: h, Code: mediator.Code(h),
			Context: mediator.DenialContext{URL: h, Reason: h, Layer: h, Method: h, Details: map[string]string{"n": fmt.Sprint(i)}}}); err != nil {
			t.Fatal(err)
		}
	}
	status, body, _ := v.do("GET", "/api/denials/export?format=csv", "", bearer(v.token.String()))
	if status != 200 {
		t.Fatalf("csv: %d %s", status, body)
	}

	// Every field is quoted: each record line starts and ends with a quote.
	recs, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil || len(recs) != len(hostile)+1 {
		t.Fatalf("csv: %d records, %v\n%s", len(recs), err, body)
	}
	if !strings.HasPrefix(body, `"id","time","agent",`) {
		t.Errorf("the header is not quoted field by field: %.60q", body)
	}
	// The comma reader gets the text back, a quote added where needed
	// (encoding/csv reads a quoted CRLF as LF).
	plain := strings.NewReplacer("'", "", "\r\n", "\n")
	for i, rec := range recs[1:] {
		h := hostile[len(hostile)-1-i] // newest first
		if got := plain.Replace(rec[2]); got != plain.Replace(h) {
			t.Errorf("agent column %q; want %q give or take quotes", rec[2], h)
		}
	}

	// cells splits text as a reader with separator sep that ignores
	// quotes would (line breaks end a cell too), stripping the spaces and
	// quotes such readers strip from a cell's start.
	cells := func(text string, sep rune) []string {
		parts := strings.FieldsFunc(text, func(r rune) bool { return r == sep || r == '\n' || r == '\r' })
		for i, p := range parts {
			parts[i] = strings.TrimLeft(p, ` "`)
		}
		return parts
	}
	for _, sep := range []rune{',', ';', '\t'} {
		t.Run(fmt.Sprintf("reader %q", sep), func(t *testing.T) {
			var pieces []string
			for _, rec := range recs {
				for _, f := range rec { // each field split as this reader would
					pieces = append(pieces, f)
					pieces = append(pieces, cells(f, sep)...)
				}
			}
			pieces = append(pieces, cells(body, sep)...) // the raw file, quotes ignored
			for _, p := range pieces {
				if p != "" && strings.ContainsRune("=+-@\t\r", rune(p[0])) {
					t.Errorf("a cell starts with a formula trigger: %q", p)
				}
			}
		})
	}
}

func TestCSVSafe(t *testing.T) {
	for in, want := range map[string]string{
		"":                          "",
		"plain":                     "plain",
		"https://x.test/a,b;c":      "https://x.test/a,b;c",
		"=1":                        "'=1",
		"http://evil.test/a;=2*21;": "http://evil.test/a;'=2*21;",
		"a, =1":                     "a,' =1",
		`a;"=1"`:                    `a;'"=1"`,
		"a\t\t=1":                   "a\t'\t'=1",
		"x\r\n=1":                   "x\r\n'=1",
		"\r\n":                      "'\r\n",
		"a;'=1":                     "a;'=1",
	} {
		if got := csvSafe(in); got != want {
			t.Errorf("csvSafe(%q) = %q; want %q", in, got, want)
		}
	}
}

func TestExportOfManyPagesIsComplete(t *testing.T) {
	v := newTestViewer(t, nil)
	seedDenials(t, v.st, 1201, "alpha")
	_, body, _ := v.do("GET", "/api/denials/export?format=jsonl", "", bearer(v.token.String()))
	if n := strings.Count(body, "\n"); n != 1201 {
		t.Fatalf("export has %d lines; want 1201", n)
	}
}

func TestAgentsAndRevoke(t *testing.T) {
	v := newTestViewer(t, nil)
	p := mediator.Profile{AgentID: "reader", Permissions: mediator.Permissions{Required: []mediator.Permission{"page.read", "clipboard.write"}}}
	if _, err := v.st.InstallAgent(context.Background(), p, ""); err != nil {
		t.Fatal(err)
	}
	var list struct{ Agents []mediator.AgentRecord }
	v.api("GET", "/api/agents", "", 200, &list)
	if len(list.Agents) != 1 || len(list.Agents[0].Grants) != 2 {
		t.Fatalf("agents: %+v", list)
	}
	var rep struct {
		OK      bool
		Revoked bool
		Agent   mediator.AgentRecord
	}
	v.api("POST", "/api/agents/reader/revoke", `{"permission":"clipboard.write"}`, 200, &rep)
	if !rep.Revoked || len(rep.Agent.Grants) != 1 {
		t.Fatalf("revoke: %+v", rep)
	}
	if d := v.st.Check(context.Background(), "reader", "clipboard.write"); d.Allowed || d.Code != mediator.CodeRevokedByUser {
		t.Fatalf("after revoke: %+v", d)
	}
	tok := v.token.String()
	for _, c := range []struct {
		name, method, path, body string
		status                   int
		code                     mediator.Code
	}{
		{"unknown agent", "POST", "/api/agents/ghost/revoke", `{"permission":"page.read"}`, 404, mediator.CodeUnknownAgent},
		{"unknown permission", "POST", "/api/agents/reader/revoke", `{"permission":"root"}`, 400, mediator.CodeUnknownPermission},
		{"malformed", "POST", "/api/agents/reader/revoke", `{"permission":`, 400, mediator.CodeBadRequest},
		{"extra field", "POST", "/api/agents/reader/revoke", `{"permission":"page.read","all":true}`, 400, mediator.CodeBadRequest},
		{"oversized", "POST", "/api/agents/reader/revoke", `{"permission":"` + strings.Repeat("a", MaxBodyBytes+1) + `"}`, 413, mediator.CodeTooLarge},
		{"bad agent id", "GET", "/api/agents/..%2Fx", "", 404, mediator.CodeUnknownAgent},
		{"no such api", "GET", "/api/nothing", "", 404, mediator.CodeBadRequest},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, body, _ := v.do(c.method, c.path, c.body, bearer(tok))
			wantRefusal(t, status, body, c.status, c.code)
		})
	}
	if d := v.st.Check(context.Background(), "reader", "page.read"); !d.Allowed {
		t.Fatalf("a refused revoke revoked: %+v", d)
	}
}
