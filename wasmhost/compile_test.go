package wasmhost

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentgate/nmhost/mediator"
)

// slowToCompile is a module within every limit that wazero's optimizing
// compiler takes seconds to compile: 40 functions, each 16 KiB of nested
// loops (its loop analysis is quadratic in the nesting). Under the race
// detector the compiler itself runs several times slower, so 8 functions
// take as long there.
func slowToCompile() []byte {
	funcs := 40
	if raceEnabled {
		funcs = 8
	}
	const depth = 16 << 10 / 6
	var body []byte
	for range depth {
		body = append(body, 0x03, 0x40, 0x20, 0x00, 0x1a) // loop; local.get 0; drop
	}
	for range depth {
		body = append(body, 0x0b)
	}
	return wmodule{funcs: funcs, funcLocals: 1, funcBody: body, start: []byte{0x01}}.bytes()
}

// TestCompileHasItsOwnBudget: compiling is not running. A module that
// compiles slowly, within every limit, runs to its end under a short
// executionTimeout when the compile budget allows the compile (the
// executionTimeout counts the run, from a compiled module), and ends with
// compile_timeout, not seconds later, when the compile budget does not.
func TestCompileHasItsOwnBudget(t *testing.T) {
	t.Run("the compile does not count against executionTimeout", func(t *testing.T) {
		rt, err := New(context.Background(), Config{})
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close(context.Background())
		start := time.Now()
		res, _ := runHostile(t, rt, slowToCompile(), mediator.Capabilities{ExecutionTimeout: 300})
		took := time.Since(start)
		if res.Status != "ok" || res.Compile != CompileFresh {
			t.Fatalf("result %q (%s) compile %q after %v; want ok, compiled fresh", res.Status, res.Error, res.Compile, res.Duration)
		}
		// Only a compile that outlasts the executionTimeout shows anything.
		if took < 300*time.Millisecond {
			t.Fatalf("the module compiled and ran in %v, within the 300 ms executionTimeout: make it slower to compile", took)
		}
		again, _ := runHostile(t, rt, slowToCompile(), mediator.Capabilities{ExecutionTimeout: 300})
		if again.Status != "ok" || again.Compile != CompileMemory {
			t.Fatalf("second run %q compile %q", again.Status, again.Compile)
		}
	})
	t.Run("the compile budget ends a compile", func(t *testing.T) {
		rt, err := New(context.Background(), Config{CompileTimeout: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close(context.Background())
		res, _ := runHostile(t, rt, slowToCompile(), mediator.Capabilities{ExecutionTimeout: 60_000})
		if res.Code != mediator.CodeCompileTimeout || !strings.Contains(res.Error, "compile budget") {
			t.Fatalf("result %q (%s) after %v; want compile_timeout", res.Status, res.Error, res.Duration)
		}
		// The compile goes on until wazero finishes the function it is
		// in; the run does not wait for that.
		if res.Duration > 3*time.Second {
			t.Fatalf("the run took %v for a 300 ms compile budget", res.Duration)
		}
	})
}

func shaOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// TestCompileDoesNotStallOtherRuns: while one module's compile is held
// still, another agent with the same memory limit (so the same engine)
// compiles and runs its own module, and runs of the held module end at
// the compile budget instead of waiting on it; once it is free, the module
// compiles and runs.
func TestCompileDoesNotStallOtherRuns(t *testing.T) {
	rt, err := New(context.Background(), Config{CompileTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	held := wmodule{start: []byte{0x01}}.bytes()
	other := wmodule{start: []byte{0x01, 0x01}}.bytes()
	started, held1 := make(chan struct{}), make(chan struct{})
	var once, releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(held1) }) }
	defer release() // before rt.Close, which waits for the held compile
	rt.compileHook = func(sha string) {
		if sha == shaOf(held) {
			once.Do(func() { close(started) })
			<-held1
		}
	}
	f := newFixture(t)
	run := func(id string, module []byte, timeout int64) <-chan Result {
		rec := f.install(t, id, probePerms, mediator.Capabilities{ExecutionTimeout: timeout})
		spec := f.spec(rec, module, "")
		spec.Events = nil
		out := make(chan Result, 1)
		go func() {
			res, _ := rt.Run(context.Background(), spec)
			out <- res
		}()
		return out
	}

	first := run("first", held, 60_000)
	<-started
	// A guard, not a wait: a stalled run fails here instead of hanging.
	select {
	case res := <-run("other", other, 60_000):
		if res.Status != "ok" {
			t.Fatalf("the other agent's run: %+v", res)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("another agent's run waited for an unrelated compile")
	}
	if res := <-run("second", held, 200); res.Code != mediator.CodeCompileTimeout {
		t.Fatalf("a second run of the held module: %q (%s); want compile_timeout at the compile budget", res.Status, res.Error)
	}
	// The held compile is ended by the compile budget too: nothing waits
	// on a compile past it.
	if res := <-first; res.Code != mediator.CodeCompileTimeout {
		t.Fatalf("the first run, whose compile was held past the budget: %+v", res)
	}
	release()
	if res := <-run("third", held, 60_000); res.Status != "ok" {
		t.Fatalf("a run once the compile is free: %+v", res)
	}
}

// TestRunSaysWhereItsCompileCameFrom: a run's result names where its
// compiled module came from: compiled now (fresh), this runtime's memory,
// or the disk cache another process filled; with the disk cache removed
// by hand, the next process compiles fresh and says so.
func TestRunSaysWhereItsCompileCameFrom(t *testing.T) {
	dir := t.TempDir()
	module := wmodule{start: []byte{0x01}}.bytes() // nop
	runtimeOver := func() *Runtime {
		rt, err := New(context.Background(), Config{CacheDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rt.Close(context.Background()) })
		return rt
	}
	first := runtimeOver()
	for _, c := range []struct {
		name string
		rt   *Runtime
		want string
	}{
		{"first run", first, CompileFresh},
		{"second run, same process", first, CompileMemory},
		{"another process", runtimeOver(), CompileDisk},
	} {
		if res, _ := runHostile(t, c.rt, module, mediator.Capabilities{}); res.Status != "ok" || res.Compile != c.want {
			t.Fatalf("%s: %s (%s) compile %q; want %q", c.name, res.Status, res.Error, res.Compile, c.want)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if res, _ := runHostile(t, runtimeOver(), module, mediator.Capabilities{}); res.Status != "ok" || res.Compile != CompileFresh {
		t.Fatalf("with the cache removed: %s (%s) compile %q; want %q", res.Status, res.Error, res.Compile, CompileFresh)
	}
}
