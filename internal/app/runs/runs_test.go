package runs

import (
	"context"
	"strings"
	"testing"

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/internal/storetest"
	"github.com/agentgate/nmhost/internal/testwasm"
	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/wasmhost"
)

// emptyModule is about the smallest module that runs: an empty _start.
var emptyModule = []byte("\x00asm\x01\x00\x00\x00" + "\x01\x04\x01\x60\x00\x00" + "\x03\x02\x01\x00" +
	"\x07\x0a\x01\x06_start\x00\x00" + "\x0a\x04\x01\x02\x00\x0b")

func deps(t *testing.T) Deps {
	t.Helper()
	st, err := store.Open(storetest.Dir(t), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	rt, err := wasmhost.New(context.Background(), wasmhost.Config{CacheDir: testwasm.CompileCache()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	ctx := context.Background()
	sha, err := st.PutModule(ctx, emptyModule)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []mediator.Profile{
		{AgentID: "tiny", PermissionSet: mediator.SetMinimal},
		{AgentID: "py", Runtime: mediator.RuntimePython, PermissionSet: mediator.SetMinimal},
	} {
		if err := p.Normalize(); err != nil {
			t.Fatal(err)
		}
		m := sha
		if p.IsPython() {
			m = ""
		}
		if _, err := st.InstallAgent(ctx, p, m); err != nil {
			t.Fatal(err)
		}
	}
	return Deps{Store: st, Runtime: rt, Authorizer: mediator.NewPolicy(st, mediator.PolicyOptions{})}
}

// TestRunBuildsTheRun: the constructor resolves the agent and its
// session: a run that names none gets a session of its own, gone when
// the run ends; a run given a session keeps it open; a Python agent, an
// unknown one or an id that is not one is refused with its code.
func TestRunBuildsTheRun(t *testing.T) {
	d := deps(t)
	ctx := context.Background()
	out, err := d.Run(ctx, Request{AgentID: "tiny"})
	if err != nil || out.Status != "ok" || !strings.HasPrefix(out.SessionID, "run-") {
		t.Fatalf("a run without a session: %+v %v", out, err)
	}
	if _, err := d.Store.SessionSettings(ctx, out.SessionID); mediator.CodeOf(err) != mediator.CodeUnknownSession {
		t.Fatalf("the run's own session outlived it: %v", err)
	}
	in, err := d.Store.OpenRun(ctx, "", mediator.LevelLow)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err = d.Run(ctx, Request{AgentID: "tiny", Session: &in})
	if err != nil || out.Status != "ok" || out.SessionID != in.Session {
		t.Fatalf("a run in a given session: %+v %v", out, err)
	}
	if _, err := d.Store.SessionSettings(ctx, in.Session); err != nil {
		t.Fatalf("the given session was closed by the run: %v", err)
	}
	for _, c := range []struct {
		agent string
		code  mediator.Code
	}{
		{"py", mediator.CodeWrongRuntime},
		{"ghost", mediator.CodeUnknownAgent},
		{"../x", mediator.CodeInvalidProfile},
	} {
		t.Run(c.agent, func(t *testing.T) {
			if _, err := d.Run(ctx, Request{AgentID: c.agent}); mediator.CodeOf(err) != c.code {
				t.Fatalf("Run = %v; want %s", err, c.code)
			}
		})
	}
}
