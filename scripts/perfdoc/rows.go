package main

// row is one line of the table: a benchmark of bench.sh beside its
// baseline. Bench and Base are "pkg Name" as Result.Key makes them, Name
// as `go test` prints it (spaces in sub-benchmark names become _).
type row struct {
	What   string // what is measured, in the page's words
	Bench  string
	Base   string // the baseline's benchmark; "" for none
	BaseIs string // what the baseline is
	Unit   string // the figure shown; "" is ns/op
	Target target
}

// target is what a row is held to: at most Ratio times its baseline, at
// most Max in its unit, or at most the median of its own metric Metric
// (a target the benchmark computes, such as a memory bound).
type target struct {
	Ratio  float64
	Max    float64
	Metric string
}

const (
	usec = 1e3
	msec = 1e6
)

var rows = []row{
	{What: "request round trip through the binary, one at a time", Bench: "cmd/nmhost RoundTrip/sequential/nmhost",
		Base: "cmd/nmhost RoundTrip/sequential/baseline", BaseIs: "framed-JSON echo process", Target: target{Ratio: 1.25}},
	{What: "the same, 64 in flight", Bench: "cmd/nmhost RoundTrip/64-in-flight/nmhost",
		Base: "cmd/nmhost RoundTrip/64-in-flight/baseline", BaseIs: "framed-JSON echo process", Target: target{Ratio: 1.25}},
	{What: "cold start: a new process opens the store, answers `list-agents` and exits", Bench: "cmd/nmhost ColdStart/nmhost",
		Base: "cmd/nmhost ColdStart/baseline", BaseIs: "bare Go process writing one frame", Target: target{Ratio: 2}},
	{What: "the floor of that start: a process that links only the store and the framing (`cmd/nmhost/testdata/storeonly`)",
		Bench: "cmd/nmhost ColdStartFloor/nmhost", Base: "cmd/nmhost ColdStartFloor/baseline", BaseIs: "bare Go process writing one frame"},
	{What: "tiny agent run", Bench: "wasmhost RunTiny/nmhost", Base: "wasmhost RunTiny/baseline", BaseIs: "raw wazero, same configuration",
		Target: target{Ratio: 1.3}},
	{What: "`log` call from wasm through the real policy, the run's one aggregate record written before it reports",
		Bench: "wasmhost LogCall/nmhost", Base: "wasmhost LogCall/baseline", BaseIs: "raw wazero host call", Unit: "ns/call",
		Target: target{Max: 1 * usec}},
	{What: "`log` calls of a 9,000-call agent through the native host's `run-agent`, over the binary's pipes, everything per run included",
		Bench: "cmd/nmhost LogCallEntryPoints/native_host", Base: "cmd/nmhost LogCallEntryPoints/baseline",
		BaseIs: "raw wazero, same module, no-op host function", Unit: "ns/call", Target: target{Max: 1 * usec}},
	{What: "the same through the viewer's `/ws` run (`nmhost serve`)", Bench: "cmd/nmhost LogCallEntryPoints/ws_run",
		Base: "cmd/nmhost LogCallEntryPoints/baseline", BaseIs: "raw wazero, no-op host function", Unit: "ns/call", Target: target{Max: 1 * usec}},
	{What: "the same through `nmhost run` in process (the store opened and closed and the agent installed, once a run)",
		Bench: "cmd/nmhost LogCallEntryPoints/nmhost_run", Base: "cmd/nmhost LogCallEntryPoints/baseline",
		BaseIs: "raw wazero, no-op host function", Unit: "ns/call", Target: target{Max: 1 * usec}},
	{What: "2 B fetch through `agentfetch` and the policy", Bench: "netproxy/agentfetch Fetch2B/nmhost",
		Base: "netproxy/agentfetch Fetch2B/baseline", BaseIs: "`net/http`", Target: target{Ratio: 1.2}},
	{What: "2 B fetch through the binary", Bench: "cmd/nmhost Fetch/2B/nmhost", Base: "cmd/nmhost Fetch/2B/baseline",
		BaseIs: "`net/http`", Target: target{Ratio: 2}},
	{What: "1 MiB fetch through the binary", Bench: "cmd/nmhost Fetch/1MiB/nmhost", Base: "cmd/nmhost Fetch/1MiB/baseline",
		BaseIs: "`net/http` + ReadAll", Target: target{Ratio: 1.5}},
	{What: "2 B fetch through the binary, the data directory on tmpfs (an fsync costs nothing)", Bench: "cmd/nmhost Fetch/2B-tmpfs/nmhost",
		Base: "cmd/nmhost Fetch/2B-tmpfs/baseline", BaseIs: "`net/http`"},
	{What: "1 MiB fetch through the binary, the data directory on tmpfs", Bench: "cmd/nmhost Fetch/1MiB-tmpfs/nmhost",
		Base: "cmd/nmhost Fetch/1MiB-tmpfs/baseline", BaseIs: "`net/http` + ReadAll"},
	{What: "1,000 concurrent small agents, 64 KiB of memory each, all instantiated at once through `Runtime.Run`: peak RSS of the test process (target: twice their memory plus 100 MB)",
		Bench: "wasmhost ManyAgents", Unit: "peak-MiB", Target: target{Metric: "target-MiB"}},
	{What: "ACL check, 10 entries", Bench: "netproxy ACLCheck/entries=10", Target: target{Max: 0.5 * usec}},
	{What: "ACL check, 10,000 entries", Bench: "netproxy ACLCheck/entries=10000", Target: target{Max: 0.5 * usec}},
	{What: "decision alone, from the cache", Bench: "internal/store Policy/Decide", Target: target{Max: 2 * usec}},
	{What: "the same, two goroutines", Bench: "internal/store Policy/Decide_parallel"},
	{What: "decision + its audit record, 64 goroutines (group commit, written durability)",
		Bench: "internal/store Policy/Decide+AppendAudit_64_goroutines", Target: target{Max: 20 * usec}},
	{What: "audit append alone, one at a time (written durability)", Bench: "internal/store Policy/AppendAudit"},
	{What: "decision + its two audit records, one at a time (written durability)",
		Bench: "internal/store Policy/Authorize+executed_(two_durable_appends)"},
	{What: "`nmhost inspect` of a 3.4 MB Go agent", Bench: "wasmhost Inspect/inspect", Base: "wasmhost Inspect/validate",
		BaseIs: "its `validate` alone", Target: target{Max: 5 * msec}},
	{What: "1,000-task all-pure workflow end to end, its steps compiled before", Bench: "workflow PureWorkflow1000/warm",
		Target: target{Max: 50 * msec}},
	{What: "the same, every step compiled", Bench: "workflow PureWorkflow1000/cold", Target: target{Max: 50 * msec}},
	{What: "a 10-task layer's decisions and audit records", Bench: "workflow AuthorizeLayer10", Target: target{Max: 1 * msec}},
	{What: "`ls -R` of a 10,000-file workspace through the session shell", Bench: "shell ShellLsR/shell", Base: "shell ShellLsR/baseline",
		BaseIs: "`fs.WalkDir` over `os.Root`, names printed", Target: target{Ratio: 2}},
	{What: "`grep -r TODO .` over the same workspace", Bench: "shell ShellGrepR/shell", Base: "shell ShellGrepR/baseline",
		BaseIs: "`fs.WalkDir` over `os.Root`, each file read and matched with the same regexp", Target: target{Ratio: 2}},
	{What: "a Go guest's `os.ReadFile` of a 1 MiB file in `/workspace`", Bench: "wasmhost WorkspaceRead1MiB/nmhost",
		Base: "wasmhost WorkspaceRead1MiB/baseline", BaseIs: "wazero's `WithReadOnlyDirMount`", Target: target{Ratio: 2}},
	{What: "session memory search, 100,000 entries in the session and 100,000 in another: two middling words",
		Bench: "internal/store MemorySearch/two_words/nmhost", Base: "internal/store MemorySearch/two_words/baseline",
		BaseIs: "the same two statements through `database/sql`", Target: target{Max: 10 * msec}},
	{What: "the same, one word in half the entries", Bench: "internal/store MemorySearch/one_common_word/nmhost",
		Base: "internal/store MemorySearch/one_common_word/baseline", BaseIs: "the same two statements through `database/sql`",
		Target: target{Max: 10 * msec}},
	{What: "the one ranked join a first version would write, two middling words", Bench: "internal/store MemorySearch/two_words/naive",
		Base: "internal/store MemorySearch/two_words/baseline", BaseIs: "the two statements"},
	{What: "the same, one word in half the entries", Bench: "internal/store MemorySearch/one_common_word/naive",
		Base: "internal/store MemorySearch/one_common_word/baseline", BaseIs: "the two statements"},
	{What: "compile of a module with one 48 KiB function of loops, just over the compiler's body limit",
		Bench: "wasmhost CompileLargeBody/nmhost", Base: "wasmhost CompileLargeBody/raw_wazero_interpreter",
		BaseIs: "raw wazero's interpreter, same configuration"},
	{What: "the same module through wazero's optimizing compiler", Bench: "wasmhost CompileLargeBody/raw_wazero_compiler",
		Base: "wasmhost CompileLargeBody/raw_wazero_interpreter", BaseIs: "raw wazero's interpreter"},
}
