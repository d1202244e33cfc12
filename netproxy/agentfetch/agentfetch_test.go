package agentfetch

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/internal/storetest"
	"github.com/agentgate/nmhost/internal/testkit"
	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/netproxy"
)

// recordingAuthorizer allows or denies every operation and remembers what it
// was asked and what each operation's outcome was.
type recordingAuthorizer struct {
	deny     mediator.Code // "" allows
	mu       sync.Mutex
	asked    []mediator.Operation
	outcomes []error
}

func (a *recordingAuthorizer) Authorize(_ context.Context, op mediator.Operation) (func(error), error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, op)
	if a.deny != "" {
		return nil, mediator.Errorf(a.deny, "test authorizer denies %s", op.Name)
	}
	return func(err error) {
		a.mu.Lock()
		a.outcomes = append(a.outcomes, err)
		a.mu.Unlock()
	}, nil
}

// canary is the shared loopback canary (testkit.Canary).
type canary = testkit.Canary

func newCanary(t *testing.T, h http.HandlerFunc) *canary { return testkit.NewCanary(t, h) }

func hostOf(u string) string { return strings.TrimPrefix(u, "http://") }

type fixture struct {
	st   *store.Store
	auth *recordingAuthorizer
	svc  *Service
}

func newFixture(t *testing.T, deny mediator.Code) *fixture {
	t.Helper()
	st, err := store.Open(storetest.Dir(t), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	auth := &recordingAuthorizer{deny: deny}
	svc, err := New(Config{Store: st, Fetcher: netproxy.New(netproxy.Config{}), Authorizer: auth})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{st, auth, svc}
}

func (f *fixture) install(t *testing.T, id string, perms []mediator.Permission, network bool, hosts ...string) {
	t.Helper()
	p := mediator.Profile{AgentID: id, Permissions: mediator.Permissions{Required: perms},
		Capabilities: mediator.Capabilities{NetworkAccess: network, AllowedHosts: hosts, ExecutionTimeout: 3000}}
	if err := p.Normalize(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.InstallAgent(context.Background(), p, ""); err != nil {
		t.Fatal(err)
	}
}

func TestNewRefusesAnUnmediatedService(t *testing.T) {
	st, err := store.Open(storetest.Dir(t), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := New(Config{Store: st, Fetcher: netproxy.New(netproxy.Config{})}); err == nil {
		t.Fatal("a Service without an Authorizer was built")
	}
}

// TestChecksComeBeforeThePolicy feeds requests that fail each check in turn:
// each gets its code, a denial record, no question to the Authorizer (so no
// prompt for a host the user never allowed) and no hit on the target.
func TestChecksComeBeforeThePolicy(t *testing.T) {
	target := newCanary(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "reached") })
	f := newFixture(t, "")
	fetch := []mediator.Permission{mediator.PermNetworkFetch}
	f.install(t, "no-grant", nil, true, hostOf(target.URL))
	f.install(t, "no-network", fetch, false, hostOf(target.URL))
	f.install(t, "elsewhere", fetch, true, "example.com")
	f.install(t, "named", fetch, true, "localhost.example")
	f.install(t, "revoked", fetch, true, hostOf(target.URL))
	if _, err := f.st.Revoke(context.Background(), "revoked", mediator.PermNetworkFetch); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, agent, url string
		req              netproxy.Request
		want             mediator.Code
		by               string // the decidedBy of the denial's audit record
	}{
		{"bad agent id", "../../etc", target.URL, netproxy.Request{}, mediator.CodeUnknownAgent, "agent"},
		{"unknown agent", "ghost", target.URL, netproxy.Request{}, mediator.CodeUnknownAgent, "agent"},
		{"not granted", "no-grant", target.URL, netproxy.Request{}, mediator.CodePermissionNotGranted, "grant:network.fetch"},
		{"revoked", "revoked", target.URL, netproxy.Request{}, mediator.CodeRevokedByUser, "grant:network.fetch"},
		{"body on GET", "elsewhere", target.URL, netproxy.Request{Body: []byte("x")}, mediator.CodeBodyNotAllowed, "request:fetch"},
		{"network disabled", "no-network", target.URL, netproxy.Request{}, mediator.CodeNetworkDisabled, "capability:networkAccess"},
		{"host not listed", "elsewhere", target.URL, netproxy.Request{}, mediator.CodeHostNotAllowed, "acl:allowedHosts"},
		// The loopback target spelt as a decimal integer: refused before DNS.
		{"non-canonical host", "elsewhere", "http://2130706433/", netproxy.Request{}, mediator.CodeNonCanonicalHost, "acl:allowedHosts"},
		{"scheme", "elsewhere", "file:///etc/passwd", netproxy.Request{}, mediator.CodeSchemeNotAllowed, "acl:allowedHosts"},
		{"userinfo", "elsewhere", "http://example.com@" + hostOf(target.URL) + "/", netproxy.Request{}, mediator.CodeInvalidURL, "acl:allowedHosts"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			c.req.URL = c.url
			_, err := f.svc.Fetch(ctx, Request{AgentID: c.agent, Request: c.req})
			if got := mediator.CodeOf(err); got != c.want {
				t.Fatalf("code %s (%v); want %s", got, err, c.want)
			}
			page, lerr := f.st.ListDenials(ctx, store.DenialFilter{Code: c.want, Limit: 1})
			if lerr != nil || len(page.Denials) == 0 {
				t.Fatalf("no %s denial recorded: %v", c.want, lerr)
			}
			// The denial names the audit record of its decision, which
			// carries the same code, agent, operation and rule.
			d := page.Denials[0]
			if d.AuditSeq == 0 {
				t.Fatalf("denial %+v names no audit record", d)
			}
			a, aerr := f.st.ListAudit(ctx, d.AuditSeq-1, 1, false)
			if aerr != nil || len(a.Records) != 1 {
				t.Fatalf("audit record %d: %+v %v", d.AuditSeq, a, aerr)
			}
			r := a.Records[0]
			if r.Seq != d.AuditSeq || r.Kind != mediator.AuditDecision || r.Allowed || r.Code != c.want || r.DecidedBy != c.by ||
				r.Operation.Name != mediator.OpNetworkFetch || r.Operation.AgentID != d.AgentID || r.Operation.Permission != mediator.PermNetworkFetch || r.Reason == "" {
				t.Fatalf("audit record %+v; want a refused %s decision by %s for %s", r, c.want, c.by, d.AgentID)
			}
		})
	}
	if rep, err := f.st.VerifyAudit(context.Background()); err != nil || !rep.OK || rep.Records != int64(len(cases)) {
		t.Errorf("audit verify %+v %v; want %d intact records", rep, err, len(cases))
	}
	if len(f.auth.asked) != 0 {
		t.Errorf("the Authorizer was asked about %d refused requests", len(f.auth.asked))
	}
	if n := target.Hits.Load(); n != 0 {
		t.Errorf("target hit %d times by refused requests", n)
	}
}

func TestAuthorizerSeesTheCanonicalTargetAndTheOutcome(t *testing.T) {
	target := newCanary(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") })
	f := newFixture(t, "")
	f.install(t, "ok", []mediator.Permission{mediator.PermNetworkFetch}, true, hostOf(target.URL))
	resp, err := f.svc.Fetch(context.Background(), Request{AgentID: "ok", SessionLevel: "high",
		Request: netproxy.Request{URL: target.URL + "/x?q=1", Method: "post", Body: []byte("abc")}})
	if err != nil || string(resp.Body) != "hello" {
		t.Fatalf("fetch: %v %+v", err, resp)
	}
	if len(f.auth.asked) != 1 || len(f.auth.outcomes) != 1 || f.auth.outcomes[0] != nil {
		t.Fatalf("asked %d outcomes %v; want one successful operation", len(f.auth.asked), f.auth.outcomes)
	}
	op := f.auth.asked[0]
	want := mediator.Operation{AgentID: "ok", Permission: mediator.PermNetworkFetch, Name: mediator.OpNetworkFetch,
		Method: "POST", URL: target.URL + "/x?q=1", Host: "127.0.0.1", TextLength: 3, SessionLevel: "high"}
	if op != want {
		t.Fatalf("operation %+v\nwant      %+v", op, want)
	}
}

func TestAuthorizerDenialStopsTheRequest(t *testing.T) {
	target := newCanary(t, func(w http.ResponseWriter, r *http.Request) {})
	f := newFixture(t, mediator.CodeUserDenied)
	f.install(t, "ok", []mediator.Permission{mediator.PermNetworkFetch}, true, hostOf(target.URL))
	_, err := f.svc.Fetch(context.Background(), Request{AgentID: "ok", Request: netproxy.Request{URL: target.URL}})
	if mediator.CodeOf(err) != mediator.CodeUserDenied {
		t.Fatalf("code %s; want user_denied", mediator.CodeOf(err))
	}
	if n := target.Hits.Load(); n != 0 {
		t.Fatalf("target hit %d times after the Authorizer denied", n)
	}
}

// TestRedirectToAnUnlistedHostIsDeniedAndRecorded: the policy allowed the
// first URL; the hop to a host the agent may not reach is refused, recorded,
// and reported to the Authorizer as the operation's outcome.
func TestRedirectToAnUnlistedHostIsDeniedAndRecorded(t *testing.T) {
	forbidden := newCanary(t, func(w http.ResponseWriter, r *http.Request) {})
	allowed := newCanary(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://localhost:"+forbidden.URL[strings.LastIndex(forbidden.URL, ":")+1:]+"/", http.StatusFound)
	})
	f := newFixture(t, "")
	f.install(t, "ok", []mediator.Permission{mediator.PermNetworkFetch}, true, hostOf(allowed.URL))
	_, err := f.svc.Fetch(context.Background(), Request{AgentID: "ok", Request: netproxy.Request{URL: allowed.URL}})
	if mediator.CodeOf(err) != mediator.CodeHostNotAllowed {
		t.Fatalf("code %s (%v); want host_not_allowed", mediator.CodeOf(err), err)
	}
	if forbidden.Hits.Load() != 0 {
		t.Fatal("the redirect target was reached")
	}
	if len(f.auth.outcomes) != 1 || mediator.CodeOf(f.auth.outcomes[0]) != mediator.CodeHostNotAllowed {
		t.Fatalf("outcomes %v; want the redirect denial", f.auth.outcomes)
	}
	page, _ := f.st.ListDenials(context.Background(), store.DenialFilter{AgentID: "ok"})
	if len(page.Denials) != 1 || !strings.HasPrefix(page.Denials[0].Context.URL, "http://localhost:") {
		t.Fatalf("denials %+v; want one for the redirect hop", page.Denials)
	}
}
