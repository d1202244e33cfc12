package wasmhost

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/internal/testwasm"
	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/workspace"
)

// shellprobeWasm is testdata/shellprobe: each line of its JSON input goes
// through the restricted API's shell.
var shellprobeWasm = sync.OnceValues(func() ([]byte, error) {
	return testwasm.Build("./" + filepath.Join("testdata", "shellprobe"))
})

// shellOutcome is one line shellprobe prints.
type shellOutcome struct {
	Line   string        `json:"line"`
	Output string        `json:"output"`
	Code   mediator.Code `json:"code"`
}

// askRecorder answers every prompt with answer and keeps what it was
// asked.
type askRecorder struct {
	answer mediator.Answer
	mu     sync.Mutex
	asked  []mediator.PromptRequest
}

func (a *askRecorder) Prompt(_ context.Context, r mediator.PromptRequest) (mediator.Answer, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, r)
	return a.answer, nil
}

// shellWorld is a workspace beside an outside directory: the canary
// there must never change, and a link planted in the workspace points at
// it.
type shellWorld struct {
	f       *fixture
	ws      *workspace.Workspace
	dir     string
	outside string
	canary  string
}

func newShellWorld(t *testing.T) *shellWorld {
	t.Helper()
	base := t.TempDir()
	w := &shellWorld{f: newFixture(t), dir: filepath.Join(base, "ws"), outside: filepath.Join(base, "outside")}
	w.canary = filepath.Join(w.outside, "canary.txt")
	os.MkdirAll(w.outside, 0o700)
	os.MkdirAll(w.dir, 0o700)
	if err := os.WriteFile(w.canary, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(w.dir, "a.txt"), []byte("alpha\n"), 0o600)
	os.Symlink(w.canary, filepath.Join(w.dir, "planted"))
	ws, err := workspace.Open(w.dir, workspace.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	w.ws = ws
	return w
}

func (w *shellWorld) untouched(t *testing.T) {
	t.Helper()
	if b, err := os.ReadFile(w.canary); err != nil || string(b) != "secret\n" {
		t.Fatalf("the canary outside the workspace became %q (%v)", b, err)
	}
}

// agentOpts shape one shellprobe run.
type agentOpts struct {
	set      mediator.PermissionSet
	level    string
	noGrant  bool
	prompter mediator.Prompter
	noWS     bool
	rt       *Runtime // nil: the shared one
}

// run runs shellprobe with lines and returns its result, one outcome per
// line, and the audit records the run appended.
func (w *shellWorld) run(t *testing.T, o agentOpts, lines ...string) (Result, []shellOutcome, []mediator.AuditRecord) {
	t.Helper()
	module, err := shellprobeWasm()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	id := "sheller"
	if o.noGrant {
		id = "ungranted"
	}
	rec := underSet(id, o.set, mediator.Capabilities{})
	if o.noGrant {
		rec.Profile.Permissions.Required = slices.DeleteFunc(slices.Clone(rec.Profile.Permissions.Required),
			func(p mediator.Permission) bool { return p == mediator.PermShell })
	}
	if _, err := w.f.st.InstallAgent(ctx, rec.Profile, ""); err != nil {
		t.Fatal(err)
	}
	if r, _ := mediator.SetRule(o.set); !o.noGrant && r.Allows(mediator.PermShell) {
		// (A set without shell cannot be granted it: the store refuses.)
		if _, err := w.f.st.Grant(ctx, id, mediator.PermShell); err != nil {
			t.Fatal(err)
		}
	}
	before := lastSeq(t, w.f)
	input, _ := json.Marshal(lines)
	spec := w.f.spec(rec, module, string(input))
	spec.SessionLevel = o.level
	if !o.noWS {
		spec.Workspace = w.ws
	}
	if o.prompter != nil {
		spec.Authorizer = mediator.NewPolicy(w.f.st, mediator.PolicyOptions{Prompter: o.prompter})
	}
	rt := o.rt
	if rt == nil {
		rt = sharedRuntime()
	}
	res, err := rt.Run(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	var outs []shellOutcome
	for _, l := range strings.Split(strings.TrimSpace(res.Output), "\n") {
		var so shellOutcome
		if json.Unmarshal([]byte(l), &so) == nil {
			outs = append(outs, so)
		}
	}
	page, err := w.f.st.ListAudit(ctx, before, 500, false)
	if err != nil {
		t.Fatal(err)
	}
	return res, outs, page.Records
}

func lastSeq(t *testing.T, f *fixture) int64 {
	t.Helper()
	page, err := f.st.ListAudit(context.Background(), 0, 1, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Records) == 0 {
		return 0
	}
	return page.Records[len(page.Records)-1].Seq
}

// shellDecisions are the shell decisions among records, as
// "shell.cmd code path,path".
func shellDecisions(records []mediator.AuditRecord) []string {
	var out []string
	for _, r := range records {
		if r.Kind != mediator.AuditDecision || !strings.HasPrefix(r.Operation.Name, mediator.OpShellPrefix) {
			continue
		}
		paths := ""
		if r.Operation.Shell != nil {
			paths = strings.Join(r.Operation.Shell.Paths, ",")
		}
		out = append(out, strings.TrimSpace(r.Operation.Name+" "+string(r.Code)+" "+paths))
	}
	return out
}

// TestAgentShellHostileLines: hostile command lines through an agent's
// shell function, at a high session whose person answers no to every
// prompt. Each is refused (or fails) with its code, the audit trail holds
// exactly the decisions made, and the canary outside is neither changed
// nor read.
func TestAgentShellHostileLines(t *testing.T) {
	w := newShellWorld(t)
	no := &askRecorder{answer: mediator.AnswerDeny}
	for _, tc := range []struct {
		name, line string
		code       mediator.Code
		audit      []string // the shell decisions recorded
	}{
		// Refused before it is decided, as a denial of the shell layer
		// (TestAgentShellRefusedLinesAreRecorded), not an allowed cat.
		{"dot dot", "cat ../outside/canary.txt", mediator.CodePathNotAllowed, nil},
		{"absolute read asks and is refused", "cat " + w.canary, mediator.CodeUserDenied, []string{"shell.cat user_denied " + w.canary}},
		{"absolute with dot dot is cleaned", "cat " + w.dir + "/../outside/canary.txt", mediator.CodeUserDenied, []string{"shell.cat user_denied " + w.canary}},
		{"planted link read", "cat planted", mediator.CodePathNotAllowed, []string{"shell.cat allowed planted"}},
		{"planted link write", "echo owned > planted", mediator.CodePathNotAllowed, []string{"shell.echo allowed planted"}},
		{"planted link copied", "cp planted copy.txt", mediator.CodePathNotAllowed, []string{"shell.cp allowed planted,copy.txt"}},
		{"absolute write", "echo owned > " + w.canary, mediator.CodePathNotAllowed, []string{"shell.echo path_not_allowed " + w.canary}},
		{"absolute rm", "rm " + w.canary, mediator.CodePathNotAllowed, []string{"shell.rm path_not_allowed " + w.canary}},
		{"NUL", "cat a.txt\x00" + w.canary, mediator.CodeShellNotAllowed, nil},
		{"quotes keep one name", "cat 'a.txt; rm a.txt'", mediator.CodeNotFound, []string{"shell.cat allowed a.txt; rm a.txt"}},
		{"double quotes", `cat "` + w.canary + `"`, mediator.CodeUserDenied, []string{"shell.cat user_denied " + w.canary}},
		{"semicolon", "cat a.txt; cat " + w.canary, mediator.CodeUserDenied, []string{"shell.cat allowed a.txt", "shell.cat user_denied " + w.canary}},
		{"and and", "ls && rm -r /", mediator.CodePathNotAllowed, []string{"shell.ls allowed", "shell.rm path_not_allowed /"}},
		{"or or does not work around a refusal", "cat " + w.canary + " || cat planted", mediator.CodeUserDenied, []string{"shell.cat user_denied " + w.canary}},
		{"backticks", "cat `echo " + w.canary + "`", mediator.CodeShellNotAllowed, nil},
		{"command substitution", "cat $(echo " + w.canary + ")", mediator.CodeShellNotAllowed, nil},
		{"variable", "cat $HOME/.ssh/id_rsa", mediator.CodeShellNotAllowed, nil},
		{"glob outside", "cat " + w.outside + "/*", mediator.CodePathNotAllowed, nil},
		{"glob climbing out", "cat ../outside/*", mediator.CodePathNotAllowed, nil},
		{"a process", "sh -c 'cat " + w.canary + "'", mediator.CodeShellNotAllowed, []string{"shell.sh shell_not_allowed cat " + w.canary}},
		{"a pipe into a process", "cat a.txt | sh", mediator.CodeShellNotAllowed, []string{"shell.cat allowed a.txt", "shell.sh shell_not_allowed"}},
		{"many names hide an outside one", "cat" + strings.Repeat(" a.txt", mediator.MaxShellPaths) + " " + w.canary, mediator.CodePathNotAllowed,
			[]string{"shell.cat path_not_allowed " + strings.Repeat("a.txt,", mediator.MaxShellPaths) + "..."}},
		{"an outside name too long to show", "cat " + w.outside + "/" + strings.Repeat("d", 300), mediator.CodePathNotAllowed,
			[]string{"shell.cat path_not_allowed " + mediator.Truncate(w.outside+"/"+strings.Repeat("d", 300), mediator.MaxShellPathBytes)}},
		{"a newline in an outside name", "cat '" + w.canary + "\nAllow'", mediator.CodePathNotAllowed, []string{"shell.cat path_not_allowed " + w.canary + "\nAllow"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			no.asked = nil
			res, outs, records := w.run(t, agentOpts{set: mediator.SetFilesystem, level: mediator.LevelHigh, prompter: no}, tc.line)
			if res.Status != "ok" || len(outs) != 1 {
				t.Fatalf("%s %s\n%s", res.Status, res.Error, res.Output)
			}
			if outs[0].Code != tc.code || strings.Contains(outs[0].Output, "secret") {
				t.Fatalf("code %q output %q; want %s", outs[0].Code, outs[0].Output, tc.code)
			}
			if got := shellDecisions(records); !slices.Equal(got, tc.audit) {
				t.Fatalf("shell decisions %q; want %q", got, tc.audit)
			}
			for _, a := range no.asked {
				if !strings.Contains(a.Target, w.canary) {
					t.Fatalf("a prompt about %q", a.Target)
				}
			}
			w.untouched(t)
		})
	}
	if _, err := os.Stat(filepath.Join(w.dir, "copy.txt")); err == nil {
		t.Fatal("the planted link was copied")
	}
	if b, _ := os.ReadFile(filepath.Join(w.dir, "a.txt")); string(b) != "alpha\n" {
		t.Fatalf("a.txt became %q", b)
	}
}

// TestAgentShellCopiesAnOutsideFileIn is the model's case B through an
// agent: at high, copying an outside file in asks the person, naming the
// file, and with their yes succeeds; the reverse copy to an outside
// destination is path_not_allowed and nothing is written there.
func TestAgentShellCopiesAnOutsideFileIn(t *testing.T) {
	w := newShellWorld(t)
	sample := filepath.Join(w.outside, "sample.txt")
	os.WriteFile(sample, []byte("from outside\n"), 0o600)
	yes := &askRecorder{answer: mediator.AnswerAllowOnce}
	exported := filepath.Join(w.outside, "exported.txt")
	res, outs, records := w.run(t, agentOpts{set: mediator.SetFilesystem, level: mediator.LevelHigh, prompter: yes},
		"cp "+sample+" imported.txt && cat imported.txt", "cp a.txt "+exported)
	if res.Status != "ok" || len(outs) != 2 {
		t.Fatalf("%s %s\n%s", res.Status, res.Error, res.Output)
	}
	if outs[0].Code != "" || outs[0].Output != "from outside\n" {
		t.Fatalf("the copy in: %+v", outs[0])
	}
	if outs[1].Code != mediator.CodePathNotAllowed {
		t.Fatalf("the copy out: %+v", outs[1])
	}
	if _, err := os.Stat(exported); err == nil {
		t.Fatal("the outside destination was written")
	}
	if len(yes.asked) != 1 || yes.asked[0].Target != `["`+sample+`"]` || yes.asked[0].Op.Name != "shell.cp" || yes.asked[0].Class != mediator.AlwaysConfirm {
		t.Fatalf("asked %+v", yes.asked)
	}
	want := []string{"shell.cp allowed " + sample + ",imported.txt", "shell.cat allowed imported.txt", "shell.cp path_not_allowed a.txt," + exported}
	if got := shellDecisions(records); !slices.Equal(got, want) {
		t.Fatalf("shell decisions %q; want %q", got, want)
	}
	for _, r := range records {
		if r.Kind == mediator.AuditDecision && r.Operation.Name == "shell.cp" && r.Allowed && r.DecidedBy != "prompt:"+string(mediator.AnswerAllowOnce) {
			t.Fatalf("the copy in was decided by %s", r.DecidedBy)
		}
	}
}

// TestAgentShellRefusals: the session matrix's lower rows, the grant, and
// the permission set, each with its code and its record.
func TestAgentShellRefusals(t *testing.T) {
	w := newShellWorld(t)
	for _, tc := range []struct {
		name  string
		o     agentOpts
		line  string
		code  mediator.Code
		audit []string
	}{
		{"ls at low", agentOpts{set: mediator.SetFilesystem, level: mediator.LevelLow}, "ls", "", []string{"shell.ls allowed"}},
		{"echo into a file at low", agentOpts{set: mediator.SetFilesystem, level: mediator.LevelLow}, "echo hi > low.txt", "", []string{"shell.echo allowed low.txt"}},
		{"grep at low", agentOpts{set: mediator.SetFilesystem, level: mediator.LevelLow}, "grep alpha a.txt", mediator.CodeSessionLevel, []string{"shell.grep session_level a.txt"}},
		{"grep at medium", agentOpts{set: mediator.SetFilesystem, level: mediator.LevelMedium}, "grep alpha a.txt", "", []string{"shell.grep allowed a.txt"}},
		{"outside read at medium", agentOpts{set: mediator.SetFilesystem, level: mediator.LevelMedium}, "cat " + w.canary, mediator.CodeSessionLevel, []string{"shell.cat session_level " + w.canary}},
		{"outside read at low", agentOpts{set: mediator.SetFilesystem, level: mediator.LevelLow}, "cp " + w.canary + " in.txt", mediator.CodeSessionLevel, []string{"shell.cp session_level " + w.canary + ",in.txt"}},
		{"outside read at high with nobody to ask", agentOpts{set: mediator.SetFilesystem, level: mediator.LevelHigh, prompter: nilPrompter{}}, "cat " + w.canary, mediator.CodeUserDenied, []string{"shell.cat user_denied " + w.canary}},
		{"not granted", agentOpts{set: mediator.SetFilesystem, level: mediator.LevelHigh, noGrant: true}, "ls", mediator.CodePermissionNotGranted, []string{"shell.ls permission_not_granted"}},
		{"a write under readonly", agentOpts{set: mediator.SetReadonly, level: mediator.LevelHigh}, "touch new.txt", mediator.CodePermissionOutsideSet, []string{"shell.touch permission_outside_set new.txt"}},
		{"a redirect under readonly", agentOpts{set: mediator.SetReadonly, level: mediator.LevelHigh}, "echo x > new.txt", mediator.CodePermissionOutsideSet, []string{"shell.echo permission_outside_set new.txt"}},
		{"a read under readonly", agentOpts{set: mediator.SetReadonly, level: mediator.LevelMedium}, "cat a.txt", "", []string{"shell.cat allowed a.txt"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, outs, records := w.run(t, tc.o, tc.line)
			if res.Status != "ok" || len(outs) != 1 {
				t.Fatalf("%s %s\n%s", res.Status, res.Error, res.Output)
			}
			if outs[0].Code != tc.code {
				t.Fatalf("code %q (%s); want %q", outs[0].Code, outs[0].Output, tc.code)
			}
			if got := shellDecisions(records); !slices.Equal(got, tc.audit) {
				t.Fatalf("shell decisions %q; want %q", got, tc.audit)
			}
			w.untouched(t)
		})
	}
	if _, err := os.Stat(filepath.Join(w.dir, "new.txt")); err == nil {
		t.Fatal("readonly wrote the workspace")
	}
}

// nilPrompter cannot reach anybody: every prompt is a deny.
type nilPrompter struct{}

func (nilPrompter) Prompt(context.Context, mediator.PromptRequest) (mediator.Answer, error) {
	return mediator.AnswerDeny, nil
}

// TestAgentShellLinks: shell links only when granted, inside the set, and
// with a workspace; each refusal is its own code in the denial list.
func TestAgentShellLinks(t *testing.T) {
	w := newShellWorld(t)
	for _, tc := range []struct {
		name string
		o    agentOpts
		code mediator.Code
	}{
		{"outside the set", agentOpts{set: mediator.SetNetworkAPI, level: mediator.LevelHigh}, mediator.CodePermissionOutsideSet},
		{"outside minimal", agentOpts{set: mediator.SetMinimal, level: mediator.LevelHigh}, mediator.CodePermissionOutsideSet},
		{"no workspace", agentOpts{set: mediator.SetFilesystem, level: mediator.LevelHigh, noWS: true}, mediator.CodeImportNotGranted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, outs, records := w.run(t, tc.o, "ls")
			if res.Code != tc.code || len(outs) != 0 || len(res.Denials) != 1 || res.Denials[0].Code != tc.code || res.Denials[0].Context.Details["import"] != "restricted_api.shell" {
				t.Fatalf("%s %s denials %+v", res.Code, res.Error, res.Denials)
			}
			if got := shellDecisions(records); len(got) != 0 {
				t.Fatalf("decisions %q", got)
			}
		})
	}
}

// TestAgentShellCallLimit: each command of a line counts against the
// run's call limit, so one call cannot flood the audit trail.
func TestAgentShellCallLimit(t *testing.T) {
	rt, err := New(context.Background(), Config{MaxCallsPerRun: 5, CacheDir: testwasm.CompileCache()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	w := newShellWorld(t)
	res, _, records := w.run(t, agentOpts{set: mediator.SetFilesystem, level: mediator.LevelMedium, rt: rt}, "ls"+strings.Repeat("; ls", 20))
	if res.Code != mediator.CodeCallLimit {
		t.Fatalf("%s %s\n%s", res.Code, res.Error, res.Output)
	}
	if got := shellDecisions(records); len(got) != 4 {
		// input and shell are two calls; the line's first command is shell's own, and 3 more fit under 5
		t.Fatalf("%d decisions: %q", len(got), got)
	}
}

// TestAgentShellNeverWalksOutside: even at high, where a file outside may
// be read by name after a prompt, a listing or a search of an outside
// directory (ls, find, grep -r) is refused by the policy before anyone
// is asked, and recorded.
func TestAgentShellNeverWalksOutside(t *testing.T) {
	w := newShellWorld(t)
	yes := &askRecorder{answer: mediator.AnswerAllowOnce}
	lines := []string{"ls " + w.outside, "find " + w.outside, "grep -r outside " + w.outside, "ls -R /"}
	res, outs, records := w.run(t, agentOpts{set: mediator.SetFilesystem, level: mediator.LevelHigh, prompter: yes}, lines...)
	if res.Status != "ok" || len(outs) != len(lines) {
		t.Fatalf("%s %s\n%s", res.Status, res.Error, res.Output)
	}
	for i, o := range outs {
		if o.Code != mediator.CodePathNotAllowed || o.Output != "" {
			t.Errorf("%q: %+v", lines[i], o)
		}
	}
	if len(yes.asked) != 0 {
		t.Fatalf("asked %+v", yes.asked)
	}
	want := []string{"shell.ls path_not_allowed " + w.outside, "shell.find path_not_allowed " + w.outside,
		"shell.grep path_not_allowed " + w.outside, "shell.ls path_not_allowed /"}
	if got := shellDecisions(records); !slices.Equal(got, want) {
		t.Fatalf("shell decisions %q; want %q", got, want)
	}
}

// TestAgentShellRefusedLinesAreRecorded: a line the shell refuses before
// any command is decided (syntax outside the set, a pattern that climbs
// out) reaches nothing and is still on record: a denial of layer shell
// with its code, tied to a decision record.
func TestAgentShellRefusedLinesAreRecorded(t *testing.T) {
	w := newShellWorld(t)
	// The last three: a name that climbs out, refused before it is
	// decided; a planted link out and a write through it, which the
	// workspace refuses after the command was allowed. Each is a denial.
	lines := []string{"echo $(cat " + w.canary + ")", "cat `echo " + w.canary + "`", "cat ../*",
		"cat ../../x", "cat planted", "echo owned > planted"}
	res, outs, _ := w.run(t, agentOpts{set: mediator.SetFilesystem, level: mediator.LevelHigh}, lines...)
	if res.Status != "ok" || len(outs) != len(lines) {
		t.Fatalf("%s %s\n%s", res.Status, res.Error, res.Output)
	}
	page, err := w.f.st.ListDenials(context.Background(), store.DenialFilter{AgentID: "sheller", Permission: "shell"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range page.Denials {
		if d.Context.Layer == "shell" && d.AuditSeq > 0 {
			got = append(got, string(d.Code))
		}
	}
	if len(got) != len(lines) {
		t.Fatalf("shell-layer denials %v for %d refused lines: %+v; outcomes %+v", got, len(lines), page.Denials, outs)
	}
	for i, o := range outs {
		if o.Code != mediator.Code(got[len(got)-1-i]) {
			t.Errorf("%q answered %s, recorded %s", lines[i], o.Code, got[len(got)-1-i])
		}
	}
	if b, err := os.ReadFile(w.canary); err != nil || string(b) != "secret\n" {
		t.Fatalf("canary %q %v", b, err)
	}
}
