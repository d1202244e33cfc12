//go:build wasip1

// Command notes keeps notes in its session's workspace, which it sees at
// /workspace: "write NAME TEXT" writes notes/NAME, "read NAME" prints it,
// "list" names them. A second run in the same session reads what the
// first wrote; a run in another session has another workspace and does
// not see it. It imports no restricted API function but its input: the
// files are plain os calls, which the host links only because the
// profile's permission set (filesystem) gives read-write workspace access.
package main

import (
	"fmt"
	"os"
	"path"
	"strings"

	"github.com/agentgate/nmhost/sdk/agent"
)

const dir = "/workspace/notes"

func main() {
	cmd, arg, _ := strings.Cut(strings.TrimSpace(string(agent.Input())), " ")
	switch cmd {
	case "write":
		name, text, _ := strings.Cut(arg, " ")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			fail("mkdir", err)
		}
		if err := os.WriteFile(path.Join(dir, name), []byte(text), 0o600); err != nil {
			fail("write "+name, err)
		}
		fmt.Printf("wrote %s (%d bytes)\n", name, len(text))
	case "read":
		b, err := os.ReadFile(path.Join(dir, arg))
		if err != nil {
			fail("read "+arg, err)
		}
		fmt.Printf("%s: %s\n", arg, b)
	case "list":
		ents, err := os.ReadDir(dir)
		if err != nil && !os.IsNotExist(err) {
			fail("list", err)
		}
		fmt.Printf("%d notes\n", len(ents))
		for _, e := range ents {
			fmt.Println(e.Name())
		}
	default:
		fmt.Println(`usage: "write NAME TEXT", "read NAME" or "list"`)
		os.Exit(2)
	}
}

func fail(what string, err error) {
	fmt.Printf("%s: no such note or cannot: %v\n", what, err)
	os.Exit(1)
}
