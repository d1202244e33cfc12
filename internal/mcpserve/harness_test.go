package mcpserve_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentgate/nmhost/internal/app"
	"github.com/agentgate/nmhost/internal/app/mcpgw"
	"github.com/agentgate/nmhost/internal/mcpserve"
	"github.com/agentgate/nmhost/mediator"
)

// answerer is the person, as a test plays them: it answers every prompt
// with answer ("" answers nothing: the prompt fails as unanswered) and
// keeps what each prompt showed.
type answerer struct {
	mu     sync.Mutex
	answer mediator.Answer
	asked  []mediator.PromptRequest
}

func (a *answerer) Prompt(_ context.Context, req mediator.PromptRequest) (mediator.Answer, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, req)
	if a.answer == "" {
		return "", mediator.Errorf(mediator.CodeTimeout, "nobody answered")
	}
	return a.answer, nil
}

func (a *answerer) set(ans mediator.Answer) {
	a.mu.Lock()
	a.answer = ans
	a.mu.Unlock()
}

func (a *answerer) prompts() []mediator.PromptRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.asked)
}

type gateway struct {
	dir    string
	core   *app.App
	gw     *mcpgw.Gateway
	srv    *mcpserve.Server
	client *mcp.ClientSession
	person *answerer
}

// self is a server entry that runs this test binary as the hostile
// upstream mode.
func self(t testing.TB, mode, calls string) mcpgw.Server {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return mcpgw.Server{Command: exe, Env: map[string]string{upstreamEnv: mode, "NMHOST_TEST_CALLS": calls}}
}

type setup struct {
	servers map[string]mcpgw.Server
	admin   string // the admin policy file's JSON, "" none
	grant   bool   // grant the gateway's agent mcp.call
	level   string
}

// newGateway opens a data directory with cfg's servers, the gateway's
// agent installed (and granted when asked), and an MCP client connected.
func newGateway(t testing.TB, s setup) *gateway {
	t.Helper()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(mcpgw.Config{Servers: s.servers})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, mcpgw.ConfigFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
	policy := filepath.Join(t.TempDir(), "policy.json")
	if s.admin != "" {
		if err := os.WriteFile(policy, []byte(s.admin), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	core, err := app.Open(dir, app.Options{AdminPolicyPath: policy, Door: app.Door{Layer: "mcp"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { core.Close(context.Background()) })
	g := &gateway{dir: dir, core: core, person: &answerer{}}
	g.gw, err = core.MCP()
	if err != nil {
		t.Fatal(err)
	}
	if err := core.EnsureGatewayAgent(ctx, app.GatewayAgent); err != nil {
		t.Fatal(err)
	}
	if s.grant {
		if _, err := core.Grant(ctx, app.GatewayAgent, mediator.PermMCPCall); err != nil {
			t.Fatal(err)
		}
	}
	g.srv, err = mcpserve.New(ctx, mcpserve.Options{Core: core, Prompter: g.person, SessionLevel: s.level})
	if err != nil {
		t.Fatal(err)
	}
	ct, st := mcp.NewInMemoryTransports()
	ss, err := g.srv.MCP().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	g.client, err = mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.client.Close() })
	return g
}

// call calls a tool through the gateway and returns the result's text
// and the reason code of a refusal ("" when the call was made).
func (g *gateway) call(t *testing.T, name string, args any) (string, mediator.Code) {
	t.Helper()
	res, err := g.client.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: a protocol error, not a result: %v", name, err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	if !res.IsError {
		return text.String(), ""
	}
	code, _ := res.Meta["nmhost/code"].(string)
	return text.String(), mediator.Code(code)
}

func (g *gateway) toolNames(t *testing.T) []string {
	t.Helper()
	var names []string
	for tool, err := range g.client.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// denials is the denial log's codes for the gateway's agent, oldest first.
func (g *gateway) denials(t *testing.T) []mediator.Denial {
	t.Helper()
	page, err := g.core.Denials().ListDenials(context.Background(), app.DenialFilter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	d := page.Denials
	slices.Reverse(d)
	return d
}

func (g *gateway) hasDenial(t *testing.T, code mediator.Code) mediator.Denial {
	t.Helper()
	for _, d := range g.denials(t) {
		if d.Code == code {
			return d
		}
	}
	t.Fatalf("no denial with code %s in the log: %+v", code, g.denials(t))
	return mediator.Denial{}
}

// toolRecords is the audit trail's records of tool calls.
func (g *gateway) toolRecords(t *testing.T) []mediator.AuditRecord {
	t.Helper()
	page, err := g.core.Audit().ListAudit(context.Background(), 0, 1000, false)
	if err != nil {
		t.Fatal(err)
	}
	var out []mediator.AuditRecord
	for _, r := range page.Records {
		if r.Operation.Name == mediator.OpToolCall {
			out = append(out, r)
		}
	}
	return out
}

// upstreamCalls is what the hostile upstreams were called with.
func upstreamCalls(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}
