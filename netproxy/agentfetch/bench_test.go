package agentfetch

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/internal/testkit"
	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/netproxy"
)

// allowPrompts answers every prompt with allow-once, so a benchmark measures
// the policy's work and not a person.
type allowPrompts struct{}

func (allowPrompts) Prompt(context.Context, mediator.PromptRequest) (mediator.Answer, error) {
	return mediator.AnswerAllowOnce, nil
}

// BenchmarkFetch2B fetches a 2-byte body from a loopback server: through
// agentfetch and the real policy over a real store ("nmhost"), and with
// plain net/http reading the whole body ("baseline"). The ratio is what
// the mediation costs per fetch.
func BenchmarkFetch2B(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer srv.Close()
	var base float64
	b.Run("baseline", func(b *testing.B) {
		tr := &http.Transport{MaxIdleConnsPerHost: 16}
		defer tr.CloseIdleConnections()
		c := &http.Client{Transport: tr}
		b.ReportAllocs()
		for b.Loop() {
			resp, err := c.Get(srv.URL)
			if err != nil {
				b.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || string(body) != "ok" {
				b.Fatal(err)
			}
		}
		base = testkit.NsPerOp(b)
	})
	b.Run("nmhost", func(b *testing.B) {
		st, err := store.Open(b.TempDir(), store.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		fetcher := netproxy.New(netproxy.Config{})
		defer fetcher.CloseIdleConnections()
		svc, err := New(Config{Store: st, Fetcher: fetcher,
			Authorizer: mediator.NewPolicy(st, mediator.PolicyOptions{Prompter: allowPrompts{}})})
		if err != nil {
			b.Fatal(err)
		}
		p := mediator.Profile{AgentID: "bench", Permissions: mediator.Permissions{Required: []mediator.Permission{mediator.PermNetworkFetch}},
			Capabilities: mediator.Capabilities{NetworkAccess: true, AllowedHosts: []string{strings.TrimPrefix(srv.URL, "http://")}}}
		if err := p.Normalize(); err != nil {
			b.Fatal(err)
		}
		if _, err := st.InstallAgent(context.Background(), p, ""); err != nil {
			b.Fatal(err)
		}
		req := Request{AgentID: "bench", Request: netproxy.Request{URL: srv.URL}}
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			resp, err := svc.Fetch(ctx, req)
			if err != nil || string(resp.Body) != "ok" {
				b.Fatal(err)
			}
			resp.Release()
		}
		if base > 0 {
			b.ReportMetric(testkit.NsPerOp(b)/base, "x-baseline")
		}
	})
}
