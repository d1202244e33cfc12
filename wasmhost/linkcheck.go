package wasmhost

import (
	"fmt"
	"slices"

	"github.com/tetratelabs/wazero"

	"github.com/agentgate/nmhost/mediator"
)

// linkDenial is a module import its grants do not cover.
type linkDenial struct {
	Import     string // "module.name"
	Permission mediator.Permission
	// Workspace is the workspace access a WASI file function needed and
	// the permission set did not give.
	Workspace mediator.WorkspaceAccess
	Reason    string
}

// checkImports returns the first import that may not be linked: an
// ungranted restricted API function, a WASI function outside the subset,
// any other module, or an imported memory, table or global. It runs on the
// imports validate read, before anything is compiled, and again on the
// compiled module's, so the decision holds for what wazero itself parsed.
func checkImports(imports []moduleImport, granted func(mediator.Permission) bool, ws mediator.WorkspaceAccess) *linkDenial {
	for _, im := range imports {
		full := im.module + "." + im.name
		switch im.kind {
		case importMemory:
			return &linkDenial{Import: full, Reason: fmt.Sprintf("%s: agents may not import a memory; they must define their own", full)}
		case importTable, importGlobal:
			return &linkDenial{Import: full, Reason: fmt.Sprintf("%s: agents may import functions only", full)}
		}
		switch im.module {
		case HostModule:
			i := slices.IndexFunc(hostFuncs, func(h hostFunc) bool { return h.name == im.name })
			if i < 0 {
				return &linkDenial{Import: full, Reason: fmt.Sprintf("%s is not a function of the restricted API (ABI v%d)", full, ABIVersion)}
			}
			h := hostFuncs[i]
			if !slices.Equal(im.params, h.params) || len(im.results) != 1 || im.results[0] != i32 {
				return &linkDenial{Import: full, Permission: h.permission, Reason: fmt.Sprintf("%s is imported with the wrong signature", full)}
			}
			if h.permission != "" && !granted(h.permission) {
				return &linkDenial{Import: full, Permission: h.permission, Reason: fmt.Sprintf("%s needs %s, which the agent was not granted", full, h.permission)}
			}
		case wasiModule:
			if need, file := wasiWorkspace[im.name]; file {
				if !mediator.WorkspaceCovers(ws, need) {
					return &linkDenial{Import: full, Workspace: need, Reason: fmt.Sprintf("%s needs %s access to the session's workspace, which the agent's grants and permission set do not give", full, need)}
				}
				continue
			}
			if !wasiAllowed[im.name] {
				return &linkDenial{Import: full, Reason: fmt.Sprintf("%s is outside the WASI subset agents get (no sockets or processes; files only in the workspace)", full)}
			}
		default:
			return &linkDenial{Import: full, Reason: fmt.Sprintf("%s: module %q is not available to agents", full, im.module)}
		}
	}
	return nil
}

// compiledImports lists the function and memory imports of a compiled
// module the way validate lists them. (wazero does not list imported tables
// and globals; they cannot resolve anyway, since the two import modules
// export functions only.)
func compiledImports(m wazero.CompiledModule) []moduleImport {
	var out []moduleImport
	for _, f := range m.ImportedFunctions() {
		mod, name, _ := f.Import()
		out = append(out, moduleImport{module: mod, name: name, kind: importFunc, params: f.ParamTypes(), results: f.ResultTypes()})
	}
	for _, mem := range m.ImportedMemories() {
		mod, name, _ := mem.Import()
		out = append(out, moduleImport{module: mod, name: name, kind: importMemory})
	}
	return out
}
