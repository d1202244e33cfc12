package mediator_test

import (
	"fmt"
	"log"

	"github.com/agentgate/nmhost/mediator"
)

// A profile is parsed once into normalised types; the classification table
// then says how each operation it may make is decided.
func Example() {
	profile, err := mediator.ParseProfile([]byte(`{
		"agentId": "summarizer",
		"permissions": {"required": ["page.read"], "optional": ["network.fetch"]},
		"capabilities": {"networkAccess": true, "allowedHosts": ["api.example.com"]}
	}`))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(profile.AgentID, profile.Permissions.Required, profile.Capabilities.DOMAccess)
	for _, name := range []string{mediator.OpPageGetPageText, mediator.OpNetworkFetch, "shell.exec"} {
		rule, known := mediator.RuleFor(mediator.Operation{Name: name, Method: "POST"})
		fmt.Println(name, known, rule.Class)
	}
	fmt.Println(mediator.Decision{}.Allowed, mediator.CodeOf(mediator.Decision{}.Err()))
	// Output:
	// summarizer [page.read] none
	// page.read.getPageText true ALWAYS_SAFE
	// network.fetch true REQUIRES_CONFIRMATION
	// shell.exec false ALWAYS_CONFIRM
	// false internal_error
}
