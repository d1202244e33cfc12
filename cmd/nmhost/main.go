// Command nmhost is the native-messaging host; see internal/cli.
package main

import (
	"os"

	"github.com/agentgate/nmhost/internal/cli"
)

func main() {
	os.Exit(cli.Main(cli.Env{
		Args: os.Args[1:], Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv,
	}))
}
