package cli

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/mediator"
)

// TestExportAgainstACollectorThatRefuses: what a person sees when the
// collector answers a 4xx (a permanent refusal: one request, exit 1, the
// cursor kept, so the next export sends the same records), a 5xx (retried,
// then acknowledged) or nothing new to send. The collector is a loopback
// stand-in; the real one is in tools/otelcol-test.
func TestExportAgainstACollectorThatRefuses(t *testing.T) {
	for _, c := range []struct {
		name     string
		answers  []int
		code     int
		requests int32
		stdout   string
		stderr   string
	}{
		{"4xx is permanent", []int{400}, 1, 1, "exported 0 audit records", "nmhost export: the collector refused the records: HTTP 400: no such tenant (not retried; nothing was acknowledged, the next export sends them again)\n"},
		{"401 is permanent", []int{401}, 1, 1, "exported 0 audit records", "HTTP 401"},
		{"5xx is retried", []int{503, 200}, 0, 2, "exported 1 audit records, 0 denials, 1 checkpoints in 1 requests", "answered HTTP 503; retrying in "},
		{"429 is retried", []int{429, 200}, 0, 2, "acknowledged through record 1, denial 0", "answered HTTP 429; retrying in "},
	} {
		t.Run(c.name, func(t *testing.T) {
			dataDir := filepath.Join(t.TempDir(), "data")
			st, err := store.Open(dataDir, store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.AppendAudit(context.Background(), mediator.AuditEntry{Kind: mediator.AuditDecision, Allowed: true,
				Operation: mediator.Operation{AgentID: "a", Name: "log"}}); err != nil {
				t.Fatal(err)
			}
			st.Close()
			var n atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				i := int(n.Add(1)) - 1
				status := http.StatusOK
				if i < len(c.answers) {
					status = c.answers[i]
				}
				if status == http.StatusTooManyRequests {
					w.Header().Set("Retry-After", "0")
				}
				w.WriteHeader(status)
				if status == http.StatusBadRequest {
					w.Write([]byte("no such tenant\n"))
				}
			}))
			defer srv.Close()
			code, out, errOut := runMain(t, dataDir, "export", "--otlp-endpoint", srv.URL)
			if code != c.code || n.Load() != c.requests || !strings.Contains(out, c.stdout) || !strings.Contains(errOut, c.stderr) {
				t.Fatalf("exit %d after %d requests; stdout %q, stderr %q\nwant exit %d after %d, %q, %q", code, n.Load(), out, errOut, c.code, c.requests, c.stdout, c.stderr)
			}
			// Again: a refused batch is sent again, an acknowledged one never.
			before := n.Load()
			code, out, _ = runMain(t, dataDir, "export", "--otlp-endpoint", srv.URL)
			sent := n.Load() - before
			if c.code == 0 && (code != 0 || sent != 0 || !strings.Contains(out, "exported 0 audit records")) {
				t.Fatalf("a second export after an acknowledgement: exit %d, %d requests, %q", code, sent, out)
			}
			if c.code != 0 && sent == 0 {
				t.Fatal("a second export after a refusal sent nothing: the refused records were lost")
			}
		})
	}
}
