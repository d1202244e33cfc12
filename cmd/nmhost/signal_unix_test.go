//go:build unix

package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentgate/nmhost/internal/nmclient"
)

// TestHostStopsOnSignal: with stdin still open and a fetch in flight, a
// SIGTERM ends the host at once: the fetch is cancelled and answered with
// its error, the host exits 0 and says why. Its start line names the pid
// once.
func TestHostStopsOnSignal(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			arrived := make(chan struct{}, 1)
			release := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				arrived <- struct{}{}
				select {
				case <-release:
				case <-r.Context().Done():
				}
			}))
			defer srv.Close()
			defer close(release)

			dir := newDataDir(t)
			var stderr lockedBuffer
			p, err := nmclient.Start(nmhostBin, []string{origin}, hostEnv(dir), &stderr)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Cmd.Process.Kill()
			call(t, p.Client, "install-agent", profile("slow", strings.TrimPrefix(srv.URL, "http://")))

			replies := make(chan nmclient.Reply, 1)
			go func() {
				r, err := p.Call(context.Background(), "network-fetch", map[string]any{"agentId": "slow", "url": srv.URL})
				if err != nil {
					r = nmclient.Reply{Code: "no reply: " + err.Error()}
				}
				replies <- r
			}()
			select {
			case <-arrived:
			case <-time.After(10 * time.Second):
				t.Fatalf("the fetch never reached the server; stderr:\n%s", stderr.String())
			}
			if err := p.Cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case r := <-replies:
				if r.Success || r.Code == "" || strings.HasPrefix(r.Code, "no reply") {
					t.Fatalf("the fetch in flight was answered %+v; want a failure with a code", r)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("no answer to the fetch in flight after %v; stderr:\n%s", sig, stderr.String())
			}
			exited := make(chan error, 1)
			go func() { exited <- p.Cmd.Wait() }()
			select {
			case err := <-exited:
				if err != nil {
					t.Fatalf("exit after %v: %v; stderr:\n%s", sig, err, stderr.String())
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("the host did not exit after %v with stdin open; stderr:\n%s", sig, stderr.String())
			}
			log := stderr.String()
			if !strings.Contains(log, "host exiting: stopped by a signal") {
				t.Errorf("the log does not say why the host stopped:\n%s", log)
			}
			started := regexp.MustCompile(`(?m)^.*msg="host started".*$`).FindString(log)
			if n := strings.Count(started, "pid="); n != 1 {
				t.Errorf("the start line names the pid %d times: %s", n, started)
			}
		})
	}
}
