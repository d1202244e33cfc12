//go:build wasip1

// Command fetcher fetches each URL of its input (one per line) through the
// host and prints the status and size, or why it was refused.
package main

import (
	"fmt"
	"strings"

	"github.com/agentgate/nmhost/sdk/agent"
)

func main() {
	for _, url := range strings.Fields(string(agent.Input())) {
		resp, err := agent.Fetch(agent.FetchRequest{URL: url})
		if err != nil {
			fmt.Printf("%s: refused: %v\n", url, err)
			continue
		}
		fmt.Printf("%s: %d, %d bytes: %.80s\n", url, resp.Status, len(resp.Body), resp.Body)
	}
}
