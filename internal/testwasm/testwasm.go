// Package testwasm builds the WebAssembly agents that tests run and fakes
// name resolution for them. Only tests import it.
package testwasm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
)

// Build compiles the Go main package in dir for wasip1 and returns the
// module's bytes. A module is built once and kept in a directory shared
// by every test binary of a run (and later runs), named by a hash of
// what it is built from, so the many packages that run the same agent do
// not each link it again (linking a Go wasm module takes seconds).
func Build(dir string) ([]byte, error) {
	key, err := sourceKey(dir)
	if err != nil {
		return nil, err
	}
	cache := filepath.Join(cacheDir(), key+".wasm")
	if b, err := os.ReadFile(cache); err == nil {
		return b, nil
	}
	if err := os.MkdirAll(filepath.Dir(cache), 0o700); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(cache), "build-")
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
	// A rename is atomic: two binaries building the same agent at once
	// both write whole files, and the last one stays.
	if err := os.Rename(out, cache); err != nil {
		return nil, err
	}
	return os.ReadFile(cache)
}

// BuildFile is Build's module written to a file, for tests that hand a
// path to a command.
func BuildFile(dir string) (string, error) {
	if _, err := Build(dir); err != nil {
		return "", err
	}
	key, err := sourceKey(dir)
	if err != nil {
		return "", err
	}
	return filepath.Join(cacheDir(), key+".wasm"), nil
}

// cacheDir is where built modules are kept: NMHOST_TESTWASM_DIR, or a
// directory in the user's cache.
func cacheDir() string {
	if d := os.Getenv("NMHOST_TESTWASM_DIR"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "nmhost-testwasm")
	}
	return filepath.Join(os.TempDir(), "nmhost-testwasm")
}

// sourceKey hashes what a module is built from: the Go files of dir and
// of the repository's sdk (which agents import), go.mod, and the Go
// version. Anything else an agent imports comes from the standard
// library, which the Go version names.
func sourceKey(dir string) (string, error) {
	_, self, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(self), "..", "..")
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\n", runtime.Version())
	for _, d := range []string{abs, filepath.Join(root, "sdk")} {
		err := filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() || (!strings.HasSuffix(p, ".go") && filepath.Base(p) != "go.mod") {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(d, p)
			fmt.Fprintf(h, "%s %d\n", rel, len(b))
			h.Write(b)
			return nil
		})
		if err != nil {
			return "", err
		}
	}
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return "", err
	}
	h.Write(mod)
	return hex.EncodeToString(h.Sum(nil))[:32], nil
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

// CompileCache is a compilation cache directory (wasmhost.Config.CacheDir)
// shared by every test binary and later runs: compiling a Go agent with
// the race detector on takes tens of seconds, and most tests run agents,
// not the compiler. Tests about compiling itself (budgets, "compile:
// fresh") keep a cache of their own. wazero writes each entry to a
// temporary file and renames it, so binaries running at once share it
// safely.
func CompileCache() string {
	return filepath.Join(cacheDir(), "compiled")
}
