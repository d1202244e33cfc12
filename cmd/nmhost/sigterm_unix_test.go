//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentgate/nmhost/internal/nmclient"
	"github.com/agentgate/nmhost/internal/testwasm"
)

// spinModule is a module whose _start (function 0) loops for ever, with
// more functions of () -> () and one i32 local after it, each with the
// body code (without its end).
func spinModule(funcs int, code []byte) []byte {
	out := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}
	out = append(out, testwasm.Section(1, testwasm.Vec([][]byte{{0x60, 0x00, 0x00}}))...)
	types := make([][]byte, 1+funcs)
	for i := range types {
		types[i] = []byte{0x00}
	}
	out = append(out, testwasm.Section(3, testwasm.Vec(types))...)
	out = append(out, testwasm.Section(7, testwasm.Vec([][]byte{append(testwasm.Name("_start"), 0x00, 0x00)}))...)
	body := func(locals, code []byte) []byte {
		b := append(append(locals, code...), 0x0b)
		return append(testwasm.ULEB128(uint32(len(b))), b...)
	}
	bodies := [][]byte{body([]byte{0x00}, []byte{0x03, 0x40, 0x0c, 0x00, 0x0b})} // loop; br 0; end
	for range funcs {
		bodies = append(bodies, body([]byte{0x01, 0x01, 0x7f}, code))
	}
	return append(out, testwasm.Section(10, testwasm.Vec(bodies))...)
}

// flatLoops is n bytes of loops one after another, which wazero's
// optimizing compiler takes time quadratic in, inside one function.
func flatLoops(n int) []byte {
	return bytes.Repeat([]byte{0x03, 0x40, 0x20, 0x00, 0x1a, 0x0b}, n/6) // loop; local.get 0; drop; end
}

// cpuTicks is the CPU process pid has used, in clock ticks.
func cpuTicks(t *testing.T, pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	utime, _ := strconv.Atoi(f[11])
	stime, _ := strconv.Atoi(f[12])
	return utime + stime
}

// TestHostEndsWithin2sOfSIGTERM: whatever the runs in flight are doing
// (looping, compiling), the host process is gone within 2 s of a SIGTERM,
// with stdin still open. Each case waits until the host has spent 0.3 s of
// CPU on its runs before the signal, so the signal lands mid-run.
func TestHostEndsWithin2sOfSIGTERM(t *testing.T) {
	cases := []struct {
		name    string
		modules [][]byte
	}{
		{"an agent in an infinite loop", [][]byte{spinModule(0, nil)}},
		{"one 128 KiB function to compile", [][]byte{spinModule(1, flatLoops(128<<10-16))}},
		{"three modules of 40 functions of 32 KiB to compile", [][]byte{
			spinModule(40, append([]byte{0x41, 0x01, 0x1a}, flatLoops(32<<10-32)...)),
			spinModule(40, append([]byte{0x41, 0x02, 0x1a}, flatLoops(32<<10-32)...)),
			spinModule(40, append([]byte{0x41, 0x03, 0x1a}, flatLoops(32<<10-32)...)),
		}},
		{"an interpreted module of 8 MiB to compile", [][]byte{spinModule(62, flatLoops(128<<10-16))}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := newDataDir(t)
			var stderr lockedBuffer
			p, err := nmclient.Start(nmhostBin, []string{origin}, hostEnv(dir), &stderr)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Cmd.Process.Kill()
			for i, m := range c.modules {
				r := call(t, p.Client, "install-agent", map[string]any{"module": base64.StdEncoding.EncodeToString(m),
					"profile": map[string]any{"agentId": fmt.Sprintf("spin-%d", i), "capabilities": map[string]any{"executionTimeout": 60_000}}})
				if !r.Success {
					t.Fatalf("install: %+v", r)
				}
			}
			pid := p.Cmd.Process.Pid
			before := cpuTicks(t, pid)
			for i := range c.modules {
				go p.Call(context.Background(), "run-agent", map[string]any{"agentId": fmt.Sprintf("spin-%d", i)})
			}
			// A poll with a deadline on the host's CPU, not a sleep.
			deadline := time.Now().Add(30 * time.Second)
			for cpuTicks(t, pid) < before+30 {
				if time.Now().After(deadline) {
					t.Fatalf("the runs never used 0.3 s of CPU; stderr:\n%s", stderr.String())
				}
				time.Sleep(10 * time.Millisecond)
			}
			exited := make(chan error, 1)
			signalled := time.Now()
			if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			go func() { exited <- p.Cmd.Wait() }()
			select {
			case err := <-exited:
				t.Logf("exited after %v: %v", time.Since(signalled), err)
			case <-time.After(2 * time.Second):
				t.Fatalf("the host was still running 2 s after SIGTERM; stderr:\n%s", stderr.String())
			}
		})
	}
}
