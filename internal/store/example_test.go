package store_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/mediator"
)

func Example() {
	dir, err := os.MkdirTemp("", "nmhost-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	// The caller resolves NMHOST_DATA_DIR or the per-user directory.
	st, err := store.Open(dir, store.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()

	profile, err := mediator.ParseProfile([]byte(`{
		"agentId": "summarizer",
		"permissions": {"required": ["page.read"], "optional": ["network.fetch"]},
		"capabilities": {"networkAccess": true, "allowedHosts": ["api.example.com"]}
	}`))
	if err != nil {
		log.Fatal(err)
	}
	rec, err := st.InstallAgent(ctx, profile, "")
	if err != nil {
		log.Fatal(err)
	}
	for _, g := range rec.Grants {
		fmt.Println("granted:", g.Permission, "by", g.Source)
	}

	for _, perm := range []mediator.Permission{"page.read", "network.fetch", "run"} {
		d := st.Check(ctx, "summarizer", perm)
		fmt.Println(perm, d.Allowed, d.Code)
	}
	fmt.Println(st.Check(ctx, "stranger", "page.read").Code)

	if _, err := st.Grant(ctx, "summarizer", mediator.PermNetworkFetch); err != nil {
		log.Fatal(err)
	}
	fmt.Println("after grant:", st.Check(ctx, "summarizer", mediator.PermNetworkFetch).Allowed)
	// Output:
	// granted: page.read by install
	// page.read true allowed
	// network.fetch false permission_not_granted
	// run false unknown_permission
	// unknown_agent
	// after grant: true
}
