package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// What host mode may spend before main, as GODEBUG=inittrace=1 reports it.
// Package initialisation runs before the first frame can be read, in every
// process the browser starts, so a table built or a pattern compiled at
// init is paid by every sendNativeMessage. The bounds are allocations, not
// times: they are the same on a loaded machine. They sit just above
// today's figures (2026-11-26: 179 inits, 0.85 MB, 4,526 allocations, most
// of it cel-go's and protobuf's descriptors and x/net/html's entity
// table; the largest of ours, mediator, 10.6 KB in 40), so a dependency
// added or upgraded into building a table at init fails here, and so does
// any package of ours that does more than set a few variables. Raise them
// only with the measured cost in the commit.
//
// 2026-11-28, raised for agents' scripts (workflow/script, workflow/purejs):
// goja (its parser and runtime, which links github.com/google/pprof's
// profile package), regexp2 and esbuild (TypeScript's types stripped) add
// 0.42 MB in 3,160 allocations (pprof 154 KB in 1,167, esbuild 123 KB in
// 1,040, goja 49 KB in 385, regexp2 38 KB in 83, the rest in the
// packages they share): 205 inits, 1.27 MB, 7,695 allocations.
//
// 2026-11-28, raised again for the MCP gateway and the sandbox: the MCP
// Go SDK's JSON Schema package (github.com/google/jsonschema-go, 81 KB in
// 296) and its JSON and URI-template packages, and go-seccomp-bpf's
// architecture tables (165 KB in 44; the sandbox's filter, linked because
// a high session's shell runs programs): 219 inits, 1.56 MB, 8,627
// allocations. The mediator's tool-name patterns are compiled on first
// use (they were 84 KB in 370 at init).
const (
	maxInitBytes   = 1600 << 10
	maxInitAllocs  = 9_000
	maxOwnBytes    = 16 << 10 // any one package of this module
	maxOwnAllocs   = 64
	ownPackagePath = "github.com/agentgate/nmhost/"
)

// neverInitialised are packages whose init is heavy and which nothing host
// mode runs needs: linking one in is a mistake to be caught here.
var neverInitialised = []string{"html/template", "net/http/pprof", "expvar"}

type initCost struct {
	pkg           string
	bytes, allocs int
}

// parseInitTrace reads the runtime's "init <pkg> @<t> ms, <c> ms clock,
// <b> bytes, <a> allocs" lines out of stderr.
func parseInitTrace(t *testing.T, stderr []byte) []initCost {
	var out []initCost
	sc := bufio.NewScanner(bytes.NewReader(stderr))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 11 || f[0] != "init" || f[8] != "bytes," || f[10] != "allocs" {
			continue
		}
		b, err1 := strconv.Atoi(f[7])
		a, err2 := strconv.Atoi(f[9])
		if err1 != nil || err2 != nil {
			t.Fatalf("unreadable init trace line %q", sc.Text())
		}
		out = append(out, initCost{pkg: f[1], bytes: b, allocs: a})
	}
	return out
}

// TestHostModeInitStaysSmall runs the real binary in host mode, as the
// browser does, with GODEBUG=inittrace=1, answers one frame, and holds
// package initialisation to the bounds above.
func TestHostModeInitStaysSmall(t *testing.T) {
	dir := newDataDir(t)
	cmd := exec.Command(nmhostBin, origin)
	cmd.Env = append(hostEnv(dir), "GODEBUG=inittrace=1")
	var in bytes.Buffer
	msg := `{"id":1,"type":"list-agents"}`
	binary.Write(&in, binary.NativeEndian, uint32(len(msg)))
	in.WriteString(msg)
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || !bytes.Contains(out, []byte(`"success":true`)) {
		t.Fatalf("host: %v, stdout %q\n%s", err, out, stderr.String())
	}
	inits := parseInitTrace(t, stderr.Bytes())
	if len(inits) < 10 {
		t.Fatalf("only %d init lines: is GODEBUG=inittrace=1 still honoured?\n%s", len(inits), stderr.String())
	}
	var bytesTotal, allocsTotal int
	for _, c := range inits {
		bytesTotal += c.bytes
		allocsTotal += c.allocs
		for _, p := range neverInitialised {
			if c.pkg == p {
				t.Errorf("host mode initialises %s (%d bytes, %d allocs): something linked it in", p, c.bytes, c.allocs)
			}
		}
		if strings.HasPrefix(c.pkg, ownPackagePath) && (c.bytes > maxOwnBytes || c.allocs > maxOwnAllocs) {
			t.Errorf("%s's init allocates %d bytes in %d allocations (at most %d, %d): build it on first use instead",
				c.pkg, c.bytes, c.allocs, maxOwnBytes, maxOwnAllocs)
		}
	}
	t.Logf("%d inits, %d bytes, %d allocs", len(inits), bytesTotal, allocsTotal)
	if bytesTotal > maxInitBytes || allocsTotal > maxInitAllocs {
		t.Errorf("package initialisation allocates %d bytes in %d allocations (at most %d, %d); the largest:\n%s",
			bytesTotal, allocsTotal, maxInitBytes, maxInitAllocs, largestInits(inits, 10))
	}
}

// largestInits lists the n inits that allocate the most bytes.
func largestInits(inits []initCost, n int) string {
	sorted := append([]initCost(nil), inits...)
	for i := range sorted { // a few hundred entries: insertion sort
		for j := i; j > 0 && sorted[j].bytes > sorted[j-1].bytes; j-- {
			sorted[j], sorted[j-1] = sorted[j-1], sorted[j]
		}
	}
	var b strings.Builder
	for _, c := range sorted[:min(n, len(sorted))] {
		b.WriteString("  " + c.pkg + ": " + strconv.Itoa(c.bytes) + " bytes, " + strconv.Itoa(c.allocs) + " allocs\n")
	}
	return b.String()
}
