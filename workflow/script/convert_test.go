package script

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/workflow"
)

// graph is a converted workflow in short: each task as
// id=kind[deps], kind being mcp:server.tool or the pure step's operation.
func graph(s workflow.Spec) string {
	var out []string
	for _, t := range s.Tasks {
		kind := ""
		switch {
		case t.MCP != nil:
			kind = "mcp:" + t.MCP.Server + "." + t.MCP.Tool
		case t.Code != nil:
			kind = t.Code.Op
		}
		deps := ""
		if len(t.DependsOn) > 0 {
			deps = "[" + strings.Join(t.DependsOn, ",") + "]"
		}
		out = append(out, t.ID+"="+kind+deps)
	}
	return strings.Join(out, " ")
}

// TestScripts is the table of scripts: what converts, to which graph, and
// what is refused, with which code, where. Hostile ones are among them.
func TestScripts(t *testing.T) {
	deep := strings.Repeat("(", 300) + "1" + strings.Repeat(")", 300)
	nots := "const x = " + strings.Repeat("!", 300) + "true;"
	for _, tc := range []struct {
		name, file, src string
		graph           string        // converts to this
		want            mediator.Code // or is refused with this
		at              string        // line:column of the refusal
	}{
		// What converts.
		{name: "the average-age script (TypeScript)", file: "testdata/average-age.ts",
			graph: "users=mcp:db.query active=code:filter[users] totalAge=code:reduce[active] avgAge=code:divide[active,totalAge] rounded=code:Math.round[avgAge] slack.send=mcp:slack.send[rounded,users]"},
		{name: "filter, reduce, length, divide", file: "testdata/filter-divide.js",
			graph: "orders=mcp:shop.listOrders large=code:filter[orders] sum=code:reduce[large] count=code:get_length[large] mean=code:divide[count,sum] reports.publish=mcp:reports.publish[mean,orders]"},
		{name: "literal arguments stay JSON", src: `await mcp.db.put({ k: "a", n: -1.5, list: [1, true, null], nested: { x: ` + "`plain`" + ` } });`,
			graph: "db.put=mcp:db.put"},
		{name: "no arguments", src: `const now = await mcp.clock.now();`, graph: "now=mcp:clock.now"},
		{name: "tool calls keep the script's order", src: "await mcp.a.one({});\nawait mcp.b.two({});\nawait mcp.a.one({});",
			graph: "a.one=mcp:a.one b.two=mcp:b.two[a.one] a.one-2=mcp:a.one[b.two]"},
		{name: "let, assigned again", src: "let x = 1;\nx = x + 1;\nx += 2;\nawait mcp.s.t({ x });",
			graph: "x=code:expr x-2=code:add[x] x-3=code:add[x-2] s.t=mcp:s.t[x-3]"},
		{name: "if on a pure condition", src: "const r = await mcp.s.get();\nlet label = \"small\";\nif (r.n > 10) { label = \"big\"; } else { label = \"tiny\"; }\nawait mcp.s.put({ label });",
			graph: "r=mcp:s.get label=code:expr label-2=code:logic[label,r] s.put=mcp:s.put[label-2,r]"},
		{name: "an if that assigns nothing has no task", src: "const a = 1;\nif (a > 0) { const b = 2; }", graph: "a=code:expr"},
		{name: "a loop of tool calls over a literal array unrolls", src: "for (const ch of [\"#a\", \"#b\"]) {\n  await mcp.slack.send({ channel: ch, text: \"hi\" });\n}",
			graph: "ch=code:expr slack.send=mcp:slack.send[ch] ch-2=code:expr slack.send-2=mcp:slack.send[ch-2,slack.send]"},
		{name: "a loop over a const array literal", src: "const ids = [1, 2, 3];\nfor (const id of ids) { const row = await mcp.db.get({ id }); }",
			graph: "ids=code:expr id=code:expr row=mcp:db.get[id] id-2=code:expr row-2=mcp:db.get[id-2,row] id-3=code:expr row-3=mcp:db.get[id-3,row-2]"},
		{name: "a pure loop", src: "const xs = await mcp.s.list();\nlet total = 0;\nfor (const x of xs) { total += x.n; }\nreturn total;",
			graph: "xs=mcp:s.list total=code:expr total-2=code:computation[total,xs] return=code:expr[total-2]"},
		{name: "a function of the script", src: "function mean(xs) { return xs.reduce((a, b) => a + b, 0) / xs.length; }\nconst xs = await mcp.s.list();\nconst m = mean(xs);",
			graph: "xs=mcp:s.list m=code:computation[xs]"},
		{name: "JSON, Object and Math", src: "const raw = await mcp.s.get();\nconst o = JSON.parse(raw.body);\nconst keys = Object.keys(o);\nconst top = Math.max(...Object.values(o));\nconst text = JSON.stringify({ keys, top });",
			graph: "raw=mcp:s.get o=code:JSON.parse[raw] keys=code:Object.keys[o] top=code:Math.max[o] text=code:JSON.stringify[keys,top]"},
		{name: "optional chaining, ternary, strings", src: "const u = await mcp.s.me();\nconst name = u?.name ? u.name.trim().toUpperCase() : \"anon\";\nconst words = name.split(\" \").join(\"-\");",
			graph: "u=mcp:s.me name=code:logic[u] words=code:join[name]"},
		{name: "sorting a copy", src: "const xs = await mcp.s.list();\nconst sorted = [...xs].sort((a, b) => a - b);\nconst byName = xs.slice().reverse();",
			graph: "xs=mcp:s.list sorted=code:sort[xs] byName=code:reverse[xs]"},
		{name: "a reduce into an object it made", src: "const xs = await mcp.s.list();\nconst byDept = xs.reduce((acc, u) => { acc[u.dept] = (acc[u.dept] || 0) + 1; return acc; }, {});\nconst ids = xs.reduce((acc, u) => { acc.push(u.id); return acc; }, []);",
			graph: "xs=mcp:s.list byDept=code:reduce[xs] ids=code:reduce[xs]"},
		{name: "a regular expression that runs in linear time", src: "const s = await mcp.s.text();\nconst clean = s.body.replace(/[^a-z0-9]+/gi, \" \");\nconst found = s.body.match(/id=(\\d+)/);",
			graph: "s=mcp:s.text clean=code:replace[s] found=code:match[s]"},
		{name: "TypeScript types, casts and generics", file: "x.ts", src: "interface Row { id: number; tags?: string[] }\nconst rows = (await mcp.db.rows()) as Row[];\nconst ids: number[] = rows.map((r: Row): number => r.id);\nfunction first<T>(xs: T[]): T | undefined { return xs[0]; }\nconst f = first<number>(ids);",
			graph: "rows=mcp:db.rows ids=code:map[rows] f=code:computation[ids]"},
		{name: "TypeScript: types and generics", file: "x.ts", src: "interface Row { id: number }\nconst rows: Row[] = await mcp.db.rows();\nconst ids: number[] = rows.map((r: Row): number => r.id);\nfunction first<T>(xs: T[]): T | undefined { return xs[0]; }\nconst f = first<number>(ids);",
			graph: "rows=mcp:db.rows ids=code:map[rows] f=code:computation[ids]"},
		{name: "two branches that need each other not", src: "const a = await mcp.s.a();\nconst x = a.n * 2;\nconst y = a.m - 1;\nreturn { x, y };",
			graph: "a=mcp:s.a x=code:multiply[a] y=code:subtract[a] return=code:expr[x,y]"},
		{name: "a tool call as the script's result", src: "return await mcp.s.done({});", graph: "return=mcp:s.done"},

		// What is refused, and where.
		{name: "eval", src: "const a = 1;\nconst b = eval(\"a + 1\");", want: mediator.CodeUnsafeOperation, at: "2:11"},
		{name: "new Function", src: "const f = new Function(\"return 1\");", want: mediator.CodeUnsafeOperation, at: "1:11"},
		{name: "Function called", src: "const f = Function(\"return 1\");", want: mediator.CodeUnsafeOperation, at: "1:11"},
		{name: "import", src: "import fs from \"fs\";\nconst a = 1;", want: mediator.CodeUnsafeOperation, at: "1:1"},
		{name: "import in TypeScript is kept to be refused", file: "x.ts", src: "import { x } from \"./y\";\nconst a: number = 1;", want: mediator.CodeUnsafeOperation, at: "1:1"},
		{name: "a dynamic import", src: "const m = await import(\"fs\");", want: mediator.CodeUnsafeOperation, at: "1:17"},
		{name: "require", src: "const fs = require(\"fs\");", want: mediator.CodeUnsafeOperation, at: "1:12"},
		{name: "fetch", src: "const r = await fetch(\"http://127.0.0.1/\");", want: mediator.CodeUnsafeOperation, at: "1:17"},
		{name: "fetch not awaited", src: "const r = fetch(\"http://127.0.0.1/\");", want: mediator.CodeUnsafeOperation, at: "1:11"},
		{name: "a timer", src: "const t = setTimeout(() => 1, 10);", want: mediator.CodeUnsafeOperation, at: "1:11"},
		{name: "process", src: "const k = process.env.KEY;", want: mediator.CodeUnsafeOperation, at: "1:11"},
		{name: "console", src: "const a = 1;\nconsole.log(a);", want: mediator.CodeUnsafeOperation, at: "2:1"},
		{name: "Promise.all", src: "const a = Promise.all([]);", want: mediator.CodeUnsafeOperation, at: "1:11"},
		{name: "WebSocket", src: "const w = new WebSocket(\"ws://127.0.0.1/\");", want: mediator.CodeUnsafeOperation, at: "1:11"},
		{name: "a dynamic server name", src: "const s = \"db\";\nconst r = await mcp[s].query({});", want: mediator.CodeNotPure, at: "2:17"},
		{name: "a dynamic tool name", src: "const t = \"drop\";\nawait mcp.db[t]({});", want: mediator.CodeNotPure, at: "2:7"},
		{name: "mcp as a value", src: "const m = mcp;", want: mediator.CodeNotPure, at: "1:11"},
		{name: "a tool name that is no plain name", src: "await mcp.db.$drop({});", want: mediator.CodeNotPure, at: "1:7"},
		{name: "constructor.constructor", src: "const a = [];\nconst f = a.constructor.constructor(\"return process\")();", want: mediator.CodeNotPure, at: "2:13"},
		{name: "constructor by a string", src: "const a = {};\nconst f = a[\"constructor\"];", want: mediator.CodeNotPure, at: "2:13"},
		{name: "prototype pollution through __proto__", src: "const o = JSON.parse(\"{}\");\nconst p = o.__proto__;", want: mediator.CodeNotPure, at: "2:13"},
		{name: "prototype pollution in a reduce", src: "const xs = await mcp.s.list();\nconst o = xs.reduce((acc, x) => { acc[\"__proto__\"].admin = true; return acc; }, {});", want: mediator.CodeNotPure, at: "2:39"},
		{name: "an object literal that sets its prototype", src: "const o = { __proto__: { admin: true } };", want: mediator.CodeNotPure, at: "1:13"},
		{name: "a getter with a side effect", src: "let n = 0;\nconst o = { get x() { n++; return n; } };", want: mediator.CodeNotPure, at: "2:17"},
		{name: "a setter", src: "const o = { set x(v) {} };", want: mediator.CodeNotPure, at: "1:17"},
		{name: "a method (toString runs when the object is read)", src: "const o = { toString() { return \"x\"; } };\nconst s = `${o}`;", want: mediator.CodeNotPure, at: "1:13"},
		{name: "__defineGetter__", src: "const o = {};\nconst x = o.__defineGetter__(\"a\", () => 1);", want: mediator.CodeNotPure, at: "2:13"},
		{name: "Object.defineProperty", src: "const o = {};\nconst x = Object.defineProperty(o, \"a\", { get: () => 1 });", want: mediator.CodeNotPure, at: "2:11"},
		{name: "a tool call not awaited", src: "const r = mcp.db.query({});", want: mediator.CodeNotPure, at: "1:11"},
		{name: "a tool call inside an expression", src: "const n = (await mcp.db.query({})).length;", want: mediator.CodeNotPure, at: "1:12"},
		{name: "a tool call under a condition", src: "const r = await mcp.s.get();\nif (r.ok) { await mcp.s.put({}); }", want: mediator.CodeNotPure, at: "2:13"},
		{name: "a tool call in a loop over data", src: "const xs = await mcp.s.list();\nfor (const x of xs) { await mcp.s.put({ x }); }", want: mediator.CodeNotPure, at: "2:17"},
		{name: "a tool call in a while loop", src: "let i = 0;\nwhile (i < 3) { await mcp.s.put({}); i++; }", want: mediator.CodeNotPure, at: "2:17"},
		{name: "a loop of tool calls past the bound", src: "for (const x of [" + strings.Repeat("1,", 101) + "]) { await mcp.s.put({ x }); }", want: mediator.CodeNotPure, at: "1:17"},
		{name: "a huge script", src: "const a = \"" + strings.Repeat("x", MaxScriptBytes) + "\";", want: mediator.CodeTooLarge, at: "1:1"},
		{name: "a huge literal in a step", src: "const a = \"" + strings.Repeat("x", 20<<10) + "\";", want: mediator.CodeInvalidWorkflow},
		{name: "brackets nested too deep", src: "const a = " + deep + ";", want: mediator.CodeTooLarge, at: "1:267"},
		{name: "operators nested too deep", src: nots, want: mediator.CodeTooLarge, at: "1:75"},
		{name: "a long run of prefix operators, which took the parser past ten minutes", src: "const x = " + strings.Repeat("!", 200_000) + "true;", want: mediator.CodeTooLarge, at: "1:75"},
		{name: "typeof on typeof", src: "const x = " + strings.Repeat("typeof ", 65) + "1;", want: mediator.CodeTooLarge, at: "1:459"},
		{name: "an arrow chain, which the parser reads in cubic time", src: "const f = [1].map(" + strings.Repeat("a => ", maxArrows+1) + "1);", want: mediator.CodeTooLarge},
		{name: "too many conditional operators", src: "const x = " + strings.Repeat("x ? y : ", maxTernaries+1) + "1;", want: mediator.CodeTooLarge},
		{name: "a sum nested past the checker's depth", src: "const a = 1;\nconst s = " + strings.Repeat("a + ", maxDepth+1) + "a;", want: mediator.CodeTooLarge},
		{name: "a long sum is no run of prefix operators", src: "const a = 1;\nconst s = " + strings.Repeat("a + - ", 300) + "a;", graph: "a=code:expr s=code:add[a]"},
		{name: "Math.random", src: "const r = Math.random();", want: mediator.CodeNotPure, at: "1:11"},
		{name: "new Date", src: "const d = new Date();", want: mediator.CodeNotPure, at: "1:11"},
		{name: "push on a value another step holds", src: "const xs = await mcp.s.list();\nconst n = xs.push(1);", want: mediator.CodeNotPure, at: "2:11"},
		{name: "sort in place", src: "const xs = await mcp.s.list();\nconst s = xs.sort();", want: mediator.CodeNotPure, at: "2:11"},
		{name: "a callback changes its item", src: "const xs = await mcp.s.list();\nconst ys = xs.map((u) => { u.seen = true; return u; });", want: mediator.CodeNotPure, at: "2:28"},
		{name: "a callback assigns a script variable", src: "let n = 0;\nconst ys = [1, 2].map((x) => { n += x; return x; });", want: mediator.CodeNotPure, at: "2:32"},
		{name: "Object.assign into a value another step holds", src: "const xs = await mcp.s.get();\nconst y = Object.assign(xs, { a: 1 });", want: mediator.CodeNotPure, at: "2:11"},
		{name: "a function as a value", src: "const f = (x) => x + 1;", want: mediator.CodeNotPure, at: "1:11"},
		{name: "a class", src: "class A {}", want: mediator.CodeNotPure, at: "1:1"},
		{name: "this", src: "const t = this;", want: mediator.CodeNotPure, at: "1:11"},
		{name: "globalThis", src: "const g = globalThis;", want: mediator.CodeNotPure, at: "1:11"},
		{name: "a tagged template", src: "const a = String.raw`x`;", want: mediator.CodeNotPure, at: "1:11"},
		{name: "a regular expression that backtracks", src: "const s = \"aaa\";\nconst m = s.match(/(a+)+\\1/);", want: mediator.CodeNotPure, at: "2:19"},
		{name: "a regular expression made of data", src: "const s = await mcp.s.get();\nconst m = s.text.match(s.pattern);", want: mediator.CodeNotPure, at: "2:24"},
		{name: "await of something else", src: "const p = await Promise.resolve(1);", want: mediator.CodeNotPure, at: "1:17"},
		{name: "await of a pure value", src: "const p = await [1].map((x) => x);", want: mediator.CodeNotPure, at: "1:11"},
		{name: "throw at the top", src: "throw new Error(\"x\");", want: mediator.CodeNotPure, at: "1:1"},
		{name: "a function reads a script variable", src: "const k = 2;\nfunction f(x) { return x * k; }\nconst y = f(1);", want: mediator.CodeNotPure, at: "2:28"},
		{name: "an async function", src: "async function f() { return await mcp.s.get(); }", want: mediator.CodeNotPure, at: "1:1"},
		{name: "delete", src: "const o = { a: 1 };\nconst b = [1].map((x) => { const c = { x }; delete c.x; return c; });", want: mediator.CodeNotPure, at: "2:45"},
		{name: "instanceof", src: "const o = [] instanceof Array;", want: mediator.CodeNotPure, at: "1:11"},
		{name: "with", src: "const o = {};\nwith (o) { }", want: mediator.CodeNotPure, at: "2:1"},
		{name: "a syntax error", src: "const a = ;", want: mediator.CodeInvalidWorkflow, at: "1:11"},
		{name: "closing the wrapper", src: "})(); globalThis.x = 1; (async function () {", want: mediator.CodeInvalidWorkflow},
		{name: "an expression statement with no effect", src: "const a = [1];\na.map((x) => x);", want: mediator.CodeNotPure, at: "2:1"},
		{name: "a variable with no value", src: "let a;", want: mediator.CodeNotPure, at: "1:5"},
		{name: "nothing to do", src: "// only a comment\n", want: mediator.CodeInvalidWorkflow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name, src := tc.file, []byte(tc.src)
			if name == "" {
				name = "script.js"
			}
			if tc.src == "" {
				var err error
				if src, err = os.ReadFile(tc.file); err != nil {
					t.Fatal(err)
				}
				name = filepath.Base(tc.file)
			}
			spec, err := Convert(name, src, Options{ID: "t", AgentID: "agent"})
			if tc.want != "" {
				if mediator.CodeOf(err) != tc.want {
					t.Fatalf("%v; want %s", err, tc.want)
				}
				var e *Error
				if tc.at != "" && (!asError(err, &e) || fmt.Sprintf("%d:%d", e.Line, e.Column) != tc.at) {
					t.Fatalf("%v; want it at %s", err, tc.at)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if g := graph(spec); g != tc.graph {
				t.Fatalf("graph\n got %s\nwant %s", g, tc.graph)
			}
			for _, task := range spec.Tasks {
				if task.MCP != nil && task.MCP.AgentID != "agent" {
					t.Fatalf("task %s is for %q", task.ID, task.MCP.AgentID)
				}
			}
		})
	}
}

func asError(err error, e **Error) bool {
	x, ok := err.(*Error)
	*e = x
	return ok
}

// TestLiteralArgsAreExact: literal arguments are the plan's exact JSON;
// computed ones are the script's own expression, bound to its variables.
func TestLiteralArgsAreExact(t *testing.T) {
	spec, err := Convert("a.js", []byte("const r = await mcp.db.q({ sql: \"SELECT 1\", n: 2 });\nawait mcp.s.send({ text: `n=${r.n}` });"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if a := string(spec.Tasks[0].MCP.Args); a != `{"n":2,"sql":"SELECT 1"}` {
		t.Fatalf("args %s", a)
	}
	// A number is a double, as Node sends it: past 2^53 it rounds.
	big, err := Convert("b.js", []byte("await mcp.db.get({ id: 9007199254740993, neg: -9007199254740993, f: 1.5 });"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if a := string(big.Tasks[0].MCP.Args); a != `{"f":1.5,"id":9007199254740992,"neg":-9007199254740992}` {
		t.Fatalf("args %s", a)
	}
	m := spec.Tasks[1].MCP
	if m.ArgsExpr != "{ text: `n=${r.n}` }" || m.Vars["r"] != "r" || len(m.Args) != 0 || !slices.Equal(spec.Tasks[1].DependsOn, []string{"r"}) {
		t.Fatalf("%+v deps %v", m, spec.Tasks[1].DependsOn)
	}
}
