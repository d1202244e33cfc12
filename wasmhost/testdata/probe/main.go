// Command probe is the test agent of wasmhost's tests: each input line is
// one command, so one compiled module covers every scenario.
package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/agentgate/nmhost/sdk/agent"
)

func main() {
	for _, line := range strings.Split(strings.TrimSpace(string(agent.Input())), "\n") {
		cmd, arg, _ := strings.Cut(line, " ")
		var err error
		switch cmd {
		case "print":
			fmt.Println(arg)
		case "log":
			err = agent.Log(arg)
		case "fetch":
			var r *agent.FetchResponse
			if r, err = agent.Fetch(agent.FetchRequest{URL: arg}); err == nil {
				fmt.Printf("fetched %d %s\n", r.Status, r.Body)
			}
		case "post":
			var r *agent.FetchResponse
			if r, err = agent.Fetch(agent.FetchRequest{URL: arg, Method: "POST", Body: "x"}); err == nil {
				fmt.Printf("posted %d\n", r.Status)
			}
		case "text":
			var b []byte
			if b, err = agent.PageText(); err == nil {
				fmt.Printf("text %s\n", b)
			}
		case "select":
			var b []byte
			if b, err = agent.QuerySelector(arg); err == nil {
				fmt.Printf("select %s\n", b)
			}
		case "write":
			sel, text, _ := strings.Cut(arg, " ")
			err = agent.SetElementText(sel, text)
		case "clipw":
			err = agent.ClipboardWrite(arg)
		case "clipr":
			var s string
			if s, err = agent.ClipboardRead(); err == nil {
				fmt.Printf("clipboard %q\n", s)
			}
		case "spam":
			n, _ := strconv.Atoi(arg)
			for i := 0; i < n && err == nil; i++ {
				err = agent.Log("spam")
			}
		case "flood":
			for {
				fmt.Print(strings.Repeat("x", 4096))
			}
		case "spin":
			for i := 0; ; i++ {
				if i < 0 {
					fmt.Println(i)
				}
			}
		case "hog":
			var keep [][]byte
			for {
				keep = append(keep, make([]byte, 1<<20))
			}
		case "exit":
			n, _ := strconv.Atoi(arg)
			os.Exit(n)
		case "env":
			fmt.Printf("env %q\n", os.Environ())
		case "version":
			fmt.Printf("abi %d\n", agent.ABIVersion())
		}
		if err != nil {
			fmt.Printf("%s: error %v\n", cmd, err)
		}
	}
}
