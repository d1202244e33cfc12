package agentfetch

import (
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/internal/storetest"
	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/netproxy"
)

// TestRedirectHopsAreDecidedAgain: after "always allow POST to A" and
// "always block POST to B" (both in allowedHosts), a POST to A that A
// answers with 307 or 308 to B must not deliver the body to B; the audit
// trail names both hops. A 303 turns the hop into a body-less GET, which
// is decided too (and allowed: it is safe).
func TestRedirectHopsAreDecidedAgain(t *testing.T) {
	for _, status := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect, http.StatusSeeOther} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			ctx := context.Background()
			b := newCanary(t, func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				io.WriteString(w, "B got "+r.Method+" "+string(body))
			})
			a := newCanary(t, func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, b.URL+"/steal", status)
			})
			st, err := store.Open(storetest.Dir(t), store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			policy := mediator.NewPolicy(st, mediator.PolicyOptions{})
			svc, err := New(Config{Store: st, Fetcher: netproxy.New(netproxy.Config{}), Authorizer: policy})
			if err != nil {
				t.Fatal(err)
			}
			f := &fixture{st: st, svc: svc}
			f.install(t, "poster", []mediator.Permission{mediator.PermNetworkFetch}, true, hostOf(a.URL), hostOf(b.URL))
			for _, p := range []struct {
				url    string
				answer mediator.Answer
			}{{a.URL, mediator.AnswerAlwaysAllow}, {b.URL, mediator.AnswerAlwaysBlock}} {
				key := mediator.TargetKey(mediator.Operation{Name: mediator.OpNetworkFetch, Method: "POST", URL: p.url + "/"})
				if _, err := st.SetPreference(ctx, mediator.Preference{AgentID: "poster", Operation: mediator.OpNetworkFetch, Target: key, Answer: p.answer}); err != nil {
					t.Fatal(err)
				}
			}
			resp, err := svc.Fetch(ctx, Request{AgentID: "poster", Request: netproxy.Request{URL: a.URL + "/form", Method: "POST", Body: []byte("secret")}})
			page, aerr := st.ListAudit(ctx, 0, 100, false)
			if aerr != nil {
				t.Fatal(aerr)
			}
			var decisions []mediator.AuditRecord
			for _, r := range page.Records {
				if r.Kind == mediator.AuditDecision {
					decisions = append(decisions, r)
				}
			}
			if len(decisions) != 2 || decisions[0].Operation.URL != a.URL+"/form" || decisions[1].Operation.URL != b.URL+"/steal" || decisions[1].Operation.Hop != 1 {
				t.Fatalf("decisions in the audit trail: %+v", decisions)
			}
			if status == http.StatusSeeOther {
				// The hop is a GET without the body: safe, decided, allowed.
				if err != nil || string(resp.Body) != "B got GET " || !decisions[1].Allowed || decisions[1].Operation.Method != "GET" {
					t.Fatalf("303: %v %+v %+v", err, resp, decisions[1])
				}
				return
			}
			if mediator.CodeOf(err) != mediator.CodeBlockedByUser {
				t.Fatalf("POST redirected to B: %v; want blocked_by_user", err)
			}
			if n := b.Hits.Load(); n != 0 {
				t.Fatalf("B was reached %d times", n)
			}
			if decisions[1].Allowed || decisions[1].Code != mediator.CodeBlockedByUser || decisions[1].Operation.TextLength != len("secret") {
				t.Fatalf("hop decision %+v", decisions[1])
			}
			if rep, err := st.VerifyAudit(ctx); err != nil || !rep.OK {
				t.Fatalf("verify %+v %v", rep, err)
			}
		})
	}
}

// TestRedirectToDeniedEntry: an installed profile's deny entry refuses a
// redirect hop that its range entry would allow; the hop is refused before
// anything reaches the canary, and the refusal is on record.
func TestRedirectToDeniedEntry(t *testing.T) {
	ctx := context.Background()
	b := newCanary(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "B") })
	a := newCanary(t, func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, b.URL+"/steal", http.StatusFound) })
	st, err := store.Open(storetest.Dir(t), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	svc, err := New(Config{Store: st, Fetcher: netproxy.New(netproxy.Config{}), Authorizer: mediator.NewPolicy(st, mediator.PolicyOptions{})})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{st: st, svc: svc}
	f.install(t, "ranged", []mediator.Permission{mediator.PermNetworkFetch}, true, "http://127.0.0.0/8", "!"+hostOf(b.URL))
	_, err = svc.Fetch(ctx, Request{AgentID: "ranged", Request: netproxy.Request{URL: a.URL + "/"}})
	if mediator.CodeOf(err) != mediator.CodeHostNotAllowed {
		t.Fatalf("err %v, want %s", err, mediator.CodeHostNotAllowed)
	}
	if a.Hits.Load() != 1 || b.Hits.Load() != 0 {
		t.Fatalf("A hits %d (want 1), B hits %d (want 0)", a.Hits.Load(), b.Hits.Load())
	}
	page, err := st.ListDenials(ctx, store.DenialFilter{AgentID: "ranged"})
	if err != nil || len(page.Denials) != 1 || page.Denials[0].Code != mediator.CodeHostNotAllowed {
		t.Fatalf("denials %+v %v", page, err)
	}
}
