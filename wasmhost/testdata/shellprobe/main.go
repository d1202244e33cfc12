// Command shellprobe is the shell test agent: its input is a JSON list of
// command lines; it runs each through the restricted API's shell and
// prints one JSON line per command line: what it printed, or the code of
// its refusal.
package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentgate/nmhost/sdk/agent"
)

type outcome struct {
	Line   string `json:"line"`
	Output string `json:"output"`
	Code   string `json:"code,omitempty"`
}

func main() {
	var lines []string
	if err := json.Unmarshal(agent.Input(), &lines); err != nil {
		fmt.Println("bad input:", err)
		return
	}
	for _, line := range lines {
		o := outcome{Line: line}
		out, err := agent.Shell(line)
		o.Output = out
		var e *agent.Error
		if errors.As(err, &e) {
			o.Code = e.Code
		} else if err != nil {
			o.Code = "guest: " + err.Error()
		}
		b, _ := json.Marshal(o)
		fmt.Println(string(b))
	}
}
