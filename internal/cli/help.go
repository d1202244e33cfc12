package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
)

// spec is what a person reads about one command: the line they type, what
// it does, its positional arguments and examples. The top-level help, each
// command's --help and docs/commands.md's table are all made from (or,
// for the table, checked against) these.
type spec struct {
	name     string // "install", "prefs list"
	synopsis string // what follows "nmhost NAME"
	summary  string
	args     [][2]string // positional arguments: name, meaning
	examples []string
	minArgs  int
	maxArgs  int // -1: any number
}

var specs = []*spec{
	{name: "demo", synopsis: "[--keep] [--data-dir DIR]",
		summary: "the demonstration: the host at work, driven the way Chrome drives it, with no browser",
		examples: []string{
			"go run ./cmd/nmhost demo      # from the repository root; the first run downloads and compiles for a few minutes",
			"nmhost demo --keep           # keep its data dir, to browse it with nmhost serve",
		}},
	{name: "install", synopsis: "--extension-id ID [--browser B] [--system] [--user-data-dir DIR]",
		summary: "writes the host manifest for each browser and admits the extension's origin",
		examples: []string{
			"nmhost install --extension-id kfdflodbjjhffjcgfmobmhlinchkhdlj",
			"nmhost install --extension-id agents@example.org --browser firefox",
		}},
	{name: "uninstall", synopsis: "[--extension-id ID] [--browser B] [--system] [--user-data-dir DIR]",
		summary: "removes the manifests nmhost wrote; with --extension-id, no longer admits those callers",
		examples: []string{
			"nmhost uninstall --browser all",
			"nmhost uninstall --extension-id kfdflodbjjhffjcgfmobmhlinchkhdlj",
		}},
	{name: "doctor", synopsis: "[--extension-id ID] [--browser B] [--system] [--user-data-dir DIR]",
		summary: "checks manifest, name, origin, binary path, data dir and its rights, config, store; each failure ends in its fix; exits 1 on a failure",
		examples: []string{
			"nmhost doctor --extension-id kfdflodbjjhffjcgfmobmhlinchkhdlj",
			"nmhost doctor --browser all",
		}},
	{name: "check", synopsis: "[--level L] AGENT",
		summary: "tries a built-in hostile corpus against an installed agent's stored profile and grants (URL spellings, redirects, names resolving to private addresses, other origins, workspace escapes, every operation) and prints one line per rule; only its own loopback servers are contacted, nothing of yours is written; exits 1 when a rule did not fire",
		args:    [][2]string{{"AGENT", "an installed agent's id"}},
		examples: []string{
			"nmhost check fetcher",
			"nmhost check --level high fetcher",
		},
		minArgs: 1, maxArgs: 1},
	{name: "denials", synopsis: "[--agent A] [--permission P] [--code C] [--since T] [--until T] [--limit N] [--follow] [--json]",
		summary: "prints the denial log; --follow tails it, also for records other host processes write",
		examples: []string{
			"nmhost denials --agent fetcher --since 1h",
			"nmhost denials --code host_not_allowed --json",
		}},
	{name: "run", synopsis: "--profile P.json [--input TEXT] [--page FILE.html] [--session ID] [--level L] [--yes-to OP]... MODULE.wasm",
		summary: "runs an agent without a browser under the same mediation; prompts go to the terminal (denied when stdin is not one); exits 1 on a link-time denial, trap, timeout or other failed run",
		args:    [][2]string{{"MODULE.wasm", "the agent's WebAssembly module (flags may also come after it)"}},
		examples: []string{
			"GOOS=wasip1 GOARCH=wasm go build -o f.wasm ./examples/agents/fetcher",
			"nmhost run --profile examples/agents/fetcher/profile.json --input https://example.com/ f.wasm",
		},
		minArgs: 1, maxArgs: 1},
	{name: "inspect", synopsis: "[--json] MODULE.wasm or AGENT.py",
		summary: "reads a module's imports and code (or a Python agent's restricted_api references): the smallest permission set it needs, how sure that is, whether it is pure work; opens no data dir",
		args:    [][2]string{{"MODULE.wasm or AGENT.py", "the agent's WebAssembly module, or a Python agent's source (a name ending in .py)"}},
		examples: []string{
			"nmhost inspect f.wasm",
			"nmhost inspect examples/agents/python/word_count.py",
			"nmhost inspect --json f.wasm | jq .permissionSet",
		},
		minArgs: 1, maxArgs: 1},
	{name: "workflow run", synopsis: "[--session ID] [--level L] [--agent ID] [--yes-to-layers] [--json] FILE",
		summary: "runs a workflow of installed agents, or an agent's script converted to its workflow first: its whole plan decided before anything runs (a task the policy would refuse refuses the workflow), one prompt for the plan's tasks that need a person (refused when stdin is not a terminal), then layer by layer; exits 1 when a task that is not safe to fail failed",
		args:    [][2]string{{"FILE", "the workflow, FILE.json: {\"id\", \"tasks\": [{\"id\", \"dependsOn\", \"run\"|\"call\"|\"mcp\"|\"code\"}]} (docs/permissions.md, \"Workflows\"); or an agent's script, FILE.ts or FILE.js, converted as `nmhost workflow plan` shows (docs/scripts.md)"}},
		examples: []string{
			"nmhost workflow run digest.json",
			"nmhost workflow run --yes-to-layers --json digest.json",
			"nmhost workflow run --agent reporter average-age.ts",
		},
		minArgs: 1, maxArgs: 1},
	{name: "workflow plan", synopsis: "[--agent ID] FILE",
		summary: "prints the workflow an agent's script is, before anything runs, as JSON: its tasks (tool calls as mcp tasks, pure code as JavaScript steps) and its layout (layers, fused pure layers, the layers a person approves); a script the converter cannot prove is refused with its reason code, line and column; opens no data dir",
		args:    [][2]string{{"FILE", "an agent's script, FILE.js or FILE.ts (TypeScript), or a workflow, FILE.json"}},
		examples: []string{
			"nmhost workflow plan average-age.ts",
			"nmhost workflow plan average-age.ts | jq .layout.needsPerson",
		},
		minArgs: 1, maxArgs: 1},
	{name: "session set", synopsis: "[--level L] ID",
		summary:  "creates a session (medium) or changes its permission level; the same settings as the viewer's PUT /api/sessions/:id/settings",
		args:     [][2]string{{"ID", "the session's id: any text up to 256 bytes without control or invisible format characters"}},
		examples: []string{"nmhost session set --level low chat-1"},
		minArgs:  1, maxArgs: 1},
	{name: "session show", synopsis: "ID",
		summary:  "prints a session's level and workspace directory",
		args:     [][2]string{{"ID", "the session's id"}},
		examples: []string{"nmhost session show chat-1"},
		minArgs:  1, maxArgs: 1},
	{name: "session list", synopsis: "[--json]",
		summary:  "lists the sessions (id, level, created, updated, workspace directory), the most recently changed first; the same store as the viewer's PUT /api/sessions/:id/settings and the extension's set-session",
		examples: []string{"nmhost session list", "nmhost session list --json"},
		maxArgs:  0},
	{name: "shell", synopsis: "--session ID [-c COMMAND]",
		summary: "the session shell over the session's workspace, at its level: ls, cat, head, tail, wc, grep, find, mkdir, touch, cp, mv, rm, echo, pwd, in Go, never a process; each command decided and recorded; -c runs one and exits 1 on a refusal",
		examples: []string{
			"nmhost shell --session chat-1 -c 'ls -R'",
			"nmhost shell --session chat-1",
		}},
	{name: "grant", synopsis: "AGENT PERMISSION",
		summary: "grants a permission the agent's profile asks for, and ends a revocation of it",
		args:    [][2]string{{"AGENT", "the agent's id (agentId in its profile)"}, {"PERMISSION", "one of " + permissionNames()}},
		examples: []string{
			"nmhost grant fetcher network.fetch",
		},
		minArgs: 2, maxArgs: 2},
	{name: "revoke", synopsis: "AGENT PERMISSION",
		summary: "revokes a grant; it stays revoked when the same profile and module are installed again",
		args:    [][2]string{{"AGENT", "the agent's id (agentId in its profile)"}, {"PERMISSION", "one of " + permissionNames()}},
		examples: []string{
			"nmhost revoke fetcher network.fetch",
		},
		minArgs: 2, maxArgs: 2},
	{name: "policy list", synopsis: "[--json]",
		summary:  "lists every rule in force with where it comes from: the administrator's policy file (/etc/nmhost/policy.json on Linux; docs/fleet.md), then the person's own grants and remembered answers",
		examples: []string{"nmhost policy list", "nmhost policy list --json"},
		maxArgs:  0},
	{name: "prefs list", synopsis: "[--agent A] [--json]",
		summary:  "lists the remembered answers: each with its scope (always, session, 24h, allow-and-log), when it ends, its last use and the agent's code it holds for",
		examples: []string{"nmhost prefs list --agent fetcher"}},
	{name: "prefs revoke", synopsis: "ID",
		summary:  "forgets one remembered answer: the next such operation asks again",
		args:     [][2]string{{"ID", "the answer's id, from nmhost prefs list"}},
		examples: []string{"nmhost prefs revoke 3"},
		minArgs:  1, maxArgs: 1},
	{name: "audit verify", synopsis: "[--checkpoint FILE] [--json]",
		summary:  "checks every record of the audit log against its hash and the signed tree; with a checkpoint kept elsewhere, that the log still extends it; exits 1 at the first edited, removed, reordered or truncated record",
		examples: []string{"nmhost audit verify", "nmhost audit verify --checkpoint ~/audit-checkpoint.txt"}},
	{name: "audit key", synopsis: "",
		summary:  "prints the audit log's verifier key (the signing key is created owner-only in the data dir on first use)",
		examples: []string{"nmhost audit key > ~/nmhost-audit.vkey"}},
	{name: "audit checkpoint", synopsis: "",
		summary:  "prints the latest signed tree head; keep it outside the data dir and verify against it later",
		examples: []string{"nmhost audit checkpoint > ~/audit-checkpoint.txt"}},
	{name: "audit prove", synopsis: "SEQ",
		summary:  "prints an inclusion proof of record SEQ that anyone with the verifier key can check",
		args:     [][2]string{{"SEQ", "the record's number, from nmhost audit tail"}},
		examples: []string{"nmhost audit prove 42 > proof.json"},
		minArgs:  1, maxArgs: 1},
	{name: "audit check-proof", synopsis: "--key VKEY [FILE]",
		summary:  "checks a proof from nmhost audit prove with the verifier key alone; opens no data dir",
		args:     [][2]string{{"FILE", "the proof; - or none: standard input"}},
		examples: []string{"nmhost audit check-proof --key \"$(cat ~/nmhost-audit.vkey)\" proof.json"},
		minArgs:  0, maxArgs: 1},
	{name: "audit tail", synopsis: "[-n N] [--follow] [--json]",
		summary:  "prints the last records of the audit trail",
		examples: []string{"nmhost audit tail -n 50", "nmhost audit tail --follow --json"}},
	{name: "export", synopsis: "--otlp-endpoint URL [--follow] [--retry-for D] [--unsafe-insecure]",
		summary: "ships every audit record, denial and signed checkpoint to an OpenTelemetry Collector as OTLP/HTTP logs (docs/fleet.md), from where the last export's acknowledgement left off; --follow keeps shipping; exits 1 when the collector refuses or stays unreachable",
		examples: []string{
			"nmhost export --otlp-endpoint http://127.0.0.1:4318",
			"nmhost export --otlp-endpoint https://otel.example.com:4318/v1/logs --follow",
		}},
	{name: "serve", synopsis: "[--port N] [--open] [--bind ADDR [--unsafe-bind]]",
		summary: "the local denial-log viewer and session gateway (docs/viewer.md); prints http://127.0.0.1:PORT/#token=TOKEN first (the token in the fragment, never sent to a server)",
		examples: []string{
			"nmhost serve --open",
			"NMHOST_DATA_DIR=/tmp/nmhost-demo-123 nmhost serve --port 8700",
		}},
	{name: "mcp", synopsis: "[--http ADDR] [--server NAME] [--agent ID] [--session ID] [--yes-to mcp.call]",
		summary: "the MCP gateway (docs/mcp.md): serves the tools of the MCP servers configured in the data directory's mcp.json, each named SERVER.TOOL (with --server, one server's under their own names), over stdio (default) or Streamable HTTP on a loopback ADDR (Authorization: Bearer with the viewer-token file's token); every call is decided and recorded before it is forwarded",
		examples: []string{
			"nmhost mcp",
			"nmhost mcp --http 127.0.0.1:8711",
			"nmhost mcp --server filesystem",
		}},
	{name: "version", synopsis: "", summary: "prints the host's version and protocol version",
		examples: []string{"nmhost version"}},
	{name: "help", synopsis: "[COMMAND]", summary: "prints the help, or a command's",
		args:     [][2]string{{"COMMAND", "a command, such as run or \"prefs list\""}},
		examples: []string{"nmhost help run", "nmhost help prefs revoke"},
		maxArgs:  2},
}

// groups are commands made of subcommands.
var groups = map[string]string{
	"prefs":    "the remembered answers, with their scope and end",
	"audit":    "the tamper-evident audit trail",
	"workflow": "graphs of agent tasks, or agents' scripts turned into them, their whole plan decided before they run",
	"session":  "sessions: a permission level and a workspace each",
}

func specFor(name string) *spec {
	for _, s := range specs {
		if s.name == name {
			return s
		}
	}
	panic("cli: no spec for " + name)
}

// usageLine is the command as docs/commands.md's table and the help show it.
func (s *spec) usageLine() string {
	return strings.TrimSpace("nmhost " + s.name + " " + s.synopsis)
}

// topUsage is `nmhost --help`.
func topUsage() string {
	var b strings.Builder
	b.WriteString("nmhost: a native-messaging host that runs browser agents under default-deny rules.\n\nUsage:\n")
	for _, s := range specs {
		fmt.Fprintf(&b, "  %s\n      %s\n", s.usageLine(), s.summary)
	}
	b.WriteString(`
Browsers launch it as: nmhost chrome-extension://ID/ (Firefox: nmhost MANIFEST.json ADDON-ID);
only that first argument makes it a host.
Every file lives in $NMHOST_DATA_DIR, or the per-user data directory when it is unset.
Run 'nmhost COMMAND --help' for a command's flags and examples.
`)
	return b.String()
}

// groupUsage is `nmhost prefs --help`.
func groupUsage(group string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "nmhost %s: %s.\n\nUsage:\n", group, groups[group])
	for _, s := range specs {
		if strings.HasPrefix(s.name, group+" ") {
			fmt.Fprintf(&b, "  %s\n      %s\n", s.usageLine(), s.summary)
		}
	}
	fmt.Fprintf(&b, "\nRun 'nmhost %s SUBCOMMAND --help' for its flags and examples.\n", group)
	return b.String()
}

// printHelp writes a command's help: usage, what it does, arguments,
// flags and examples.
func printHelp(w io.Writer, s *spec, fs *flag.FlagSet) {
	fmt.Fprintf(w, "Usage: %s\n\n%s.\n", s.usageLine(), upperFirst(s.summary))
	if len(s.args) > 0 {
		fmt.Fprintf(w, "\nArguments:\n")
		for _, a := range s.args {
			fmt.Fprintf(w, "  %-12s %s\n", a[0], a[1])
		}
	}
	if fs != nil {
		first := true
		fs.VisitAll(func(f *flag.Flag) {
			if first {
				fmt.Fprintf(w, "\nFlags:\n")
				first = false
			}
			value, usage := flag.UnquoteUsage(f)
			dash := "--"
			if len(f.Name) == 1 {
				dash = "-"
			}
			name := dash + f.Name
			if value != "" {
				name += " " + value
			}
			fmt.Fprintf(w, "  %s\n      %s", name, usage)
			if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "[]" {
				fmt.Fprintf(w, " (default %s)", f.DefValue)
			}
			fmt.Fprintln(w)
		})
	}
	if len(s.examples) > 0 {
		fmt.Fprintf(w, "\nExamples:\n")
		for _, e := range s.examples {
			fmt.Fprintf(w, "  %s\n", e)
		}
	}
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// errHelp: the help was printed on stdout; the command exits 0.
var errHelp = errors.New("help shown")

// usageError is a command line that cannot be run: the one thing wrong
// with it. Main prints it with a pointer to --help and exits 2.
type usageError struct {
	cmd string
	msg string
}

func (e *usageError) Error() string { return e.msg }

func usagef(cmd, format string, args ...any) error {
	return &usageError{cmd: cmd, msg: fmt.Sprintf(format, args...)}
}

var longFlag = lazyRegexp(`(^|\s)-([A-Za-z][A-Za-z0-9-]+)`)

func isHelpArg(a string) bool { return a == "-h" || a == "--help" || a == "-help" }

// parse parses a command's flags and returns its positional arguments.
// Flags may come before and after positional arguments (nmhost run
// f.wasm --profile p.json); "--" ends the flags. -h and --help print the
// help on stdout and nothing runs.
func parse(s *spec, fs *flag.FlagSet, env Env) ([]string, error) {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	var pos []string
	args := env.Args
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			printHelp(env.Stdout, s, fs)
			return nil, errHelp
		}
		if err != nil {
			// The flag package names flags with one dash; people type two.
			return nil, usagef(s.name, "%s", longFlag().ReplaceAllString(err.Error(), "$1--$2"))
		}
		rest := fs.Args()
		consumed := len(args) - len(rest)
		if consumed > 0 && args[consumed-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		if len(rest) == 0 {
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	switch {
	case len(pos) < s.minArgs:
		missing := []string{}
		for _, a := range s.args[len(pos):s.minArgs] {
			missing = append(missing, a[0])
		}
		return nil, usagef(s.name, "needs %s", strings.Join(missing, " and "))
	case s.maxArgs >= 0 && len(pos) > s.maxArgs:
		return nil, usagef(s.name, "unexpected argument %q", pos[s.maxArgs])
	}
	return pos, nil
}

// runHelp is `nmhost help [COMMAND]`.
func runHelp(ctx context.Context, env Env) error {
	name := strings.Join(env.Args, " ")
	switch {
	case name == "":
		fmt.Fprint(env.Stdout, topUsage())
		return nil
	case isHelpArg(name):
		printHelp(env.Stdout, specFor("help"), nil)
		return errHelp
	case groups[name] != "":
		fmt.Fprint(env.Stdout, groupUsage(name))
		return nil
	}
	for _, s := range specs {
		if s.name == name {
			// The flags are registered by the command itself: ask it.
			sub := env
			sub.Args = append(strings.Fields(name), "--help")
			return route(ctx, sub)
		}
	}
	return usagef("help", "no command %q", name)
}

// lazyRegexp compiles expr on first use, not at package init: every
// command of the binary runs every package's init, and a host started for
// one message should not pay for patterns it never matches.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
