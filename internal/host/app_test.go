package host

import (
	"testing"

	"github.com/agentgate/nmhost/internal/app"
	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/netproxy"
)

// testApp is the core over a test's store and fetcher, as host mode
// opens it, with the machine's admin policy admin.
func testApp(tb testing.TB, st *store.Store, fetcher *netproxy.Fetcher, admin mediator.AdminPolicy) *app.App {
	tb.Helper()
	if fetcher == nil {
		fetcher = netproxy.New(netproxy.Config{})
	}
	a, err := app.New(app.Parts{Store: st, Fetcher: fetcher, Admin: admin, Door: app.Door{Layer: "host", Origin: testOrigin}})
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

// withAdmin serves under the machine's admin policy p.
func withAdmin(tb testing.TB, p mediator.AdminPolicy) func(*Options) {
	return func(o *Options) { o.App = testApp(tb, o.App.Store(), o.App.Fetcher(), p) }
}
