package wasmhost

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"unicode/utf8"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/agentgate/nmhost/mediator"
)

// WASI resolves a guest's names itself before the workspace's file
// system sees them (wazero's atPath): a name that climbs out of the
// directory it is relative to or is absolute ("../x", "/etc/x",
// "a/../../x"), or is not valid UTF-8, is answered EPERM there, and a
// name relative to no directory the run holds is answered EBADF there.
// That second case is what a Go guest's own WASI layer sends for every
// name outside /workspace: it cleans "/etc/hostname" or "../../nmhost.db"
// against its preopens, finds none, and asks for the rest relative to
// descriptor -1. Neither refusal reaches workspace.Hooks.Refused, so each
// is caught here, at the WASI function's return, and recorded like the
// workspace's own (run.workspaceRefused): a denial of layer workspace,
// path_not_allowed, with its audit record. Nothing is opened in either
// case; a guest that asks for no file leaves nothing to record.
//
// The hook is wazero's experimental.FunctionListener on the WASI
// functions that take a name; the other functions are not listened to.

// WASI errno values (wasi_snapshot_preview1's errno enum).
const (
	wasiEBADF = 8
	wasiEPERM = 63
)

// wasiPathFunc says where a WASI function's names are among its
// parameters: for each name, in the order WASI resolves them, the
// indexes of its directory descriptor, pointer and length.
type wasiPathFunc struct {
	op    string // the record's operation, as workspace.Hooks names them
	names [][3]int
}

// wasiPathFuncs are the WASI functions taking a name that a run may link
// (wasiWorkspace).
var wasiPathFuncs = map[string]wasiPathFunc{
	"path_open":             {"open", [][3]int{{0, 2, 3}}},
	"path_filestat_get":     {"stat", [][3]int{{0, 2, 3}}},
	"path_create_directory": {"mkdir", [][3]int{{0, 1, 2}}},
	"path_remove_directory": {"rmdir", [][3]int{{0, 1, 2}}},
	"path_unlink_file":      {"unlink", [][3]int{{0, 1, 2}}},
	"path_rename":           {"rename", [][3]int{{0, 1, 2}, {3, 4, 5}}},
}

// wasiOflagCreat is path_open's O_CREAT bit (oflags, parameter 4).
const wasiOflagCreat = 1

// wasiPathListeners gives each name-taking WASI function its listener.
type wasiPathListeners struct{}

func (wasiPathListeners) NewFunctionListener(def api.FunctionDefinition) experimental.FunctionListener {
	f, ok := wasiPathFuncs[def.Name()]
	if !ok {
		return nil
	}
	return &wasiPathListener{f: f}
}

type wasiPathListener struct{ f wasiPathFunc }

// wasiPathCall is what a call will be refused as, if WASI refuses it
// while resolving its names: escape, the first name that climbs out, for
// EPERM; badDir, the names before it, one of whose descriptors then
// named no directory, for EBADF.
type wasiPathCall struct {
	op     string
	escape *wasiName
	badDir []wasiName
}

type wasiName struct {
	fd   int32
	name string
}

// Before reads the call's names as WASI will resolve them. A call runs
// on its run's goroutine and calls nothing back, so the run holds one
// call's names at a time.
func (l *wasiPathListener) Before(ctx context.Context, mod api.Module, _ api.FunctionDefinition, params []uint64, _ experimental.StackIterator) {
	ru, _ := ctx.Value(runKey{}).(*run)
	if ru == nil {
		return
	}
	call := &wasiPathCall{op: l.f.op}
	if l.f.op == "open" && uint32(params[4])&wasiOflagCreat != 0 {
		call.op = "create"
	}
	for _, n := range l.f.names {
		b, ok := mod.Memory().Read(api.DecodeU32(params[n[1]]), api.DecodeU32(params[n[2]]))
		if !ok {
			break // EFAULT: not a name
		}
		name := wasiName{fd: api.DecodeI32(params[n[0]]), name: string(b)}
		if !fs.ValidPath(path.Clean(name.name)) {
			call.escape = &name
			break
		}
		call.badDir = append(call.badDir, name)
	}
	ru.wasiCall = call
}

// After records the refusal when WASI's answer is the one its resolution
// gives: EPERM for a name that climbs out, EBADF for a descriptor that
// names no directory. Any other answer came from the workspace (which
// records its own refusals) or is an ordinary failure.
func (l *wasiPathListener) After(ctx context.Context, _ api.Module, _ api.FunctionDefinition, results []uint64) {
	ru, _ := ctx.Value(runKey{}).(*run)
	if ru == nil || ru.wasiCall == nil {
		return
	}
	call := ru.wasiCall
	ru.wasiCall = nil
	switch errno := uint32(results[0]); {
	case errno == wasiEPERM && call.escape != nil && !utf8.ValidString(call.escape.name):
		ru.workspaceRefused(call.op, call.escape.name, mediator.Errorf(mediator.CodePathNotAllowed,
			"%q is not valid UTF-8: there is no one way to show such a name", mediator.Truncate(call.escape.name, 80)))
	case errno == wasiEPERM && call.escape != nil:
		ru.workspaceRefused(call.op, call.escape.name, mediator.Errorf(mediator.CodePathNotAllowed,
			"%q is a name that climbs out of the directory it is relative to, or an absolute one: a run reaches files only under %s, by names inside it",
			mediator.Truncate(call.escape.name, 80), WorkspaceGuestPath))
	case errno == wasiEBADF && len(call.badDir) > 0:
		n := call.badDir[0]
		for _, c := range call.badDir {
			if c.fd < 0 {
				n = c
				break
			}
		}
		name := n.name
		if n.fd < 0 {
			// A guest's WASI layer (Go's) asks for a name outside every
			// directory it was given relative to -1, the name cleaned and
			// its leading "/" dropped: the name it was given is "/"+name.
			name = "/" + name
		}
		ru.workspaceRefused(call.op, name, mediator.Errorf(mediator.CodePathNotAllowed,
			"%q is outside %s, the only directory a run is given (%s)",
			mediator.Truncate(name, 80), WorkspaceGuestPath, fdWord(n.fd)))
	}
}

// Abort: the call did not return (the run ended inside it); nothing was
// resolved to record.
func (l *wasiPathListener) Abort(ctx context.Context, _ api.Module, _ api.FunctionDefinition, _ error) {
	if ru, _ := ctx.Value(runKey{}).(*run); ru != nil {
		ru.wasiCall = nil
	}
}

func fdWord(fd int32) string {
	if fd < 0 {
		return "the guest named no directory"
	}
	return fmt.Sprintf("descriptor %d is no directory the run holds", fd)
}
