package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"golang.org/x/term"

	"github.com/agentgate/nmhost/mediator"
)

// cliPrompter asks on the terminal when the host runs without a browser.
// With stdin not a terminal nobody can answer, so it denies, except for
// the operations pre-answered with --yes-to (for scripts).
type cliPrompter struct {
	mu          sync.Mutex // one question at a time
	in          *bufio.Reader
	out         io.Writer
	interactive bool
	yes         map[string]bool
	// elsewhere asks when there is no terminal (the relay to a browser's
	// prompt window); nil: such a prompt is refused.
	elsewhere mediator.Prompter
}

// newCLIPrompter validates the --yes-to operation names: a typo must not
// silently leave a script waiting for prompts that are then denied.
func newCLIPrompter(stdin io.Reader, stderr io.Writer, yesTo []string) (*cliPrompter, error) {
	p := &cliPrompter{in: bufio.NewReader(stdin), out: stderr, interactive: isTerminal(stdin), yes: map[string]bool{}}
	for _, name := range yesTo {
		if _, known := mediator.RuleFor(mediator.Operation{Name: name}); !known {
			return nil, fmt.Errorf("--yes-to=%s: not an operation (see docs/permissions.md)", name)
		}
		p.yes[name] = true
	}
	return p, nil
}

// isTerminal reports whether r is a terminal a person can answer at: a
// pipe, a file or a character device such as /dev/null is not.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

var terminalAnswers = map[string]mediator.Answer{
	"o": mediator.AnswerAllowOnce, "once": mediator.AnswerAllowOnce,
	"a": mediator.AnswerAlwaysAllow, "always": mediator.AnswerAlwaysAllow,
	"d": mediator.AnswerDeny, "deny": mediator.AnswerDeny, "": mediator.AnswerDeny,
	"b": mediator.AnswerAlwaysBlock, "block": mediator.AnswerAlwaysBlock,
}

// Prompt implements mediator.Prompter.
func (p *cliPrompter) Prompt(ctx context.Context, req mediator.PromptRequest) (mediator.Answer, error) {
	op := req.Op
	if p.yes[op.Name] {
		fmt.Fprintf(p.out, "nmhost: %s %s allowed once by --yes-to\n", op.AgentID, op.Name)
		return mediator.AnswerAllowOnce, nil
	}
	if !p.interactive && p.elsewhere != nil {
		return p.elsewhere.Prompt(ctx, req)
	}
	if !p.interactive {
		return "", mediator.Errorf(mediator.CodeConfirmRequired, "%s needs confirmation and stdin is not a terminal (pre-answer with --yes-to=%s)", op.Name, op.Name)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	target := op.URL
	if target == "" {
		target = op.Selector
	}
	if op.Method != "" {
		target = op.Method + " " + target
	}
	if t := op.Tool; t != nil {
		target = t.Server + "." + t.Tool + " (definition " + t.Definition[:min(12, len(t.Definition))] + ")"
	}
	// What the person answers about is shown escaped: a target or a
	// reason holding an escape sequence or a bidi control could otherwise
	// show them another URL than the one they allow.
	fmt.Fprintf(p.out, "\nAgent %q wants to %s (%s): %s\n", op.AgentID, mediator.EscapeTerminal(op.Name), req.Class, mediator.EscapeTerminal(req.Reason))
	if target != "" {
		fmt.Fprintf(p.out, "  target: %s\n", mediator.EscapeTerminal(target))
	}
	if t := op.Tool; t != nil && t.Description != "" {
		fmt.Fprintf(p.out, "  the server describes it as: %s\n", mediator.EscapeTerminal(mediator.Truncate(t.Description, 300)))
	}
	if t := op.Tool; t != nil && t.Changed != "" {
		// Escaped where it was made (mcpgw.Change).
		fmt.Fprintf(p.out, "  it changed since it was listed before:\n    %s\n", strings.ReplaceAll(t.Changed, "\n", "\n    "))
	}
	if op.TextLength > 0 {
		fmt.Fprintf(p.out, "  text length: %d bytes\n", op.TextLength)
	}
	fmt.Fprintf(p.out, "Allow? [o]nce, [a]lways, [d]eny (default), always [b]lock: ")
	return p.readAnswer(ctx)
}

// readAnswer reads one answer line from the terminal; anything it does
// not know is deny, and no answer before ctx ends is a timeout.
func (p *cliPrompter) readAnswer(ctx context.Context) (mediator.Answer, error) {
	line := make(chan string, 1)
	go func() {
		s, _ := p.in.ReadString('\n')
		line <- s
	}()
	select {
	case s := <-line:
		if a, ok := terminalAnswers[strings.ToLower(strings.TrimSpace(s))]; ok {
			return a, nil
		}
		return mediator.AnswerDeny, nil
	case <-ctx.Done():
		fmt.Fprintln(p.out, "\n(no answer in time: denied)")
		return "", mediator.Errorf(mediator.CodeTimeout, "nobody answered on the terminal")
	}
}
