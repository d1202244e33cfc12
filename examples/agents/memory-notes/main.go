//go:build wasip1

// Command memory-notes keeps notes in its session's memory: an input
// "remember TEXT" writes TEXT as an entry (memory_write needs a high
// session), any other input searches the memory for its words
// (memory_search needs a medium one) and prints the best five.
package main

import (
	"fmt"
	"strings"

	"github.com/agentgate/nmhost/sdk/agent"
)

func main() {
	in := strings.TrimSpace(string(agent.Input()))
	if text, ok := strings.CutPrefix(in, "remember "); ok {
		id, err := agent.MemoryWrite(text, []string{"note"})
		if err != nil {
			fmt.Println("memory_write:", err)
			return
		}
		fmt.Printf("remembered as entry %d\n", id)
		return
	}
	hits, err := agent.MemorySearch(in, 5)
	if err != nil {
		fmt.Println("memory_search:", err)
		return
	}
	fmt.Printf("%d notes match %q\n", len(hits), in)
	for _, h := range hits {
		fmt.Printf("%d. %s\n", h.Rank, h.Snippet)
	}
}
