package mediator_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/agentgate/nmhost/mediator"
)

func Example() {
	dir, err := os.MkdirTemp("", "nmhost-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	// The caller resolves NMHOST_DATA_DIR or the per-user directory.
	store, err := mediator.Open(dir, mediator.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()

	profile, err := mediator.ParseProfile([]byte(`{
		"agentId": "summarizer",
		"permissions": {"required": ["page.read"], "optional": ["network.fetch"]},
		"capabilities": {"networkAccess": true, "allowedHosts": ["api.example.com"]}
	}`))
	if err != nil {
		log.Fatal(err)
	}
	rec, err := store.InstallAgent(ctx, profile, "")
	if err != nil {
		log.Fatal(err)
	}
	for _, g := range rec.Grants {
		fmt.Println("granted:", g.Permission, "by", g.Source)
	}

	for _, perm := range []mediator.Permission{"page.read", "network.fetch", "run"} {
		d := store.Check(ctx, "summarizer", perm)
		fmt.Println(perm, d.Allowed, d.Code)
	}
	fmt.Println(store.Check(ctx, "stranger", "page.read").Code)

	if _, err := store.Grant(ctx, "summarizer", mediator.PermNetworkFetch); err != nil {
		log.Fatal(err)
	}
	fmt.Println("after grant:", store.Check(ctx, "summarizer", mediator.PermNetworkFetch).Allowed)
	// Output:
	// granted: page.read by install
	// page.read true allowed
	// network.fetch false permission_not_granted
	// run false unknown_permission
	// unknown_agent
	// after grant: true
}
