package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/agentgate/nmhost/internal/datadir"
	"github.com/agentgate/nmhost/internal/frame"
	"github.com/agentgate/nmhost/internal/nmclient"
	"github.com/agentgate/nmhost/internal/testkit"
)

// Each benchmark here runs its baseline and nmhost side by side in one
// binary: "baseline" is the least any native-messaging host (or plain
// net/http) can cost for the same work, and "nmhost" reports its ratio to
// it as x-baseline. scripts/bench.sh runs them all.

// echoBin builds testdata/echo, a framed-JSON echo host, once.
var echoBin = sync.OnceValues(func() (string, error) { return buildTestdata("echo") })

// storeOnlyBin builds testdata/storeonly, the floor of a start that opens
// the store, once.
var storeOnlyBin = sync.OnceValues(func() (string, error) { return buildTestdata("storeonly") })

// buildTestdata builds the command in testdata/name into a directory of
// its own and returns the binary's path.
func buildTestdata(name string) (string, error) {
	dir, err := os.MkdirTemp("", "nmhost-"+name+"-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, name)
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/"+name).CombinedOutput(); err != nil {
		return "", &buildError{name, err, out}
	}
	return bin, nil
}

type buildError struct {
	name string
	err  error
	out  []byte
}

func (e *buildError) Error() string {
	return "go build testdata/" + e.name + ": " + e.err.Error() + "\n" + string(e.out)
}

// startEcho starts the echo host as start starts nmhost.
func startEcho(b *testing.B) *nmclient.Process {
	bin, err := echoBin()
	if err != nil {
		b.Fatal(err)
	}
	p, err := nmclient.Start(bin, nil, os.Environ(), io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Cmd.Process.Kill(); p.Cmd.Wait() })
	return p
}

// pair runs fn as "baseline" then as "nmhost" and reports nmhost's time
// per operation as a multiple of the baseline's.
func pair(b *testing.B, baseline, nmhost func(b *testing.B)) {
	var base float64
	b.Run("baseline", func(b *testing.B) {
		baseline(b)
		base = testkit.NsPerOp(b)
	})
	b.Run("nmhost", func(b *testing.B) {
		nmhost(b)
		if base > 0 {
			b.ReportMetric(testkit.NsPerOp(b)/base, "x-baseline")
		}
	})
}

// roundTrips sends "hello" requests to p, inFlight at a time, b.N in all.
func roundTrips(b *testing.B, p *nmclient.Process, inFlight int) {
	ctx := context.Background()
	work := make(chan struct{})
	var wg sync.WaitGroup
	for range inFlight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range work {
				r, err := p.Call(ctx, "hello", nil)
				if err != nil || !r.Success {
					b.Errorf("%v %+v", err, r)
				}
			}
		}()
	}
	b.ResetTimer()
	for range b.N {
		work <- struct{}{}
	}
	close(work)
	wg.Wait()
	b.StopTimer()
}

// BenchmarkRoundTrip is a small request answered over the pipes, one at a
// time and with 64 in flight (as when several tabs run agents at once):
// nmhost's hello beside the echo host.
func BenchmarkRoundTrip(b *testing.B) {
	for _, n := range []int{1, 64} {
		name := "sequential"
		if n > 1 {
			name = "64-in-flight"
		}
		b.Run(name, func(b *testing.B) {
			pair(b,
				func(b *testing.B) { roundTrips(b, startEcho(b), n) },
				func(b *testing.B) { roundTrips(b, start(b, newDataDir(b)), n) })
		})
	}
}

// BenchmarkColdStart is what sendNativeMessage costs: a new process, one
// request answered, and exit. nmhost opens its store (created beforehand,
// as an installed host's is) and answers list-agents; the baseline is the
// echo host answering one frame.
func BenchmarkColdStart(b *testing.B) {
	pair(b, echoStarts, func(b *testing.B) { listAgentsStarts(b, nmhostBin, []string{origin}) })
}

// BenchmarkColdStartFloor is BenchmarkColdStart's floor for any host that
// opens this store: testdata/storeonly opens it, answers list-agents and
// exits, linking nothing else of nmhost. Its ratio to the echo process is
// what no change to nmhost's own start-up can go below while the store
// is SQLite through modernc.
func BenchmarkColdStartFloor(b *testing.B) {
	pair(b, echoStarts, func(b *testing.B) {
		bin, err := storeOnlyBin()
		if err != nil {
			b.Fatal(err)
		}
		listAgentsStarts(b, bin, nil)
	})
}

// coldStart starts bin, sends it one request of type typ, and waits for
// its answer and its exit.
func coldStart(b *testing.B, bin string, args, env []string, typ string) {
	p, err := nmclient.Start(bin, args, env, io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	r, err := p.Call(context.Background(), typ, nil)
	if err != nil || !r.Success {
		b.Fatalf("%v %+v", err, r)
	}
	if err := p.Wait(); err != nil {
		b.Fatal(err)
	}
}

// echoStarts is the cold starts' baseline: the echo host answering one
// frame, b.N times.
func echoStarts(b *testing.B) {
	bin, err := echoBin()
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		coldStart(b, bin, nil, os.Environ(), "hello")
	}
}

// listAgentsStarts starts bin over one data dir b.N times, each answering
// list-agents; the store is created by a first start outside the timing.
func listAgentsStarts(b *testing.B, bin string, args []string) {
	dir := newDataDir(b)
	coldStart(b, bin, args, hostEnv(dir), "list-agents")
	for b.Loop() {
		coldStart(b, bin, args, hostEnv(dir), "list-agents")
	}
}

// BenchmarkFetch is an agent's fetch of a loopback resource through the
// binary (network-fetch: grant, ACL, policy, audit, the reply framed and,
// past 1 MiB, chunked) beside net/http fetching it and reading the body.
// The "tmpfs" cases keep the data directory in memory (/dev/shm), where
// an fsync costs nothing: what is left is the host's own work, apart from
// the disk's.
func BenchmarkFetch(b *testing.B) {
	type fetchCase struct {
		name  string
		body  []byte
		tmpfs bool
	}
	var cases []fetchCase
	for _, tmpfs := range []bool{false, true} {
		for _, c := range []fetchCase{{"2B", []byte("ok"), tmpfs}, {"1MiB", bytes.Repeat([]byte("a"), 1<<20), tmpfs}} {
			if tmpfs {
				c.name += "-tmpfs"
			}
			cases = append(cases, c)
		}
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			dir := ""
			if c.tmpfs {
				dir = newDataDirIn(b, "/dev/shm")
			} else {
				dir = newDataDir(b)
			}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(c.body) }))
			defer srv.Close()
			pair(b,
				func(b *testing.B) {
					tr := &http.Transport{}
					defer tr.CloseIdleConnections()
					client := &http.Client{Transport: tr}
					b.SetBytes(int64(len(c.body)))
					for b.Loop() {
						resp, err := client.Get(srv.URL)
						if err != nil {
							b.Fatal(err)
						}
						got, err := io.ReadAll(resp.Body)
						resp.Body.Close()
						if err != nil || len(got) != len(c.body) {
							b.Fatal(err, len(got))
						}
					}
				},
				func(b *testing.B) {
					h := startRaw(b, dir)
					install, _ := json.Marshal(map[string]any{"id": "i", "type": "install-agent",
						"profile": profile("bench", strings.TrimPrefix(srv.URL, "http://"))["profile"]})
					if n, first := h.call(b, install); n != 1 || !bytes.Contains(first, []byte(`"success":true`)) {
						b.Fatalf("install-agent: %s", first)
					}
					fetch, _ := json.Marshal(map[string]any{"id": "f", "type": "network-fetch", "agentId": "bench", "url": srv.URL})
					b.SetBytes(int64(len(c.body)))
					for b.Loop() {
						// A reply that fits one frame must say success; a
						// larger one arrives as chunks, which only a
						// successful fetch of the whole body makes.
						n, first := h.call(b, fetch)
						if n == 1 && !bytes.Contains(first, []byte(`"success":true`)) || n == 1 && len(c.body) > 1<<19 {
							b.Fatalf("%d frames: %.300s", n, first)
						}
					}
				})
		})
	}
}

// newDataDirIn is newDataDir under parent (a memory file system), or a
// skip where there is none.
func newDataDirIn(b *testing.B, parent string) string {
	if fi, err := os.Stat(parent); err != nil || !fi.IsDir() {
		b.Skipf("no %s here", parent)
	}
	dir, err := os.MkdirTemp(parent, "nmhost-bench-")
	if err != nil {
		b.Skip(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	if err := datadir.SaveConfig(dir, datadir.Config{AllowedOrigins: []string{origin}}); err != nil {
		b.Fatal(err)
	}
	return dir
}

// rawHost is nmhost on pipes with nothing decoding its replies: the fetch
// benchmark counts what the host spends, not what a client spends on
// parsing a megabyte of JSON (which a browser does in its own process).
type rawHost struct {
	w *frame.Writer
	r *frame.Reader
}

func startRaw(b *testing.B, dir string) *rawHost {
	cmd := exec.Command(nmhostBin, origin)
	cmd.Env = hostEnv(dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stdin.Close(); cmd.Process.Kill(); cmd.Wait() })
	return &rawHost{w: frame.NewBrowserWriter(stdin), r: frame.NewReader(stdout)}
}

// call sends one request and reads its reply's frames: one, or every chunk
// up to the last. It returns how many frames came and the first of them.
func (h *rawHost) call(b *testing.B, req []byte) (int, []byte) {
	if err := h.w.Write(req); err != nil {
		b.Fatal(err)
	}
	var first []byte
	for n := 1; ; n++ {
		msg, err := h.r.Next()
		if err != nil {
			b.Fatal(err)
		}
		if n == 1 {
			first = msg
		}
		seq, total, ok := chunkPosition(msg)
		if !ok || seq == total-1 {
			return n, first
		}
	}
}

// chunkPosition reads seq and total from a chunk frame's fixed prefix,
// {"id":<id>,"chunk":{"seq":<i>,"total":<n>,... , without decoding the
// data that follows.
func chunkPosition(msg []byte) (seq, total int, ok bool) {
	head := msg[:min(len(msg), 256)]
	i := bytes.Index(head, []byte(`,"chunk":{"seq":`))
	if i < 0 {
		return 0, 0, false
	}
	rest := head[i+len(`,"chunk":{"seq":`):]
	j := bytes.Index(rest, []byte(`,"total":`))
	if j < 0 {
		return 0, 0, false
	}
	seq, err1 := strconv.Atoi(string(rest[:j]))
	rest = rest[j+len(`,"total":`):]
	k := bytes.IndexByte(rest, ',')
	if k < 0 {
		return 0, 0, false
	}
	total, err2 := strconv.Atoi(string(rest[:k]))
	return seq, total, err1 == nil && err2 == nil
}
