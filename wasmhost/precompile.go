package wasmhost

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/agentgate/nmhost/mediator"
)

// Where a run's compiled module came from (Result.Compile).
const (
	CompileMemory = "memory"
	CompileDisk   = "disk"
	CompileFresh  = "fresh"
)

// Precompile compiles an installed agent's module into the engine its runs
// will use, and so into the on-disk compilation cache, under the compile
// budget alone: the host calls it in the background when an agent is
// installed, so that a run of an installed agent never compiles from
// scratch and a first run on a busy machine does not spend its
// executionTimeout compiling. A module that would be refused at run time
// (limits, validation) is not compiled; its runs say why.
func (r *Runtime) Precompile(ctx context.Context, rec mediator.AgentRecord, module []byte) error {
	sum := sha256.Sum256(module)
	sha := hex.EncodeToString(sum[:])
	if rec.ModuleSHA256 != "" && rec.ModuleSHA256 != sha {
		return fmt.Errorf("wasmhost: precompile: the module's sha256 is %s; the record names %s", sha, rec.ModuleSHA256)
	}
	pages := pagesFor(rec.Profile.Capabilities.MaxMemory)
	if _, _, ok := r.lookupCompiled(pages, sha); ok {
		return nil
	}
	info, err := validate(module)
	if err != nil {
		return err
	}
	interp, err := useInterpreter(info)
	if err != nil {
		return err
	}
	eng, err := r.engineOf(ctx, engineKey{pages: pages, interp: interp})
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, r.cfg.CompileTimeout)
	defer cancel()
	if _, err := eng.compile(cctx, sha, module, info); err != nil {
		return err
	}
	r.markCompiled(eng, sha)
	return nil
}

// marker is the file that says sha was compiled into the disk cache for
// eng's kind and memory limit; "" without a disk cache.
func (r *Runtime) marker(eng *engine, sha string) string {
	// The interpreter keeps nothing on disk: its compile is fast and
	// linear (engines.go), so there is nothing to mark.
	if r.cfg.CacheDir == "" || sha == "" || eng.key.interp {
		return ""
	}
	return filepath.Join(r.cfg.CacheDir, "nmhost-compiled", strconv.FormatUint(uint64(eng.key.pages), 10)+"-"+sha)
}

// cachedOnDisk says where a compile of sha by eng will find it: the disk
// cache (a marker written after an earlier compile, in this process or
// another) or nowhere (a fresh compile). A cache removed by hand takes its
// markers with it.
func (r *Runtime) cachedOnDisk(eng *engine, sha string) string {
	if m := r.marker(eng, sha); m != "" {
		if _, err := os.Stat(m); err == nil {
			return CompileDisk
		}
	}
	return CompileFresh
}

// markCompiled writes sha's marker once it is compiled.
func (r *Runtime) markCompiled(eng *engine, sha string) {
	m := r.marker(eng, sha)
	if m == "" {
		return
	}
	if _, err := os.Stat(m); err == nil {
		return
	}
	if err := os.MkdirAll(filepath.Dir(m), 0o700); err == nil {
		_ = os.WriteFile(m, nil, 0o600)
	}
}
