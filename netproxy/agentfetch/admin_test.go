package agentfetch

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/internal/storetest"
	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/netproxy"
)

// TestAdminDeniedHostsWinOverTheProfile: a host the administrator denies
// is refused with admin_policy though the agent's profile lists it, and a
// redirect from a host the profile lists to it is refused too; the canary
// behind it is never reached, and each refusal is on record.
func TestAdminDeniedHostsWinOverTheProfile(t *testing.T) {
	ctx := context.Background()
	denied := newCanary(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "secret") })
	front := newCanary(t, func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, denied.URL+"/x", http.StatusFound) })
	st, err := store.Open(storetest.Dir(t), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	admin := mediator.NewAdmin(mediator.AdminPolicy{DeniedHosts: []string{hostOf(denied.URL)}, Source: "admin file /etc/nmhost/policy.json"})
	svc, err := New(Config{Store: st, Fetcher: netproxy.New(netproxy.Config{}), Authorizer: mediator.NewPolicy(st, mediator.PolicyOptions{}),
		Admin: func() mediator.Admin { return admin }})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{st: st, svc: svc}
	f.install(t, "lister", []mediator.Permission{mediator.PermNetworkFetch}, true, hostOf(front.URL), hostOf(denied.URL))

	_, err = svc.Fetch(ctx, Request{AgentID: "lister", Request: netproxy.Request{URL: denied.URL + "/direct"}})
	if mediator.CodeOf(err) != mediator.CodeAdminPolicy || !strings.Contains(mediator.MessageOf(err), "/etc/nmhost/policy.json") {
		t.Fatalf("a denied host the profile lists: %v", err)
	}
	if _, err := svc.Fetch(ctx, Request{AgentID: "lister", Request: netproxy.Request{URL: front.URL + "/go"}}); err == nil {
		t.Fatal("a redirect to the denied host was followed")
	}
	if n := denied.Hits.Load(); n != 0 {
		t.Fatalf("the denied host was reached %d times", n)
	}
	page, err := st.ListDenials(ctx, store.DenialFilter{AgentID: "lister"})
	if err != nil || len(page.Denials) != 2 {
		t.Fatalf("denials %+v %v", page, err)
	}
	for _, d := range page.Denials {
		if d.AuditSeq == 0 {
			t.Fatalf("a denial without its audit record: %+v", d)
		}
	}
	if by := page.Denials[1].Context.Details["decidedBy"]; by != "admin:deniedHosts@admin_file_/etc/nmhost/policy.json" {
		t.Fatalf("the direct fetch was decided by %q", by)
	}
}
