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
	Reason     string
}

// checkImports reads the compiled module's imports before anything is
// instantiated and returns the first one that may not be linked: an
// ungranted restricted API function, a WASI function outside the subset,
// any other module, or an imported memory, table or global.
func checkImports(m wazero.CompiledModule, granted func(mediator.Permission) bool) *linkDenial {
	for _, f := range m.ImportedFunctions() {
		mod, name, _ := f.Import()
		full := mod + "." + name
		switch mod {
		case HostModule:
			i := slices.IndexFunc(hostFuncs, func(h hostFunc) bool { return h.name == name })
			if i < 0 {
				return &linkDenial{Import: full, Reason: fmt.Sprintf("%s is not a function of the restricted API (ABI v%d)", full, ABIVersion)}
			}
			h := hostFuncs[i]
			if !slices.Equal(f.ParamTypes(), h.params) || len(f.ResultTypes()) != 1 || f.ResultTypes()[0] != i32 {
				return &linkDenial{Import: full, Permission: h.permission, Reason: fmt.Sprintf("%s is imported with the wrong signature", full)}
			}
			if h.permission != "" && !granted(h.permission) {
				return &linkDenial{Import: full, Permission: h.permission, Reason: fmt.Sprintf("%s needs %s, which the agent was not granted", full, h.permission)}
			}
		case wasiModule:
			if !wasiAllowed[name] {
				return &linkDenial{Import: full, Reason: fmt.Sprintf("%s is outside the WASI subset agents get (no files, sockets or processes)", full)}
			}
		default:
			return &linkDenial{Import: full, Reason: fmt.Sprintf("%s: module %q is not available to agents", full, mod)}
		}
	}
	// Imported tables and globals cannot resolve: the two modules above
	// export functions only, so instantiation refuses them.
	for _, mem := range m.ImportedMemories() {
		mod, name, _ := mem.Import()
		return &linkDenial{Import: mod + "." + name, Reason: fmt.Sprintf("%s.%s: agents may not import a memory; they must define their own", mod, name)}
	}
	return nil
}
