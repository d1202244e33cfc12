// Command memprobe is the memory test agent: each input line writes or
// searches the session's memory, and it prints what happened. It imports
// the restricted API's input and the two memory functions only, so the
// smallest set that links it is the smallest that allows memory.
package main

import (
	"fmt"
	"strconv"
	"strings"
	"unsafe"

	"github.com/agentgate/nmhost/sdk/agent"
)

// The raw imports let a line pass any bytes as the request: the hostile
// requests of the tests.

//go:wasmimport restricted_api memory_write
func rawMemoryWrite(ptr, n uint32) int32

//go:wasmimport restricted_api memory_search
func rawMemorySearch(ptr, n uint32) int32

//go:wasmimport restricted_api result
func rawResult(ptr, n uint32) int32

// raw calls fn with arg's bytes and prints the status and what waits.
func raw(name string, fn func(ptr, n uint32) int32, arg string) {
	b := []byte(arg)
	var p uint32
	if len(b) > 0 {
		p = uint32(uintptr(unsafe.Pointer(&b[0])))
	}
	status := fn(p, uint32(len(b)))
	n := status
	if n < 0 {
		n = -n
	}
	buf := make([]byte, n+1)
	got := rawResult(uint32(uintptr(unsafe.Pointer(&buf[0]))), uint32(n))
	fmt.Printf("%s: status %d: %s\n", name, status, buf[:got])
}

func main() {
	for _, line := range strings.Split(strings.TrimSpace(string(agent.Input())), "\n") {
		cmd, arg, _ := strings.Cut(line, " ")
		switch cmd {
		case "write": // write TAG,TAG TEXT ("-" for no tags)
			tagList, text, _ := strings.Cut(arg, " ")
			var tags []string
			if tagList != "-" {
				tags = strings.Split(tagList, ",")
			}
			id, err := agent.MemoryWrite(text, tags)
			if err != nil {
				fmt.Printf("memory_write: error %v\n", err)
				continue
			}
			fmt.Printf("memory_write: id %d\n", id)
		case "rawwrite":
			raw(cmd, rawMemoryWrite, arg)
		case "rawsearch":
			raw(cmd, rawMemorySearch, arg)
		case "search": // search LIMIT QUERY
			n, query, _ := strings.Cut(arg, " ")
			limit, _ := strconv.Atoi(n)
			hits, err := agent.MemorySearch(query, limit)
			if err != nil {
				fmt.Printf("memory_search: error %v\n", err)
				continue
			}
			fmt.Printf("memory_search: %d results\n", len(hits))
			for _, h := range hits {
				fmt.Printf("hit %d id %d tags %s: %s\n", h.Rank, h.ID, strings.Join(h.Tags, ","), h.Snippet)
			}
		}
	}
}
