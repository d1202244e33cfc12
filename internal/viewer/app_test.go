package viewer

import (
	"testing"

	"github.com/agentgate/nmhost/internal/app"
	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/netproxy"
)

// testApp is the core over a test's store, as nmhost serve opens it.
func testApp(tb testing.TB, st *store.Store) *app.App {
	tb.Helper()
	a, err := app.New(app.Parts{Store: st, Fetcher: netproxy.New(netproxy.Config{}), Door: app.Door{Layer: "gateway"}})
	if err != nil {
		tb.Fatal(err)
	}
	return a
}
