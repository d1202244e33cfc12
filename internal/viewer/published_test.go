package viewer

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/mediator"
)

// TestPublishedSessionAPI: the session API's published contract, its
// examples sent verbatim: the settings body with permission_level, the
// workspace as {mode, root_dir}, and the websocket run message with
// session_id and permission_level. Replies carry the published names
// beside the camelCase ones; a member in both spellings is refused and
// changes nothing.
func TestPublishedSessionAPI(t *testing.T) {
	v := newTestViewer(t, nil)
	tok := v.token.String()
	root := filepath.Join(v.dir, "session-workspaces", store.WorkspaceDirName("chat-001"))

	// The published example: set the session to low.
	status, body, _ := v.do("PUT", "/api/sessions/chat-001/settings", `{"settings":{"permission_level":"low"}}`,
		bearer(tok), header("content-type", "application/json"))
	var got struct {
		OK        bool   `json:"ok"`
		SessionID string `json:"session_id"`
		Settings  struct {
			PermissionLevel string `json:"permission_level"`
			Workspace       struct {
				Mode    string `json:"mode"`
				RootDir string `json:"root_dir"`
			} `json:"workspace"`
		} `json:"settings"`
	}
	read := func(status int, body string) {
		t.Helper()
		got.Settings.PermissionLevel = ""
		if err := json.Unmarshal([]byte(body), &got); status != http.StatusOK || err != nil || !got.OK {
			t.Fatalf("%d %s %v", status, body, err)
		}
	}
	read(status, body)
	if got.SessionID != "chat-001" || got.Settings.PermissionLevel != "low" || got.Settings.Workspace.Mode != "session" || got.Settings.Workspace.RootDir != root {
		t.Fatalf("PUT in the published names = %+v", got)
	}
	status, body, _ = v.do("GET", "/api/sessions/chat-001/settings", "", bearer(tok))
	read(status, body)
	if got.Settings.PermissionLevel != "low" || got.Settings.Workspace.RootDir != root {
		t.Fatalf("GET = %+v", got)
	}
	// The workspace as the published shape names it: its own root only.
	status, body, _ = v.do("PUT", "/api/sessions/chat-001/settings", `{"settings":{"workspace":{"mode":"session","root_dir":`+quoteJSON(root)+`}}}`, bearer(tok))
	read(status, body)

	// Validation, as published: low|medium|high; the workspace an object.
	for _, c := range []struct {
		name, body string
		code       mediator.Code
	}{
		{"level outside the three", `{"settings":{"permission_level":"root"}}`, mediator.CodeInvalidLevel},
		{"workspace not an object", `{"settings":{"workspace":"/etc"}}`, mediator.CodeBadRequest},
		{"a root of the client's choosing", `{"settings":{"workspace":{"root_dir":"/etc"}}}`, mediator.CodeBadRequest},
		{"both spellings", `{"settings":{"permission_level":"high","permissionLevel":"low"}}`, mediator.CodeBadRequest},
		{"both spellings of the root", `{"settings":{"workspace":{"root_dir":` + quoteJSON(root) + `,"rootDir":` + quoteJSON(root) + `}}}`, mediator.CodeBadRequest},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, body, _ := v.do("PUT", "/api/sessions/chat-001/settings", c.body, bearer(tok))
			wantRefusal(t, status, body, http.StatusBadRequest, c.code)
			status, body, _ = v.do("GET", "/api/sessions/chat-001/settings", "", bearer(tok))
			read(status, body)
			if got.Settings.PermissionLevel != "low" {
				t.Fatalf("a refused patch changed the level to %s", got.Settings.PermissionLevel)
			}
		})
	}

	// The published run message, verbatim: its names are read, and a run
	// cannot raise the session's level (that takes the settings API).
	c := v.browserWS()
	readWS(t, c, "hello", 5*time.Second)
	for _, m := range []struct {
		name, msg string
		code      mediator.Code
	}{
		{"published", `{"type":"run","session_id":"chat-001","permission_level":"high","input":"..."}`, mediator.CodeSessionLevel},
		{"both spellings of the session", `{"type":"run","session_id":"chat-001","sessionId":"other","input":"..."}`, mediator.CodeBadRequest},
		{"both spellings of the level", `{"type":"run","session_id":"chat-001","permission_level":"low","permissionLevel":"high"}`, mediator.CodeBadRequest},
	} {
		t.Run(m.name, func(t *testing.T) {
			if err := c.WriteMessage(websocket.TextMessage, []byte(m.msg)); err != nil {
				t.Fatal(err)
			}
			e := readWS(t, c, "error", 10*time.Second)
			if e["code"] != string(m.code) {
				t.Fatalf("run %s: %v; want %s", m.msg, e, m.code)
			}
		})
	}
}

func quoteJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
