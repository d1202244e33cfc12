// Command fsprobe is the workspace test agent: each input line reads or
// writes one name, and it prints what happened. It imports the restricted
// API's input only, so any permission set can link it when the set gives
// workspace access.
package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/agentgate/nmhost/sdk/agent"
)

func main() {
	for _, line := range strings.Split(strings.TrimSpace(string(agent.Input())), "\n") {
		cmd, arg, _ := strings.Cut(line, " ")
		switch cmd {
		case "read":
			b, err := os.ReadFile(arg)
			if err != nil {
				fmt.Printf("read %s: error %v\n", arg, err)
				continue
			}
			fmt.Printf("read %s: %q\n", arg, b)
		case "write":
			name, text, _ := strings.Cut(arg, " ")
			if err := os.WriteFile(name, []byte(text), 0o600); err != nil {
				fmt.Printf("write %s: error %v\n", name, err)
				continue
			}
			fmt.Printf("write %s: ok\n", name)
		case "ls":
			ents, err := os.ReadDir(arg)
			if err != nil {
				fmt.Printf("ls %s: error %v\n", arg, err)
				continue
			}
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			fmt.Printf("ls %s: %s\n", arg, strings.Join(names, ","))
		}
	}
}
