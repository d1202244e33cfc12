package shell

import (
	"bytes"
	"context"
	"io"

	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/sandbox"
	"github.com/agentgate/nmhost/workspace"
)

// Programs is what a high session's shell needs to run a command that
// is not built in as a program of the system, in the sandbox (package
// sandbox). A shell without it runs no program at any level: such a
// command is shell_not_allowed, as it always was.
type Programs struct {
	// Hide are host paths the sandbox hides besides the person's
	// credential folders and browser profiles: the host's data directory.
	Hide []string
	// Connect opens the program's connections through the run's proxy
	// (sandbox.ACLConnect over the agent's allowedHosts), each decided
	// and recorded; nil leaves the program without any network.
	Connect sandbox.Connect
	// Limits bound each run; the output's defaults to MaxOutputBytes.
	Limits sandbox.Limits
}

// program runs an allowed program in the sandbox over the workspace,
// with in as its standard input and its output (stdout and stderr) to
// out. A status other than 0 is exit_nonzero, output past the limit
// too_large, a run past its time timeout: each is the command failing,
// on record as its outcome.
func (sh *Shell) program(ctx context.Context, argv []string, in []byte, out io.Writer) error {
	p := sh.Programs
	if p == nil {
		return mediator.Errorf(mediator.CodeSandboxUnavailable, "this shell runs no programs")
	}
	cfg := sandbox.Config{Hide: p.Hide, Limits: p.Limits, Stdin: bytes.NewReader(in)}
	if cfg.Limits.Output <= 0 || cfg.Limits.Output > MaxOutputBytes {
		cfg.Limits.Output = MaxOutputBytes
	}
	if p.Connect != nil {
		proxy, err := sandbox.ServeProxy(p.Connect)
		if err != nil {
			return mediator.Errorf(mediator.CodeInternal, "the program's proxy: %v", err)
		}
		defer proxy.Close()
		cfg.Proxy = proxy.Socket
	}
	var res sandbox.Result
	err := sh.WS.Program(func(dir string) error {
		cfg.Workspace = dir
		var err error
		res, err = sandbox.Run(ctx, cfg, argv)
		return err
	})
	if len(res.Output) > 0 {
		if _, werr := out.Write(res.Output); werr != nil {
			return werr
		}
	}
	name := mediator.Truncate(argv[0], 32)
	switch {
	case res.OutputCut:
		return mediator.Errorf(mediator.CodeTooLarge, "%s printed more than %d bytes and was stopped", name, cfg.Limits.Output)
	case res.TimedOut:
		return mediator.Errorf(mediator.CodeTimeout, "%s ran out of time and was stopped", name)
	case err != nil:
		return err
	case res.Exit != 0:
		return mediator.Errorf(mediator.CodeExitNonZero, "%s exited with status %d", name, res.Exit)
	}
	return nil
}

// callProgram is call for a command that is not built in: its step
// names the program, its command line and its redirects, and is put to
// Decide (a program below high, or without a sandbox, is refused there).
// Its arguments are the program's own: the names it gets are as the
// sandbox shows them (/workspace/... is the workspace), not rewritten.
func (sh *Shell) callProgram(ctx context.Context, c *call, name string, args []string, in []byte, out io.Writer) error {
	c.in, c.out = inWorkspace(c.in), inWorkspace(c.out)
	step := mediator.ShellStep{Command: name, Program: true, Writes: true, Dir: ".", Sandboxed: sandbox.Available() == nil,
		Argv: append([]string{name}, args...)}
	for _, r := range []string{c.in, c.out} {
		if r == "" {
			continue
		}
		if outside(r) {
			// The program reads and writes outside files itself, under
			// the sandbox's rules; a redirect is the workspace's.
			return undecided{mediator.Errorf(mediator.CodePathNotAllowed, "a program's redirect names a file of the workspace; %s is outside it", mediator.Truncate(r, 80))}
		}
		if _, err := workspace.Clean(r); err != nil {
			return undecided{err}
		}
		step.Paths = append(step.Paths, r)
	}
	if sh.Decide == nil {
		return refused{mediator.Errorf(mediator.CodeShellNotAllowed, "this shell has no one to decide its commands, so it runs none")}
	}
	done, err := sh.Decide(ctx, step)
	if err != nil {
		return refused{err}
	}
	err = sh.run(ctx, c, name, args, in, out)
	done(err)
	if enforcedByWorkspace(err) {
		return undecided{err}
	}
	return err
}
