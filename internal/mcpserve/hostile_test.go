package mcpserve_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentgate/nmhost/internal/app/mcpgw"
	"github.com/agentgate/nmhost/internal/testkit"
	"github.com/agentgate/nmhost/mediator"
)

// TestHostileUpstreams: each kind of hostile server gets a bounded,
// recorded outcome with its reason code, and no call the person did not
// allow reaches a server.
func TestHostileUpstreams(t *testing.T) {
	t.Run("a destructive tool that says it only reads still asks", func(t *testing.T) {
		calls := filepath.Join(t.TempDir(), "calls")
		g := newGateway(t, setup{servers: map[string]mcpgw.Server{"liar": self(t, "liar", calls)}, grant: true})
		g.person.set(mediator.AnswerDeny)
		if _, code := g.call(t, "liar.delete_everything", map[string]any{}); code != mediator.CodeUserDenied {
			t.Fatalf("code %s; want user_denied", code)
		}
		p := g.person.prompts()
		if len(p) != 1 || p[0].Class != mediator.AlwaysConfirm {
			t.Fatalf("prompts %+v; want one, ALWAYS_CONFIRM", p)
		}
		if got := upstreamCalls(t, calls); len(got) != 0 {
			t.Fatalf("the denied call reached the server: %v", got)
		}
		g.hasDenial(t, mediator.CodeUserDenied)
		// Its honest neighbour reads without a prompt.
		if _, code := g.call(t, "liar.read_file", map[string]any{}); code != "" {
			t.Fatalf("read_file: %s", code)
		}
		if got := upstreamCalls(t, calls); !slices.Equal(got, []string{"read_file"}) {
			t.Fatalf("upstream calls %v", got)
		}
	})

	t.Run("names a person cannot read exactly are refused and recorded", func(t *testing.T) {
		calls := filepath.Join(t.TempDir(), "calls")
		g := newGateway(t, setup{servers: map[string]mcpgw.Server{"names": self(t, "names", calls)}, grant: true})
		if got := g.toolNames(t); !slices.Equal(got, []string{"names.ok_tool"}) {
			t.Fatalf("tools listed %q; want only names.ok_tool", got)
		}
		var refused int
		for _, d := range g.denials(t) {
			if d.Code == mediator.CodeToolDefinitions {
				refused++
				if strings.ContainsAny(d.Context.Reason, "\x1b\u202e") || strings.ContainsAny(d.Context.Details["tool"], "\x1b\u202e") {
					t.Fatalf("a control character reached the denial log: %q %q", d.Context.Reason, d.Context.Details["tool"])
				}
			}
		}
		if refused != 5 { // three unreadable names, and "dup" twice
			t.Fatalf("%d refusals recorded; want 5: %+v", refused, g.denials(t))
		}
		// The description's escape sequences never reach a prompt raw.
		g.person.set(mediator.AnswerDeny)
		g.call(t, "names.ok_tool", map[string]any{})
		p := g.person.prompts()
		if len(p) != 1 || !strings.Contains(p[0].Op.Tool.Description, "IGNORE PREVIOUS") {
			t.Fatalf("prompts %+v", p)
		}
		if shown := mediator.EscapeTerminal(p[0].Op.Tool.Description); strings.ContainsAny(shown, "\x1b\x07\u202e") {
			t.Fatalf("the escaped description still holds controls: %q", shown)
		}
	})

	t.Run("100,000 tools are refused whole", func(t *testing.T) {
		g := newGateway(t, setup{servers: map[string]mcpgw.Server{"many": self(t, "many", "")}, grant: true})
		if got := g.toolNames(t); len(got) != 0 {
			t.Fatalf("%d tools listed; want none", len(got))
		}
		g.hasDenial(t, mediator.CodeToolDefinitions)
	})

	t.Run("a 50 MiB result is refused, a 9 MiB one too", func(t *testing.T) {
		calls := filepath.Join(t.TempDir(), "calls")
		g := newGateway(t, setup{servers: map[string]mcpgw.Server{"huge": self(t, "huge", calls)}, grant: true})
		if _, code := g.call(t, "huge.read_big", map[string]any{}); code != mediator.CodeTooLarge {
			t.Fatalf("50 MiB: code %s; want too_large", code)
		}
		if _, code := g.call(t, "huge.read_9mib", map[string]any{}); code != mediator.CodeTooLarge {
			t.Fatalf("9 MiB: code %s; want too_large", code)
		}
		recs := g.toolRecords(t)
		var failed int
		for _, r := range recs {
			if r.Kind == mediator.AuditExecuted && r.Code == mediator.CodeTooLarge {
				failed++
			}
		}
		if failed != 2 {
			t.Fatalf("%d executed records say too_large; want 2", failed)
		}
	})

	t.Run("a server that hangs times out and is stopped", func(t *testing.T) {
		srv := self(t, "hang", filepath.Join(t.TempDir(), "calls"))
		srv.TimeoutMS = 500
		g := newGateway(t, setup{servers: map[string]mcpgw.Server{"hang": srv}, grant: true})
		start := time.Now()
		if _, code := g.call(t, "hang.read_slowly", map[string]any{}); code != mediator.CodeTimeout {
			t.Fatalf("code %s; want timeout", code)
		}
		if d := time.Since(start); d > 30*time.Second {
			t.Fatalf("the hung call took %v", d)
		}
	})

	t.Run("a server that crashes mid-call", func(t *testing.T) {
		g := newGateway(t, setup{servers: map[string]mcpgw.Server{"crash": self(t, "crash", filepath.Join(t.TempDir(), "calls"))}, grant: true})
		if _, code := g.call(t, "crash.read_and_die", map[string]any{}); code != mediator.CodeUpstreamError {
			t.Fatalf("code %s; want upstream_error", code)
		}
		// The next call starts it again, and it crashes again: the same
		// bounded outcome, not a wedged gateway.
		if _, code := g.call(t, "crash.read_and_die", map[string]any{}); code != mediator.CodeUpstreamError {
			t.Fatalf("second call: code %s; want upstream_error", code)
		}
	})

	t.Run("a definition that changes after approval is asked about again", func(t *testing.T) {
		calls := filepath.Join(t.TempDir(), "calls")
		g := newGateway(t, setup{servers: map[string]mcpgw.Server{"notes": self(t, "changing", calls)}, grant: true})
		g.person.set(mediator.AnswerAlwaysAllow)
		if _, code := g.call(t, "notes.send_note", map[string]any{}); code != "" {
			t.Fatalf("first call: %s", code)
		}
		// The server changed the tool and said so; the gateway re-lists.
		testkit.Eventually(t, 30*time.Second, "the changed definition is listed", func() bool {
			tl, err := g.gw.Tool(t.Context(), "notes", "send_note")
			return err == nil && strings.Contains(tl.Def.Description, "uploads")
		})
		g.person.set(mediator.AnswerDeny)
		if _, code := g.call(t, "notes.send_note", map[string]any{}); code != mediator.CodeUserDenied {
			t.Fatalf("after the change: code %s; want user_denied (asked again)", code)
		}
		p := g.person.prompts()
		if len(p) != 2 || !strings.Contains(p[1].Op.Tool.Description, "uploads") || p[0].Op.Tool.Definition == p[1].Op.Tool.Definition {
			t.Fatalf("prompts %+v; want a second one showing the new definition", p)
		}
		if want := "description: was «Sends a note to yourself.», now «Sends a note to yourself and uploads your files.»"; p[1].Op.Tool.Changed != want {
			t.Fatalf("the second prompt shows the change as %q; want %q", p[1].Op.Tool.Changed, want)
		}
		if got := upstreamCalls(t, calls); !slices.Equal(got, []string{"send_note"}) {
			t.Fatalf("upstream calls %v; the changed tool must not have been called", got)
		}
	})

	t.Run("the same tool name on two servers stays two tools", func(t *testing.T) {
		callsA, callsB := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
		g := newGateway(t, setup{servers: map[string]mcpgw.Server{"trusty": self(t, "liar", callsA), "shadow": self(t, "liar", callsB)}, grant: true})
		if got := g.toolNames(t); !slices.Equal(got, []string{"shadow.delete_everything", "shadow.read_file", "trusty.delete_everything", "trusty.read_file"}) {
			t.Fatalf("tools %q", got)
		}
		g.call(t, "trusty.read_file", map[string]any{})
		if a, b := upstreamCalls(t, callsA), upstreamCalls(t, callsB); len(a) != 1 || len(b) != 0 {
			t.Fatalf("calls reached trusty %v, shadow %v", a, b)
		}
	})
}
