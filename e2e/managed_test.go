//go:build linux && e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// chromiumPolicyDir is where Debian's Chromium reads mandatory policies.
const chromiumPolicyDir = "/etc/chromium/policies/managed"

// managedDenied are the hosts the e2e run's managed policy denies: loopback
// addresses no other test uses, so the policy changes nothing else.
var managedDenied = []string{"127.0.0.3", "127.0.0.4"}

// writeManagedPolicy puts the run's policy for the extension where
// Chromium reads it, before Chromium starts, and returns what removes it.
// It needs root, as CI is; the e2e tests fail, never skip, without it.
func writeManagedPolicy() (func(), error) {
	policy := map[string]any{"3rdparty": map[string]any{"extensions": map[string]any{
		ExtensionID: map[string]any{"deniedHosts": managedDenied},
	}}}
	b, err := json.Marshal(policy)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(chromiumPolicyDir, 0o755); err != nil {
		return nil, fmt.Errorf("the managed policy needs %s (run as root, as CI does): %v", chromiumPolicyDir, err)
	}
	path := filepath.Join(chromiumPolicyDir, "nmhost-e2e.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return nil, fmt.Errorf("writing the managed policy: %v", err)
	}
	return func() { os.Remove(path) }, nil
}

// TestManagedPolicyReachesTheHost: an administrator's deniedHosts, set by
// Chrome's enterprise policy for the extension, reaches its managed
// storage, the extension hands it to the host, and the host refuses a
// host the agent's own profile lists, with admin_policy; the loopback
// server behind it is never reached.
func TestManagedPolicyReachesTheHost(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.3:0")
	if err != nil {
		t.Fatal(err)
	}
	var hits atomic.Int64
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.WriteString(w, "secret")
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	opts := page(t, extURL("options.html"))
	installAgent(t, opts, fetcherProfile("e2e-governed", "127.0.0.3", "127.0.0.4"), nil)
	// The policy reaches a host process as it starts; wait for it with a
	// probe to the other denied address, where nothing listens.
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := hostCall(t, opts, "network-fetch", map[string]any{"agentId": "e2e-governed", "url": "http://127.0.0.4:9/"})
		if r.Code == "admin_policy" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the managed policy never reached the host: %s %s", r.Code, r.Error)
		}
		time.Sleep(100 * time.Millisecond) // polling a condition with a deadline
	}
	r := hostCall(t, opts, "network-fetch", map[string]any{"agentId": "e2e-governed", "url": "http://" + l.Addr().String() + "/"})
	if r.Code != "admin_policy" {
		t.Fatalf("a host the managed policy denies: %s %s", r.Code, r.Error)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the denied server was reached %d times", n)
	}
	waitForDenial(t, opts, "e2e-governed", "managed storage")
}

// stopOnSignal ends a run stopped by a signal the way a finished run
// ends: Chromium first (its profile is in work, and it writes there until
// it exits), then the managed policy, which is the whole machine's, and
// work.
func stopOnSignal(stopped <-chan os.Signal, stopBrowser, removePolicy func(), work string) {
	sig := <-stopped
	stopBrowser()
	removePolicy()
	os.RemoveAll(work)
	fmt.Fprintf(os.Stderr, "e2e: stopped by %v\n", sig)
	os.Exit(1)
}
