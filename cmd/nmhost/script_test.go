package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agentgate/nmhost/internal/norace"
	"github.com/agentgate/nmhost/internal/testwasm"
)

// TestMain builds the real binary the tests drive, over pipes and in
// test scripts.
func TestMain(m *testing.M) {
	os.Exit(withBinary{m}.Run())
}

type withBinary struct{ m *testing.M }

func (w withBinary) Run() int {
	if bin, copied := norace.Copy(); copied { // norace.Moved's copy of a test
		nmhostBin = bin
		return w.m.Run()
	}
	dir, err := os.MkdirTemp("", "nmhost-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	nmhostBin = filepath.Join(dir, "nmhost")
	// With the test hooks: the scripts give the binary an admin policy
	// of their own (NMHOST_TEST_ADMIN_POLICY), which a released binary
	// never reads.
	out, err := exec.Command("go", "build", "-tags", "nmhost_testhooks", "-o", nmhostBin, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		return 1
	}
	return w.m.Run()
}

// memoryNotes is examples/agents/memory-notes built for wasip1.
var memoryNotes = sync.OnceValues(func() ([]byte, error) {
	return testwasm.Build("../../examples/agents/memory-notes")
})

// TestScripts runs testdata/script/*.txtar: the commands a person types,
// with what they print and how they exit. Each script gets a fresh data
// dir ($NMHOST_DATA_DIR), a home ($HOME, where install writes manifests),
// the tiny agents of wasm_test.go and the memory-notes example (built once
// per test binary: it prints what its calls answer) in $WORK/agents, the
// repository root in
// $REPO, and in $NMHOST_BIN_DIR the directory of the nmhost command, for a
// PATH without go.
//
// The nmhost a script runs is the real binary the other tests drive
// (nmhostBin, built without the race detector), first on PATH: what a
// person types is what a script runs, and a command that compiles an
// agent does not pay the race detector's several-fold cost in wazero's
// compiler. The CLI's code runs under the race detector in internal/cli's
// own tests.
//
// `nmhost serve` is tested in serve_test.go: its first line must be read
// while it runs, and a background command's output is only seen after it
// ends.
func TestScripts(t *testing.T) {
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		Cmds:                map[string]func(ts *testscript.TestScript, neg bool, args []string){"seed-answers": seedAnswers},
		Setup: func(env *testscript.Env) error {
			home := filepath.Join(env.WorkDir, "home")
			if err := os.MkdirAll(home, 0o700); err != nil {
				return err
			}
			env.Setenv("HOME", home)
			env.Setenv("NMHOST_DATA_DIR", filepath.Join(env.WorkDir, "data"))
			env.Setenv("REPO", repo)
			bin := filepath.Dir(nmhostBin)
			env.Setenv("NMHOST_BIN_DIR", bin)
			env.Setenv("PATH", bin+string(os.PathListSeparator)+env.Getenv("PATH"))
			agents := filepath.Join(env.WorkDir, "agents")
			if err := writeTinyAgents(agents); err != nil {
				return err
			}
			notes, err := memoryNotes()
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(agents, "memory-notes.wasm"), notes, 0o644)
		},
	})
}
