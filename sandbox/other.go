//go:build !linux

package sandbox

import (
	"context"

	"github.com/agentgate/nmhost/mediator"
)

// Available reports why no program can run here: the sandbox is
// bubblewrap's, on Linux only.
func Available() error {
	return mediator.Errorf(mediator.CodeSandboxUnavailable, "programs run only in a bubblewrap sandbox, on Linux; this host has none")
}

// Run refuses: there is no sandbox on this platform.
func Run(ctx context.Context, cfg Config, argv []string) (Result, error) {
	return Result{}, Available()
}
