package wasmhost

import (
	"github.com/tetratelabs/wazero"

	"github.com/agentgate/nmhost/mediator"
)

// Which engine compiles a module, so that the CPU a compile spends after
// its run's deadline is bounded (RATIONALE.md, "Why is CPU after a
// deadline bounded this way?").
//
// wazero's optimizing compiler cannot be interrupted inside a function,
// and its time grows with the square of a function's size for some
// shapes (a 128 KiB body of flat loops: 25 to 30 s; of nested loops:
// about as long). It stops between functions when the run's deadline
// passes (compileWorkers), so what it spends after the deadline is the
// functions in progress, one per worker. Bodies up to compilerBodyLimit
// keep that under a second each (32 KiB of flat loops: 0.6 to 0.75 s on
// a loaded 2-core machine); Go agents stay well under it (the example
// agents' largest body is 29,238 bytes, the Go runtime's).
//
// A module with a larger body goes to wazero's interpreter: it compiles
// in time linear in the code (about 165 ms per MiB for the worst shapes
// measured, 60 ms for Go's code), runs slower, and stops at its deadline
// like the compiler's code (WithCloseOnContextDone). Its compile is one
// step that cannot be interrupted either, so such a module's code section
// is limited to interpreterCodeLimit, about 1.3 s of compiling.
const (
	compilerBodyLimit    = 32 << 10
	interpreterCodeLimit = 8 << 20
)

// engineKey names one engine: a memory limit and a kind.
type engineKey struct {
	pages  uint32
	interp bool
}

// useInterpreter reports whether a module validate read compiles with the
// interpreter, or the module_limits error that refuses it.
func useInterpreter(info *moduleInfo) (bool, error) {
	if info.maxBody <= compilerBodyLimit {
		return false, nil
	}
	if info.codeBytes > interpreterCodeLimit {
		return false, mediator.Errorf(mediator.CodeModuleLimits,
			"a function body is %d bytes, over the %d a module compiled ahead of time may have, so the module is interpreted; its code is %d bytes and the limit for an interpreted module is %d",
			info.maxBody, compilerBodyLimit, info.codeBytes, interpreterCodeLimit)
	}
	return true, nil
}

// runtimeConfig is the wazero configuration of an engine of key k.
func runtimeConfig(k engineKey) wazero.RuntimeConfig {
	rc := wazero.NewRuntimeConfig()
	if k.interp {
		rc = wazero.NewRuntimeConfigInterpreter()
	}
	return rc.WithCloseOnContextDone(true). // the execution timeout interrupts loops
						WithMemoryLimitPages(k.pages)
}

// lookupCompiled finds sha compiled under the memory limit pages, by
// either engine, without creating one.
func (r *Runtime) lookupCompiled(pages uint32, sha string) (*engine, wazero.CompiledModule, bool) {
	for _, interp := range []bool{false, true} {
		r.mu.Lock()
		e, ok := r.engines[engineKey{pages, interp}]
		r.mu.Unlock()
		if !ok {
			continue
		}
		if m, ok := e.lookup(sha); ok {
			return e, m, true
		}
	}
	return nil, nil, false
}
