//go:build wasip1

// Command notifier shows its input as a system notification.
package main

import (
	"fmt"

	"github.com/agentgate/nmhost/sdk/agent"
)

func main() {
	if err := agent.Notify("Agent says", string(agent.Input())); err != nil {
		fmt.Println("cannot notify:", err)
		return
	}
	fmt.Println("notified")
}
