package mcpserve_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentgate/nmhost/internal/app/mcpgw"
	"github.com/agentgate/nmhost/internal/mcpserve"
	"github.com/agentgate/nmhost/internal/testkit"
)

// BenchmarkToolCall: one tools/call round trip of a read through the
// gateway (decided by the core, its record written, forwarded) beside the
// same call made straight to the same upstream, over stdio and over
// Streamable HTTP. The gateway's side has one more hop than the baseline:
// the client's to the gateway, over the same transport.
func BenchmarkToolCall(b *testing.B) {
	call := func(b *testing.B, cs *mcp.ClientSession, name string) {
		b.Helper()
		args := map[string]any{"message": "hi"}
		b.ReportAllocs()
		for b.Loop() {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
			if err != nil || res.IsError {
				b.Fatalf("%s: %+v %v", name, res, err)
			}
		}
	}
	b.Run("stdio", func(b *testing.B) {
		var base float64
		b.Run("baseline", func(b *testing.B) {
			exe, _ := os.Executable()
			cmd := exec.Command(exe)
			cmd.Env = append(os.Environ(), upstreamEnv+"=echo")
			cs := connectClient(b, &mcp.CommandTransport{Command: cmd})
			call(b, cs, "read_echo")
			base = testkit.NsPerOp(b)
		})
		b.Run("nmhost", func(b *testing.B) {
			g := benchGateway(b, self(b, "echo", ""))
			cr, sw, _ := os.Pipe()
			sr, cw, _ := os.Pipe()
			go g.srv.ServeStdio(context.Background(), sr, sw)
			cs := connectClient(b, &mcp.IOTransport{Reader: cr, Writer: cw})
			call(b, cs, "echo.read_echo")
			b.ReportMetric(testkit.NsPerOp(b)/base, "x-baseline")
		})
	})
	b.Run("http", func(b *testing.B) {
		up := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1"}, nil)
		addEcho(up)
		upSrv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
		b.Cleanup(upSrv.Close)
		var base float64
		b.Run("baseline", func(b *testing.B) {
			cs := connectClient(b, &mcp.StreamableClientTransport{Endpoint: upSrv.URL})
			call(b, cs, "read_echo")
			base = testkit.NsPerOp(b)
		})
		b.Run("nmhost", func(b *testing.B) {
			g := benchGateway(b, mcpgw.Server{URL: upSrv.URL})
			gwSrv := httptest.NewUnstartedServer(nil)
			host := gwSrv.Listener.Addr().String()
			gwSrv.Config.Handler = g.srv.Handler(mcpserve.HTTPConfig{Token: func(s string) bool { return s == "t" }, Hosts: []string{host}})
			gwSrv.Start()
			b.Cleanup(gwSrv.Close) // after the client's session closes (cleanups run last first)
			cs := connectClient(b, &mcp.StreamableClientTransport{Endpoint: gwSrv.URL, HTTPClient: &http.Client{Transport: bearerRT{"t"}}})
			call(b, cs, "echo.read_echo")
			b.ReportMetric(testkit.NsPerOp(b)/base, "x-baseline")
		})
	})
}

func benchGateway(b *testing.B, srv mcpgw.Server) *gateway {
	name := "echo"
	if !strings.HasPrefix(srv.URL, "http") && srv.Command == "" {
		b.Fatal("no server")
	}
	return newGateway(b, setup{servers: map[string]mcpgw.Server{name: srv}, grant: true})
}

func connectClient(tb testing.TB, t mcp.Transport) *mcp.ClientSession {
	tb.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(context.Background(), t, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cs.Close() })
	return cs
}

type bearerRT struct{ token string }

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}
