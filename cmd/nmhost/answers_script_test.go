package main

import (
	"context"
	"time"

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/mediator"
	"github.com/rogpeppe/go-internal/testscript"
)

// seedAnswers is the script command `seed-answers`: it installs agent
// fetcher (code aaaa…) and stores one answer of each scope, as prompts
// would have: a script cannot answer a prompt. The fifth, a day's answer
// whose day is over, must never be listed.
func seedAnswers(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: seed-answers")
	}
	ctx := context.Background()
	st, err := store.Open(ts.Getenv("NMHOST_DATA_DIR"), store.Options{})
	ts.Check(err)
	defer st.Close()
	prof := mediator.Profile{AgentID: "fetcher", Permissions: mediator.Permissions{Required: []mediator.Permission{mediator.PermNetworkFetch, mediator.PermClipboardWrite}},
		Capabilities: mediator.Capabilities{NetworkAccess: true, AllowedHosts: []string{"api.example.com"}}}
	ts.Check(prof.Normalize())
	module := "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	_, err = st.InstallAgent(ctx, prof, module)
	ts.Check(err)
	now := time.Now()
	for _, p := range []mediator.Preference{
		{Operation: mediator.OpNetworkFetch, Target: "POST https://api.example.com:443", Answer: mediator.AnswerAlwaysAllow},
		{Operation: mediator.OpNetworkFetch, Target: "DELETE https://api.example.com:443", Answer: mediator.AnswerAllow24h, ExpiresAt: now.Add(24 * time.Hour).UnixMilli()},
		{Operation: mediator.OpClipboardWrite, Answer: mediator.AnswerAllowSession, SessionID: "s1"},
		{Operation: mediator.OpNetworkFetch, Target: "PUT https://api.example.com:443", Answer: mediator.AnswerAllowAndLog},
		{Operation: mediator.OpNetworkFetch, Target: "PATCH https://api.example.com:443", Answer: mediator.AnswerAllow24h, ExpiresAt: now.Add(-time.Hour).UnixMilli()},
	} {
		p.AgentID, p.ModuleSHA256 = "fetcher", module
		_, err := st.SetPreference(ctx, p)
		ts.Check(err)
	}
	// The allow-and-log answer (id 4) decided twice.
	st.NotePreferenceUse(mediator.PreferenceUse{ID: 4, At: now.UnixMilli(), Logged: true, Target: "PUT https://api.example.com:443"})
	st.NotePreferenceUse(mediator.PreferenceUse{ID: 4, At: now.UnixMilli(), Logged: true, Target: "PUT https://api.example.com:443"})
}
