package viewer

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/agentgate/nmhost/mediator"
)

// TestPreferencesAPI: the viewer lists remembered answers with their scope
// and end, the allow-and-log digest, and revokes one by id; request
// bodies and queries are read exactly, and the token is required.
func TestPreferencesAPI(t *testing.T) {
	v := newTestViewer(t, nil)
	ctx := context.Background()
	p := mediator.Profile{AgentID: "poster", Permissions: mediator.Permissions{Required: []mediator.Permission{"network.fetch"}}}
	if _, err := v.st.InstallAgent(ctx, p, ""); err != nil {
		t.Fatal(err)
	}
	day, err := v.st.SetPreference(ctx, mediator.Preference{AgentID: "poster", Operation: mediator.OpNetworkFetch, Target: "POST https://a.test:443",
		Answer: mediator.AnswerAllow24h, ExpiresAt: time.Now().Add(24 * time.Hour).UnixMilli()})
	if err != nil {
		t.Fatal(err)
	}
	logged, err := v.st.SetPreference(ctx, mediator.Preference{AgentID: "poster", Operation: mediator.OpNetworkFetch, Target: "PUT https://a.test:443",
		Answer: mediator.AnswerAllowAndLog})
	if err != nil {
		t.Fatal(err)
	}
	v.st.NotePreferenceUse(mediator.PreferenceUse{ID: logged.ID, At: time.Now().UnixMilli(), Logged: true, Target: logged.Target, AuditSeq: 3})

	var list struct {
		OK          bool
		Preferences []mediator.Preference
	}
	v.api("GET", "/api/preferences?agentId=poster", "", 200, &list)
	if len(list.Preferences) != 2 || list.Preferences[0].Scope != mediator.Scope24h || list.Preferences[0].ExpiresAt == 0 ||
		list.Preferences[1].Scope != mediator.ScopeAllowAndLog || list.Preferences[1].Uses != 1 {
		t.Fatalf("list %+v", list)
	}
	var dg struct {
		Digest []struct {
			AgentID, Operation string
			Count              int64
		}
	}
	v.api("GET", "/api/preferences/digest", "", 200, &dg)
	if len(dg.Digest) != 1 || dg.Digest[0].Count != 1 || dg.Digest[0].AgentID != "poster" {
		t.Fatalf("digest %+v", dg)
	}
	tok := v.token.String()
	for _, c := range []struct {
		name, method, path, body string
		status                   int
		code                     mediator.Code
	}{
		{"unknown query parameter", "GET", "/api/preferences?agent=poster", "", 400, mediator.CodeBadRequest},
		{"repeated parameter", "GET", "/api/preferences?agentId=poster&agentId=x", "", 400, mediator.CodeBadRequest},
		{"bad agent id", "GET", "/api/preferences/digest?agentId=..%2Fx", "", 400, mediator.CodeInvalidProfile},
		{"malformed body", "POST", "/api/preferences/revoke", `{"preferenceId":`, 400, mediator.CodeBadRequest},
		{"extra field", "POST", "/api/preferences/revoke", `{"preferenceId":1,"all":true}`, 400, mediator.CodeBadRequest},
		{"duplicate key", "POST", "/api/preferences/revoke", `{"preferenceId":99,"preferenceId":1}`, 400, mediator.CodeBadRequest},
		{"id as a string", "POST", "/api/preferences/revoke", `{"preferenceId":"1"}`, 400, mediator.CodeBadRequest},
		{"no id", "POST", "/api/preferences/revoke", `{}`, 400, mediator.CodeBadRequest},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, body, _ := v.do(c.method, c.path, c.body, bearer(tok))
			wantRefusal(t, status, body, c.status, c.code)
		})
	}
	if status, body, _ := v.do("GET", "/api/preferences", ""); status != 401 {
		t.Fatalf("without the token: %d %s", status, body)
	}
	if ps, _ := v.st.ListPreferences(ctx, ""); len(ps) != 2 {
		t.Fatalf("a refused request revoked: %+v", ps)
	}
	var rv struct {
		OK      bool
		Revoked bool
	}
	v.api("POST", "/api/preferences/revoke", `{"preferenceId":`+strconv.FormatInt(day.ID, 10)+`}`, 200, &rv)
	if !rv.Revoked {
		t.Fatalf("revoke %+v", rv)
	}
	v.api("POST", "/api/preferences/revoke", `{"preferenceId":`+strconv.FormatInt(day.ID, 10)+`}`, 200, &rv)
	if rv.Revoked {
		t.Fatal("revoked twice")
	}
	if ps, _ := v.st.ListPreferences(ctx, ""); len(ps) != 1 || ps[0].ID != logged.ID {
		t.Fatalf("after revoke %+v", ps)
	}
}
