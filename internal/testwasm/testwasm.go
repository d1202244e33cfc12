// Package testwasm builds the WebAssembly agents that tests run and fakes
// name resolution for them. Only tests import it.
package testwasm

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
)

// Build compiles the Go main package in dir for wasip1 and returns the
// module's bytes.
func Build(dir string) ([]byte, error) {
	tmp, err := os.MkdirTemp("", "testwasm-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	out := filepath.Join(tmp, "agent.wasm")
	cmd := exec.Command("go", "build", "-o", out, dir)
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building %s for wasip1: %v\n%s", dir, err, b)
	}
	return os.ReadFile(out)
}

// Probe is wasmhost/testdata/probe, the agent whose input lines are
// commands (print, fetch, post, spin, ...), built once per test binary.
var Probe = sync.OnceValues(func() ([]byte, error) {
	_, self, _, _ := runtime.Caller(0)
	return Build(filepath.Join(filepath.Dir(self), "..", "..", "wasmhost", "testdata", "probe"))
})

// Resolver answers lookups from its map and fails every other name, so a
// test decides exactly where a name points (a rebinding to 127.0.0.1, a
// private address) without any real DNS.
type Resolver map[string][]netip.Addr

// LookupNetIP implements netproxy's resolver.
func (r Resolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := r[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host (test resolver)", Name: host, IsNotFound: true}
}
