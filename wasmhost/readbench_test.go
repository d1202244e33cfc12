package wasmhost

import (
	"bytes"
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/agentgate/nmhost/internal/testkit"
	"github.com/agentgate/nmhost/internal/testwasm"
	"github.com/agentgate/nmhost/workspace"
)

// readbenchWasm is testdata/readbench: os.ReadFile of argv[1], argv[2]
// times.
var readbenchWasm = sync.OnceValues(func() ([]byte, error) {
	return testwasm.Build("./" + filepath.Join("testdata", "readbench"))
})

// BenchmarkWorkspaceRead1MiB is a Go guest's os.ReadFile of a 1 MiB file
// in /workspace: through the workspace's own mount ("nmhost": SysFS over
// os.Root, read-only as under readonly) beside wazero's own read-only
// directory mount of the same directory ("baseline"), the same compiled
// guest in the same engine. One instance reads the file b.N times, so
// ns/op is one read with the instance's start spread over them.
func BenchmarkWorkspaceRead1MiB(b *testing.B) {
	module, err := readbenchWasm()
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "big.bin"), bytes.Repeat([]byte("0123456789abcdef"), 1<<16), 0o600); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	// 256 MiB: a Go guest's heap grows well past the default 16 MiB
	// while it reads a megabyte in a loop; both mounts get the same.
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCloseOnContextDone(true).WithMemoryLimitPages(256<<20/pageSize))
	defer rt.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	compiled, err := rt.CompileModule(ctx, module)
	if err != nil {
		b.Fatal(err)
	}
	ws, err := workspace.Open(dir, workspace.Limits{})
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	read := func(b *testing.B, fsc wazero.FSConfig) {
		var out bytes.Buffer
		mc := wazero.NewModuleConfig().WithName("").WithArgs("readbench", WorkspaceGuestPath+"/big.bin", strconv.Itoa(b.N)).
			WithStdout(&out).WithStderr(&out).WithRandSource(rand.Reader).WithFSConfig(fsc)
		// The instance before this one left a large linear memory for the
		// host's collector; collecting it now keeps it out of this
		// instance's time, whichever mount ran first.
		runtime.GC()
		b.ResetTimer()
		mod, err := rt.InstantiateModule(ctx, compiled, mc)
		b.StopTimer()
		if err != nil {
			b.Fatal(err, out.String())
		}
		mod.Close(ctx)
		if got := strings.TrimSpace(out.String()); got != strconv.Itoa(b.N<<20) {
			b.Fatalf("read %s bytes; want %d", got, b.N<<20)
		}
	}
	var base float64
	b.Run("baseline", func(b *testing.B) {
		read(b, wazero.NewFSConfig().WithReadOnlyDirMount(dir, WorkspaceGuestPath))
		base = testkit.NsPerOp(b)
	})
	b.Run("nmhost", func(b *testing.B) {
		read(b, wazero.NewFSConfig().(sysfs.FSConfig).WithSysFSMount(ws.SysFS(true, workspace.Hooks{}), WorkspaceGuestPath))
		if base > 0 {
			b.ReportMetric(testkit.NsPerOp(b)/base, "x-baseline")
		}
	})
}
