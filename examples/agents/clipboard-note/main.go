//go:build wasip1

// Command clipboard-note puts its input on the clipboard and reads the
// clipboard back (clipboard.write asks; clipboard.read always asks).
package main

import (
	"fmt"

	"github.com/agentgate/nmhost/sdk/agent"
)

func main() {
	if err := agent.ClipboardWrite(string(agent.Input())); err != nil {
		fmt.Println("cannot write the clipboard:", err)
		return
	}
	text, err := agent.ClipboardRead()
	if err != nil {
		fmt.Println("cannot read the clipboard:", err)
		return
	}
	fmt.Printf("clipboard holds %q\n", text)
}
