//go:build wasip1

// Command page-reader reads the current page: its title, its first heading
// and how many words it has. With the input "shout" it also rewrites the
// heading in capitals (page.write, which asks first).
package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentgate/nmhost/sdk/agent"
)

func main() {
	raw, err := agent.PageText()
	if err != nil {
		fmt.Println("cannot read the page:", err)
		return
	}
	var page struct{ Text, Title, URL string }
	json.Unmarshal(raw, &page)
	fmt.Printf("%q has %d words\n", page.Title, len(strings.Fields(page.Text)))
	raw, err = agent.QuerySelector("h1")
	if err != nil {
		fmt.Println("cannot read the heading:", err)
		return
	}
	var h1 struct {
		Found bool
		Text  string
	}
	json.Unmarshal(raw, &h1)
	if !h1.Found {
		fmt.Println("no heading")
		return
	}
	fmt.Printf("heading: %s\n", h1.Text)
	if strings.TrimSpace(string(agent.Input())) == "shout" {
		if err := agent.SetElementText("h1", strings.ToUpper(h1.Text)); err != nil {
			fmt.Println("cannot change the heading:", err)
			return
		}
		fmt.Println("heading changed")
	}
}
