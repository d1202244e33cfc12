package wasmhost

import (
	"github.com/tetratelabs/wazero/api"

	"github.com/agentgate/nmhost/mediator"
)

// ABIVersion is the version of the restricted API that docs/abi.md
// describes; restricted_api.abi_version returns it.
const ABIVersion = 1

// HostModule is the import module name of the restricted API.
const HostModule = "restricted_api"

// wasiModule is the only other import module a guest may use, for the
// handful of functions a GOOS=wasip1 runtime needs.
const wasiModule = "wasi_snapshot_preview1"

const i32, i64 = api.ValueTypeI32, api.ValueTypeI64

// hostFunc is one function of the restricted API.
type hostFunc struct {
	name   string
	params []api.ValueType
	// permission is the grant that lets a module import the function; ""
	// means every module may (input, result, abi_version: they reach
	// nothing outside the run).
	permission mediator.Permission
	impl       func(r *run, mod api.Module, stack []uint64) (result []byte, err error)
}

// hostFuncs is the restricted API. Every function returns one i32: n >= 0
// is success with an n-byte result waiting to be copied with result();
// n < 0 is failure with a -n byte JSON error {"code","error"} waiting the
// same way.
var hostFuncs = []hostFunc{
	{"abi_version", nil, "", nil}, // special-cased: returns ABIVersion itself
	{"input", nil, "", (*run).input},
	{"result", []api.ValueType{i32, i32}, "", nil}, // special-cased: copies the waiting bytes
	{"log", []api.ValueType{i32, i32}, mediator.PermConsoleLog, (*run).log},
	{"page_query_selector", []api.ValueType{i32, i32}, mediator.PermPageRead, (*run).querySelector},
	{"page_query_selector_all", []api.ValueType{i32, i32, i32}, mediator.PermPageRead, (*run).querySelectorAll},
	{"page_get_text", nil, mediator.PermPageRead, (*run).getPageText},
	{"page_set_element_text", []api.ValueType{i32, i32, i32, i32}, mediator.PermPageWrite, (*run).setElementText},
	{"clipboard_read", nil, mediator.PermClipboardRead, (*run).clipboardRead},
	{"clipboard_write", []api.ValueType{i32, i32}, mediator.PermClipboardWrite, (*run).clipboardWrite},
	{"notify", []api.ValueType{i32, i32, i32, i32}, mediator.PermNotifications, (*run).notify},
	{"fetch", []api.ValueType{i32, i32}, mediator.PermNetworkFetch, (*run).fetch},
	// shell also needs the run's session workspace (see run.link).
	{"shell", []api.ValueType{i32, i32}, mediator.PermShell, (*run).shell},
	{"memory_write", []api.ValueType{i32, i32}, mediator.PermMemory, (*run).memoryWrite},
	{"memory_search", []api.ValueType{i32, i32}, mediator.PermMemory, (*run).memorySearch},
	{"mcp_call", []api.ValueType{i32, i32}, mediator.PermMCPCall, (*run).mcpCall},
}

// wasiAllowed is the WASI subset a Go wasip1 guest imports. wazero's
// implementation runs it with no preopened directories, no environment,
// argv = [agent id], stdin empty, and stdout/stderr captured as output.
// Files, sockets and everything else are refused at link time.
var wasiAllowed = map[string]bool{
	"args_get": true, "args_sizes_get": true, "environ_get": true, "environ_sizes_get": true,
	"clock_time_get": true, "clock_res_get": true, "random_get": true, "poll_oneoff": true,
	"sched_yield": true, "proc_exit": true,
	"fd_write": true, "fd_read": true, "fd_close": true, "fd_fdstat_get": true, "fd_fdstat_set_flags": true,
	"fd_prestat_get": true, "fd_prestat_dir_name": true,
}

// wasiWorkspace are the WASI file functions, linked only when the run's
// permission set gives the workspace access each needs; they reach the
// session's workspace, mounted at /workspace through os.Root, and nothing
// else (there is no other preopened directory). fd_seek and fd_tell link
// but answer ENOSYS (see workspace.sysFile).
var wasiWorkspace = map[string]mediator.WorkspaceAccess{
	"path_open": mediator.WorkspaceRead, "fd_readdir": mediator.WorkspaceRead, "fd_seek": mediator.WorkspaceRead,
	"fd_tell": mediator.WorkspaceRead, "fd_pread": mediator.WorkspaceRead, "fd_filestat_get": mediator.WorkspaceRead,
	"path_filestat_get": mediator.WorkspaceRead, "fd_advise": mediator.WorkspaceRead,
	"fd_pwrite": mediator.WorkspaceReadWrite, "fd_filestat_set_size": mediator.WorkspaceReadWrite,
	"fd_sync": mediator.WorkspaceReadWrite, "fd_datasync": mediator.WorkspaceReadWrite,
	"path_create_directory": mediator.WorkspaceReadWrite, "path_remove_directory": mediator.WorkspaceReadWrite,
	"path_unlink_file": mediator.WorkspaceReadWrite, "path_rename": mediator.WorkspaceReadWrite,
}
