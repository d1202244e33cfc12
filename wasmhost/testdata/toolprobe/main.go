// Command toolprobe is the MCP test agent: each input line "SERVER TOOL
// ARGS-JSON" calls that tool through mcp_call and prints the result or
// the error. It imports input and mcp_call only.
package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentgate/nmhost/sdk/agent"
)

func main() {
	for _, line := range strings.Split(strings.TrimSpace(string(agent.Input())), "\n") {
		f := strings.SplitN(line, " ", 3)
		var args any
		if len(f) == 3 {
			_ = json.Unmarshal([]byte(f[2]), &args)
		}
		out, err := agent.MCPCall(f[0], f[1], args)
		if err != nil {
			fmt.Printf("%s.%s: error %v\n", f[0], f[1], err)
			continue
		}
		fmt.Printf("%s.%s: %s\n", f[0], f[1], out)
	}
}
