// Command readbench is the workspace read benchmark's guest: it reads the
// file named by its first argument with os.ReadFile as many times as its
// second says, and prints the bytes it read in all. It imports WASI only.
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Println("usage: readbench FILE COUNT")
		os.Exit(2)
	}
	n, _ := strconv.Atoi(os.Args[2])
	total := 0
	for i := range n {
		if i%8 == 7 {
			// A wasm guest's collector falls behind a loop that only
			// allocates megabytes; collecting here keeps the heap small
			// and costs both mounts the same.
			runtime.GC()
		}
		b, err := os.ReadFile(os.Args[1])
		if err != nil {
			fmt.Println("read:", err)
			os.Exit(1)
		}
		total += len(b)
	}
	fmt.Println(total)
}
