package store

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentgate/nmhost/internal/norace"
	"github.com/agentgate/nmhost/mediator"
)

// The process tests run the package's test binary as children that run
// TestHelperProcess; the env var says what a child should do. Under the
// race detector the children are a copy built without it
// (norace.Binary): what these tests check happens between processes,
// through SQLite's file locks, where the detector sees nothing, and it
// made each child's SQLite work several times slower (the four children
// of TestConcurrentProcesses used 9 s of CPU). The same store calls run
// under the detector in this process, from many goroutines at once, in
// the other tests (TestGroupCommit, TestSimultaneousOpenOfFreshDir).
const (
	helperEnvMode = "NMHOST_STORE_HELPER"
	helperEnvDir  = "NMHOST_STORE_HELPER_DIR"
	helperEnvTag  = "NMHOST_STORE_HELPER_TAG"
)

func helperCmd(t *testing.T, mode, dir, tag string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(norace.Binary(t), "-test.run=^TestHelperProcess$", "-test.count=1", "-test.v=false")
	cmd.Env = append(os.Environ(), helperEnvMode+"="+mode, helperEnvDir+"="+dir, helperEnvTag+"="+tag)
	cmd.Stderr = os.Stderr
	return cmd
}

// TestHelperProcess is not a test: it is the child of the process tests.
// It prints "ACK ..." lines, each after a write the store acknowledged.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(helperEnvMode)
	if mode == "" {
		return // run as a normal test: nothing to do
	}
	ctx := context.Background()
	dir, tag := os.Getenv(helperEnvDir), os.Getenv(helperEnvTag)
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "helper %s: "+format+"\n", append([]any{tag}, args...)...)
		os.Exit(3)
	}
	// The children hammer one database as fast as they can; under the race
	// detector on a loaded machine a commit can hold the write lock for
	// seconds, and SQLite's busy handler is not fair. These tests check
	// what is acknowledged and what survives, not lock latency, so the
	// children wait longer than the default 5 s before giving up.
	s, err := Open(dir, Options{BusyTimeout: 60 * time.Second})
	if err != nil {
		fail("open: %v", err)
	}
	out := bufio.NewWriter(os.Stdout)
	ack := func(format string, args ...any) {
		// Flushed at once: the parent must never see an ACK for a write that
		// was not acknowledged, nor miss one that was.
		fmt.Fprintf(out, "ACK "+format+"\n", args...)
		if err := out.Flush(); err != nil {
			fail("stdout: %v", err)
		}
	}
	switch mode {
	case "durability":
		// Write until killed: alternately an agent install (agent + grant
		// rows) and a denial.
		for n := 0; ; n++ {
			if n%2 == 0 {
				id := fmt.Sprintf("dur-%d", n)
				if _, err := s.InstallAgent(ctx, testProfile(id, []mediator.Permission{mediator.PermConsoleLog}, []mediator.Permission{mediator.PermPageRead}), ""); err != nil {
					fail("install %s: %v", id, err)
				}
				if _, err := s.Grant(ctx, id, mediator.PermPageRead); err != nil {
					fail("grant %s: %v", id, err)
				}
				ack("%d agent %s", n, id)
			} else {
				d, err := s.LogDenial(ctx, mediator.Denial{AgentID: "dur", Permission: "network.fetch", Code: mediator.CodeHostNotAllowed,
					Context: mediator.DenialContext{Reason: strconv.Itoa(n)}})
				if err != nil {
					fail("denial %d: %v", n, err)
				}
				ack("%d denial %d", n, d.ID)
			}
		}
	case "concurrency":
		// All children share agent "shared"; each toggles grants on it and
		// logs its own denials.
		if _, err := s.InstallAgent(ctx, testProfile("shared", []mediator.Permission{mediator.PermConsoleLog}, []mediator.Permission{mediator.PermClipboardRead, mediator.PermClipboardWrite, mediator.PermPageRead}), ""); err != nil {
			fail("install: %v", err)
		}
		perms := []mediator.Permission{mediator.PermClipboardRead, mediator.PermClipboardWrite, mediator.PermPageRead}
		for i := range 200 {
			d, err := s.LogDenial(ctx, mediator.Denial{AgentID: "conc-" + tag, Permission: "page.read", Code: mediator.CodePermissionNotGranted,
				Context: mediator.DenialContext{Reason: strconv.Itoa(i)}})
			if err != nil {
				fail("denial %d: %v", i, err)
			}
			perm := perms[i%len(perms)]
			if i%2 == 0 {
				_, err = s.Grant(ctx, "shared", perm)
			} else {
				_, err = s.Revoke(ctx, "shared", perm)
			}
			if err != nil {
				fail("grant/revoke %d: %v", i, err)
			}
			if d := s.Check(ctx, "shared", mediator.PermConsoleLog); !d.Allowed {
				fail("check %d: %+v", i, d)
			}
			// Every child appends to the one audit chain: it must not fork.
			if _, err := s.AppendAudit(ctx, mediator.AuditEntry{Kind: mediator.AuditDecision, Operation: mediator.Operation{AgentID: "conc-" + tag, Name: mediator.OpLog}, Reason: strconv.Itoa(i)}); err != nil {
				fail("audit %d: %v", i, err)
			}
			ack("%d denial %d", i, d.ID)
		}
		if err := s.Close(); err != nil {
			fail("close: %v", err)
		}
		os.Exit(0)
	case "memory":
		// Each child writes to a session of its own and to one they
		// share; the first write of each races the others to make
		// memory.db and its tables.
		for i := range 30 {
			for _, session := range []string{"shared", "own-" + tag} {
				if _, err := s.WriteMemory(ctx, session, fmt.Sprintf("note %d of %s", i, tag), []string{"proc"}); err != nil {
					fail("memory %s %d: %v", session, i, err)
				}
			}
			ack("%d memory", i)
		}
		if err := s.Close(); err != nil {
			fail("close: %v", err)
		}
		os.Exit(0)
	case "revoke":
		// Another process takes a grant back: tag is "AGENT PERMISSION".
		agent, perm, _ := strings.Cut(tag, " ")
		if _, err := s.Revoke(ctx, agent, mediator.Permission(perm)); err != nil {
			fail("revoke: %v", err)
		}
		ack("revoked %s", tag)
		if err := s.Close(); err != nil {
			fail("close: %v", err)
		}
		os.Exit(0)
	default:
		fail("unknown mode %q", mode)
	}
}

func TestDurabilityAcrossKill(t *testing.T) {
	dir := t.TempDir()
	cmd := helperCmd(t, "durability", dir, "k")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	var acks []string
	const killAfter = 60
	killed := false
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "ACK ") {
			continue // test framework chatter
		}
		acks = append(acks, strings.TrimPrefix(line, "ACK "))
		if len(acks) == killAfter && !killed {
			// SIGKILL: no deferred functions, no Close, no flush.
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed = true
		}
	}
	// ACKs the child printed between our read and its death count too:
	// they were acknowledged.
	err = cmd.Wait()
	if !killed {
		t.Fatalf("child exited after %d ACKs (%v) before it was killed", len(acks), err)
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child state %v; want killed by SIGKILL", cmd.ProcessState)
	}
	t.Logf("child acknowledged %d writes before SIGKILL", len(acks))

	s := openTestStore(t, dir)
	ctx := context.Background()
	for _, a := range acks {
		var n int
		var kind, what string
		if _, err := fmt.Sscanf(a, "%d %s %s", &n, &kind, &what); err != nil {
			t.Fatalf("bad ACK %q: %v", a, err)
		}
		switch kind {
		case "agent":
			rec, err := s.Agent(ctx, what)
			if err != nil {
				t.Fatalf("acknowledged agent %s lost: %v", what, err)
			}
			if got := permsOf(rec.Grants); got[mediator.PermConsoleLog] != mediator.SourceInstall || got[mediator.PermPageRead] != mediator.SourceUser {
				t.Fatalf("acknowledged grants of %s lost: %v", what, got)
			}
		case "denial":
			id, _ := strconv.ParseInt(what, 10, 64)
			p, err := s.ListDenials(ctx, DenialFilter{AfterID: id - 1, BeforeID: id + 1})
			if err != nil || len(p.Denials) != 1 || p.Denials[0].Context.Reason != strconv.Itoa(n) {
				t.Fatalf("acknowledged denial %d (n=%d) lost: %+v, %v", id, n, p, err)
			}
		default:
			t.Fatalf("bad ACK %q", a)
		}
	}
}

// runHelpers runs children helper processes of mode on dir at once, each
// tagged with its number, and returns how many ACK lines each printed and
// how each exited.
func runHelpers(t *testing.T, mode, dir string, children int) (acks []int, errs []error) {
	t.Helper()
	var wg sync.WaitGroup
	acks, errs = make([]int, children), make([]error, children)
	for c := range children {
		cmd := helperCmd(t, mode, dir, strconv.Itoa(c))
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), "ACK ") {
					acks[c]++
				}
			}
			errs[c] = cmd.Wait()
		}()
	}
	wg.Wait()
	return acks, errs
}

func TestConcurrentProcesses(t *testing.T) {
	// A fresh directory: the children also race to create the schema.
	dir := t.TempDir() + "/fresh"
	const children, perChild = 4, 200
	start := time.Now()
	acks, errs := runHelpers(t, "concurrency", dir, children)
	t.Logf("%d processes x %d (denial + grant/revoke + check) in %v", children, perChild, time.Since(start))
	for c := range children {
		if errs[c] != nil || acks[c] != perChild {
			t.Errorf("child %d: %d ACKs, exit %v; want %d ACKs and success", c, acks[c], errs[c], perChild)
		}
	}
	if t.Failed() {
		return
	}

	s := openTestStore(t, dir)
	ctx := context.Background()
	seen := map[int64]bool{}
	perTag := map[string]map[string]bool{}
	f := DenialFilter{Limit: 1000}
	for {
		p, err := s.ListDenials(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range p.Denials {
			if seen[d.ID] {
				t.Fatalf("duplicate id %d", d.ID)
			}
			seen[d.ID] = true
			if perTag[d.AgentID] == nil {
				perTag[d.AgentID] = map[string]bool{}
			}
			perTag[d.AgentID][d.Context.Reason] = true
		}
		if p.NextBeforeID == 0 {
			break
		}
		f.BeforeID = p.NextBeforeID
	}
	if len(seen) != children*perChild {
		t.Fatalf("%d denials stored; want %d", len(seen), children*perChild)
	}
	for c := range children {
		if n := len(perTag["conc-"+strconv.Itoa(c)]); n != perChild {
			t.Errorf("child %d: %d distinct denials stored; want %d", c, n, perChild)
		}
	}
	// Each child appended one record per iteration, and each denial put
	// its decision's record in the trail too.
	rep, err := s.VerifyAudit(ctx)
	if err != nil || !rep.OK || rep.Records != 2*children*perChild {
		t.Fatalf("audit chain after concurrent appends: %+v %v; want %d intact records", rep, err, 2*children*perChild)
	}
	if _, err := s.Agent(ctx, "shared"); err != nil {
		t.Fatal(err)
	}
}

// TestSimultaneousOpenOfFreshDir opens many stores at the same instant on a
// data directory that has no database yet. SQLite answers a journal-mode
// switch that meets another connection's lock with SQLITE_BUSY without
// waiting, so without a retry some of these opens fail (as host processes
// did when Chrome started several at once).
func TestSimultaneousOpenOfFreshDir(t *testing.T) {
	for round := range 5 {
		dir := fmt.Sprintf("%s/fresh-%d", t.TempDir(), round)
		const openers = 8
		var ready, done sync.WaitGroup
		gate := make(chan struct{})
		errs := make([]error, openers)
		for i := range openers {
			ready.Add(1)
			done.Add(1)
			go func() {
				defer done.Done()
				ready.Done()
				<-gate
				s, err := Open(dir, Options{})
				if err == nil {
					_, err = s.ListAgents(context.Background())
					s.Close()
				}
				errs[i] = err
			}()
		}
		ready.Wait()
		close(gate)
		done.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("round %d opener %d: %v", round, i, err)
			}
		}
	}
}

// TestMemoryAcrossProcesses: processes on one data dir write memory at
// once, memory.db made by whichever comes first; every acknowledged entry
// is there once, each session's ids are 1..n, and the shared session's
// index finds them all.
func TestMemoryAcrossProcesses(t *testing.T) {
	dir := t.TempDir()
	const children, perChild = 3, 30
	acks, errs := runHelpers(t, "memory", dir, children)
	for c := range children {
		if errs[c] != nil || acks[c] != perChild {
			t.Fatalf("child %d: %d ACKs, exit %v; want %d ACKs and success", c, acks[c], errs[c], perChild)
		}
	}
	s := openTestStore(t, dir)
	ctx := context.Background()
	if n, err := s.MemoryEntries(ctx, "shared"); err != nil || n != children*perChild {
		t.Fatalf("shared: %d entries, %v; want %d", n, err, children*perChild)
	}
	hits, err := s.SearchMemory(ctx, "shared", "proc", MaxMemoryLimit)
	if err != nil || len(hits) != MaxMemoryLimit {
		t.Fatalf("shared search: %d hits, %v", len(hits), err)
	}
	for c := range children {
		if n, err := s.MemoryEntries(ctx, "own-"+strconv.Itoa(c)); err != nil || n != perChild {
			t.Errorf("own-%d: %d entries, %v; want %d", c, n, err, perChild)
		}
	}
	var n, distinct int
	if err := testMemoryDB(t, s).QueryRow(`SELECT count(*), count(DISTINCT text || session_id) FROM memory_entries`).Scan(&n, &distinct); err != nil {
		t.Fatal(err)
	}
	if want := 2 * children * perChild; n != want || distinct != want {
		t.Fatalf("%d entries, %d distinct; want %d", n, distinct, want)
	}
}
