package shell

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/workspace"
)

// MaxOutputBytes bounds what one command line prints, and what one
// command passes down a pipe.
const MaxOutputBytes = 1 << 20

// Decider decides one command before it runs, given the step: its name,
// where it reaches and the paths it names. A nil error allows it, and
// done is then called with the command's outcome; an error refuses it
// with its reason code, and nothing of the command runs.
type Decider func(ctx context.Context, step mediator.ShellStep) (done func(error), err error)

// Shell runs command lines for one session. Every command is put to
// Decide before it runs; the caller supplies it: the CLI decides by the
// session matrix (AtLevel), an agent's shell by the mediator's policy.
// A nil Decide refuses every command.
type Shell struct {
	WS     *workspace.Workspace
	Decide Decider
	// Outside reads files outside the workspace for a high session (an
	// os.Root at "/"); nil: no outside read is possible at any level.
	Outside *os.Root
	// Names, when set, rewrites every name of the workspace the shell
	// prints (ls, find, grep's and wc's file labels) before it is written,
	// in pipes too. A person's shell sets it to mediator.EscapeTerminal:
	// an agent chose those names, and one holding ESC, '\r' or '\n' must
	// not rewrite the person's screen. An agent's shell leaves it nil: its
	// output is a JSON string, and the names are the agent's own.
	Names func(string) string
	// Programs, at a high session, runs a command that is not built in
	// as a program of the system in the sandbox; nil runs none.
	Programs *Programs
}

// name is n as the shell prints it (Names).
func (sh *Shell) name(n string) string {
	if sh.Names == nil {
		return n
	}
	return sh.Names(n)
}

// AtLevel decides by the session matrix alone (mediator.DecideShell) at
// level: a person's shell, whose level is their own answer. record, when
// set, gets every decision, allowing or not, before the command runs; a
// failure to record stops the command.
func AtLevel(level string, record func(ctx context.Context, step mediator.ShellStep, d mediator.Decision) error) Decider {
	return Deciding(func(step mediator.ShellStep) mediator.Decision { return mediator.DecideShell(level, step) }, record)
}

// Deciding decides each command with decide, a pure function of the
// step (the application core gives the person's shell the session
// matrix under the administrator's rules), and hands every decision to
// record, when set, before the command runs; a failure to record stops
// the command.
func Deciding(decide func(mediator.ShellStep) mediator.Decision, record func(ctx context.Context, step mediator.ShellStep, d mediator.Decision) error) Decider {
	return func(ctx context.Context, step mediator.ShellStep) (func(error), error) {
		d := decide(step)
		if record != nil {
			if err := record(ctx, step, d); err != nil {
				return nil, err
			}
		}
		if !d.Allowed {
			return nil, d.Err()
		}
		return func(error) {}, nil
	}
}

// refused marks an error as a refusal of Decide, which || never works
// around.
type refused struct{ error }

func (r refused) Unwrap() error { return r.error }

// undecided marks a refusal of the shell itself, before any command was
// put to Decide: syntax outside the set, or a pattern it will not expand.
type undecided struct{ error }

func (u undecided) Unwrap() error { return u.error }

// Undecided reports whether err refused a line, or one of its commands,
// before Decide heard of it, or was the workspace refusing what an
// allowed command tried: no denial is on record yet, so the caller
// records it (Agent.Refused).
func Undecided(err error) bool {
	var u undecided
	return errors.As(err, &u)
}

// Run parses and runs line, writing its output to out. It stops at the
// first refusal or failure that is not handled by || and returns it with
// its reason code.
func (sh *Shell) Run(ctx context.Context, line string, out io.Writer) error {
	n, err := parse(line)
	if err != nil {
		return undecided{err}
	}
	w := &limited{w: out, n: MaxOutputBytes}
	return sh.node(ctx, n, nil, w)
}

// limited passes on at most n bytes, then fails.
type limited struct {
	w io.Writer
	n int
}

func (l *limited) Write(p []byte) (int, error) {
	if len(p) > l.n {
		return 0, mediator.Errorf(mediator.CodeTooLarge, "the output passed %d bytes", MaxOutputBytes)
	}
	l.n -= len(p)
	return l.w.Write(p)
}

func (sh *Shell) node(ctx context.Context, n *node, in []byte, out io.Writer) error {
	if err := ctx.Err(); err != nil {
		return mediator.Errorf(mediator.CodeTimeout, "the command was cancelled")
	}
	switch n.op {
	case "":
		return sh.call(ctx, n.call, in, out)
	case ";":
		if err := sh.node(ctx, n.left, nil, out); err != nil {
			return err
		}
		return sh.node(ctx, n.right, nil, out)
	case "&&":
		if err := sh.node(ctx, n.left, nil, out); err != nil {
			return err
		}
		return sh.node(ctx, n.right, nil, out)
	case "||":
		err := sh.node(ctx, n.left, nil, out)
		if err == nil {
			return nil
		}
		// A refusal is never a failure to work around: "rm x || cat
		// /etc/passwd" must not turn a denial into a second try.
		var r refused
		if c := mediator.CodeOf(err); errors.As(err, &r) || c == mediator.CodeShellNotAllowed || c == mediator.CodePathNotAllowed || c == mediator.CodeSessionLevel {
			return err
		}
		return sh.node(ctx, n.right, nil, out)
	case "|":
		var buf bytes.Buffer
		if err := sh.node(ctx, n.left, in, &limited{w: &buf, n: MaxOutputBytes}); err != nil {
			return err
		}
		return sh.node(ctx, n.right, buf.Bytes(), out)
	}
	return refuse("operator %q", n.op)
}

// WorkspacePath is where the workspace appears in the shell (pwd) and in
// a guest's file system: /workspace/notes.txt is notes.txt.
const WorkspacePath = "/workspace"

// inWorkspace turns /workspace/NAME into NAME; other names are unchanged.
func inWorkspace(name string) string {
	switch {
	case name == WorkspacePath || name == WorkspacePath+"/":
		return "."
	case strings.HasPrefix(name, WorkspacePath+"/"):
		return strings.TrimPrefix(name, WorkspacePath+"/")
	}
	return name
}

// outside reports whether a name is outside the workspace: absolute.
func outside(name string) bool { return strings.HasPrefix(name, "/") }

// call expands a command's patterns, asks Decide about it, and runs it.
func (sh *Shell) call(ctx context.Context, c *call, in []byte, out io.Writer) error {
	name := c.args[0].text
	cmd, known := mediator.ShellCommandFor(name)
	args, err := sh.expand(c.args[1:])
	if err != nil {
		return undecided{err}
	}
	if !known && sh.Programs != nil {
		return sh.callProgram(ctx, c, name, args, in, out)
	}
	for i := range args {
		args[i] = inWorkspace(args[i])
	}
	c.in, c.out = inWorkspace(c.in), inWorkspace(c.out)
	reads, writes := operands(name, args)
	if c.in != "" {
		reads = append(reads, c.in)
	}
	if c.out != "" {
		writes = append(writes, c.out)
	}
	step := mediator.ShellStep{Command: name, Writes: known && cmd.Writes || c.out != ""}
	// ls, find and grep -r walk the directories they name; outside the
	// workspace only files are read, by name (ListsOutside).
	walks := name == "ls" || name == "find" || name == "grep" && slices.ContainsFunc(args, func(a string) bool {
		return strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "r")
	})
	for _, r := range reads {
		step.ReadsOutside = step.ReadsOutside || outside(r)
		step.ListsOutside = step.ListsOutside || walks && outside(r)
		step.Paths = append(step.Paths, pathName(r))
	}
	for _, w := range writes {
		step.WritesOutside = step.WritesOutside || outside(w)
		step.Writes = true
		step.Paths = append(step.Paths, pathName(w))
	}
	// A workspace name that climbs out ("../../x") or that no workspace
	// may hold is refused here, before it is put to Decide as if it were
	// inside: it is a refusal, on record as one, not a failed command.
	for _, p := range step.Paths {
		if !outside(p) {
			if _, err := workspace.Clean(p); err != nil {
				return undecided{err}
			}
		}
	}
	if sh.Decide == nil {
		return refused{mediator.Errorf(mediator.CodeShellNotAllowed, "this shell has no one to decide its commands, so it runs none")}
	}
	done, err := sh.Decide(ctx, step)
	if err != nil {
		return refused{err}
	}
	err = sh.run(ctx, c, name, args, in, out)
	done(err)
	if enforcedByWorkspace(err) {
		// The command was allowed, and the workspace then refused what it
		// tried (a link out, the quota, a file that is not regular): the
		// executed record says it failed, and the refusal is a denial too.
		return undecided{err}
	}
	return err
}

// enforcedByWorkspace reports whether err is the workspace refusing
// something, rather than a command failing (a missing file).
func enforcedByWorkspace(err error) bool {
	switch mediator.CodeOf(err) {
	case mediator.CodePathNotAllowed, mediator.CodeQuotaExceeded:
		return true
	}
	return false
}

// pathName is how a step names a path: an outside name cleaned, so the
// person's answer about it is about the file that is read; a workspace
// name as given, relative to the workspace.
func pathName(p string) string {
	if outside(p) {
		return path.Clean(p)
	}
	return p
}

// run runs one allowed command with its redirects.
func (sh *Shell) run(ctx context.Context, c *call, name string, args []string, in []byte, out io.Writer) error {
	if c.in != "" {
		var err error
		if in, err = sh.read(c.in); err != nil {
			return err
		}
	}
	target := out
	var buf *bytes.Buffer
	if c.out != "" {
		buf = &bytes.Buffer{}
		target = &limited{w: buf, n: MaxOutputBytes}
	}
	var err error
	if _, known := mediator.ShellCommandFor(name); known {
		err = sh.builtin(ctx, name, args, in, target)
	} else {
		err = sh.program(ctx, append([]string{name}, args...), in, target)
	}
	if err != nil {
		return err
	}
	if buf != nil {
		return sh.WS.WriteFile(c.out, buf.Bytes(), c.append)
	}
	return nil
}

// expand resolves patterns inside the workspace, one directory level at
// a time: "notes/*.txt" lists notes/. A pattern outside the workspace, or
// one that matches nothing, is refused.
func (sh *Shell) expand(ws []word) ([]string, error) {
	var out []string
	for _, w := range ws {
		if !w.glob {
			out = append(out, w.text)
			continue
		}
		if outside(w.text) {
			return nil, mediator.Errorf(mediator.CodePathNotAllowed, "the pattern %q is outside the workspace; patterns match inside it only", mediator.Truncate(w.text, 80))
		}
		dir, pat := path.Split(w.text)
		if strings.ContainsAny(dir, "*?[") {
			return nil, refuse("a pattern may only be in the last part of a name (%q)", mediator.Truncate(w.text, 80))
		}
		if _, err := path.Match(pat, ""); err != nil {
			return nil, refuse("%q is not a valid pattern", mediator.Truncate(w.text, 80))
		}
		ents, err := sh.WS.ReadDir(orDot(dir))
		if err != nil {
			return nil, err
		}
		n := len(out)
		for _, e := range ents {
			if ok, _ := path.Match(pat, e.Name()); ok && (!strings.HasPrefix(e.Name(), ".") || strings.HasPrefix(pat, ".")) {
				out = append(out, dir+e.Name())
			}
		}
		if len(out) == n {
			return nil, mediator.Errorf(mediator.CodeNotFound, "%s: no match", mediator.Truncate(w.text, 80))
		}
	}
	return out, nil
}

func orDot(dir string) string {
	if dir == "" {
		return "."
	}
	return strings.TrimSuffix(dir, "/")
}

// operands says which arguments a command reads and which it writes.
func operands(name string, args []string) (reads, writes []string) {
	var files []string
	skipNext := false
	for i, a := range args {
		switch {
		case skipNext:
			skipNext = false
		case (name == "head" || name == "tail") && a == "-n", name == "find" && (a == "-name" || a == "-type"):
			skipNext = true
		case strings.HasPrefix(a, "-") && len(a) > 1:
		case name == "grep" && !slices.ContainsFunc(args[:i], func(s string) bool { return !strings.HasPrefix(s, "-") }):
			// grep's first operand is its pattern, not a file
		default:
			files = append(files, a)
		}
	}
	switch name {
	case "mkdir", "touch", "rm":
		return nil, files
	case "mv":
		return nil, files
	case "cp":
		if len(files) > 0 {
			return files[:len(files)-1], files[len(files)-1:]
		}
	case "echo", "pwd":
		return nil, nil
	}
	return files, nil
}

// read reads a file inside the workspace, or outside for a high session
// (Decide has allowed it by then), through os.Root either way.
func (sh *Shell) read(name string) ([]byte, error) {
	if !outside(name) {
		return sh.WS.ReadFile(name, MaxOutputBytes)
	}
	if sh.Outside == nil {
		return nil, mediator.Errorf(mediator.CodePathNotAllowed, "%s is outside the workspace", mediator.Truncate(name, 80))
	}
	f, err := sh.Outside.OpenFile(strings.TrimPrefix(path.Clean(name), "/"), os.O_RDONLY|openNoWait, 0)
	if err != nil {
		return nil, mediator.Errorf(mediator.CodeNotFound, "%s: %v", mediator.Truncate(name, 80), errText(err))
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, mediator.Errorf(mediator.CodeBadRequest, "%s is not a regular file", mediator.Truncate(name, 80))
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxOutputBytes+1))
	if err != nil {
		return nil, mediator.Errorf(mediator.CodeBadRequest, "%s: %v", mediator.Truncate(name, 80), errText(err))
	}
	if len(b) > MaxOutputBytes {
		return nil, mediator.Errorf(mediator.CodeTooLarge, "%s is larger than %d bytes", mediator.Truncate(name, 80), MaxOutputBytes)
	}
	return b, nil
}

func errText(err error) string {
	var pe *fs.PathError
	if ok := asPathError(err, &pe); ok {
		return pe.Err.Error()
	}
	return err.Error()
}
