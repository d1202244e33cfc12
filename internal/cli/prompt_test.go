package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/agentgate/nmhost/mediator"
)

func TestCLIPrompter(t *testing.T) {
	write := mediator.PromptRequest{Op: mediator.Operation{AgentID: "a", Name: mediator.OpClipboardWrite, TextLength: 3}, Class: mediator.RequiresConfirmation}
	t.Run("no terminal denies", func(t *testing.T) {
		p, err := newCLIPrompter(strings.NewReader("a\n"), &bytes.Buffer{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		// The "a" on stdin must not be read as an answer: a pipe is not a person.
		if _, err := p.Prompt(context.Background(), write); mediator.CodeOf(err) != mediator.CodeConfirmRequired {
			t.Fatalf("got %v; want confirmation_required", err)
		}
	})
	t.Run("yes-to answers exactly that operation", func(t *testing.T) {
		p, err := newCLIPrompter(strings.NewReader(""), &bytes.Buffer{}, []string{mediator.OpClipboardWrite})
		if err != nil {
			t.Fatal(err)
		}
		if a, err := p.Prompt(context.Background(), write); err != nil || a != mediator.AnswerAllowOnce {
			t.Fatalf("got %v %v", a, err)
		}
		read := write
		read.Op.Name = mediator.OpClipboardRead
		if _, err := p.Prompt(context.Background(), read); err == nil {
			t.Fatal("--yes-to for clipboard.write answered clipboard.read")
		}
	})
	t.Run("unknown yes-to refused", func(t *testing.T) {
		for _, bad := range []string{"clipboard", "*", "run", "Clipboard.write", ""} {
			if _, err := newCLIPrompter(strings.NewReader(""), &bytes.Buffer{}, []string{bad}); err == nil {
				t.Errorf("--yes-to=%q accepted", bad)
			}
		}
	})
	for _, c := range []struct {
		typed string
		want  mediator.Answer
	}{
		{"o\n", mediator.AnswerAllowOnce}, {"always\n", mediator.AnswerAlwaysAllow}, {"B\n", mediator.AnswerAlwaysBlock},
		{"\n", mediator.AnswerDeny}, {"yes\n", mediator.AnswerDeny}, {"", mediator.AnswerDeny},
	} {
		t.Run("terminal answer "+strings.TrimSpace(c.typed), func(t *testing.T) {
			var out bytes.Buffer
			p, _ := newCLIPrompter(strings.NewReader(c.typed), &out, nil)
			p.interactive = true // as if stdin were a terminal
			a, err := p.Prompt(context.Background(), write)
			if err != nil || a != c.want {
				t.Fatalf("got %v %v; want %v", a, err, c.want)
			}
			if !strings.Contains(out.String(), "clipboard.write") || !strings.Contains(out.String(), "3 bytes") {
				t.Fatalf("prompt text %q", out.String())
			}
		})
	}
}
