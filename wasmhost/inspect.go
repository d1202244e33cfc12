package wasmhost

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentgate/nmhost/mediator"
)

// Inspection is what a module's own bytes say about the permission set it
// needs: its imports, the smallest set that links them all, and how sure
// that reading is. `nmhost inspect` prints it; install-agent stores its
// set and confidence when the profile names no set.
type Inspection struct {
	Imports []InspectedImport `json:"imports"`
	mediator.SetInference
	// Refused names an import no set links (an unknown function, another
	// module, an imported memory); the module cannot run at all.
	Refused string `json:"refused,omitempty"`
}

// InspectedImport is one import and how the module's code reaches it.
type InspectedImport struct {
	Module     string              `json:"module"`
	Name       string              `json:"name"`
	Kind       string              `json:"kind"` // function, table, memory, global
	Permission mediator.Permission `json:"permission,omitempty"`
	// Workspace is the workspace access a WASI file function needs.
	Workspace mediator.WorkspaceAccess `json:"workspace,omitempty"`
	// Use is "call" (called by name), "indirect" (only through a table,
	// ref.func or an export), or "none" (never referenced).
	Use string `json:"use"`
}

// Confidence levels of an inference; docs/permissions.md explains each.
const (
	confidenceCertain  = 1.0 // every import that sets the set is called by name
	confidenceIndirect = 0.8 // one is reached only through a table: which call reaches it is decided at run time
	confidenceUnsure   = 0.5 // code the inspector cannot read, or an import that sets the set and is never used
	confidenceRefused  = 0.0 // an import no set links
)

var importKinds = [...]string{importFunc: "function", importTable: "table", importMemory: "memory", importGlobal: "global"}

// Inspect reads module's imports and code. It refuses what validate
// refuses (invalid_module, module_limits) and otherwise always answers:
// an inference it is unsure of says so in its confidence, and the caller
// falls back to minimal (mediator.DeterminePermissionSet). Whatever the
// confidence, the set named is never more than the imports need, so a
// misreading can only cost the module rights, never give it more.
func Inspect(module []byte) (Inspection, error) {
	info, err := validate(module)
	if err != nil {
		return Inspection{}, err
	}
	funcImports := 0
	for _, im := range info.imports {
		if im.kind == importFunc {
			funcImports++
		}
	}
	use := scanUse(module, funcImports)
	in := Inspection{Imports: []InspectedImport{}}
	var fn uint32 // function index space: imported functions come first
	var needs []mediator.Permission
	workspaceNeed := mediator.WorkspaceNone
	unused, indirect := []string{}, []string{}
	for _, im := range info.imports {
		ii := InspectedImport{Module: im.module, Name: im.name, Kind: importKinds[im.kind], Use: "none"}
		if im.kind == importFunc {
			switch {
			case use.called[fn]:
				ii.Use = "call"
			case use.indirect[fn]:
				ii.Use = "indirect"
			}
			fn++
		}
		if d := checkImports([]moduleImport{im}, func(mediator.Permission) bool { return true }, mediator.WorkspaceReadWrite); d != nil {
			if in.Refused == "" {
				in.Refused = d.Reason
			}
		} else if im.module == HostModule {
			i := slices.IndexFunc(hostFuncs, func(h hostFunc) bool { return h.name == im.name })
			ii.Permission = hostFuncs[i].permission
		} else if need, file := wasiWorkspace[im.name]; file && im.module == wasiModule {
			ii.Workspace, ii.Permission = need, workspacePermission(need)
			if !mediator.WorkspaceCovers(workspaceNeed, need) {
				workspaceNeed = need
			}
		}
		if p := ii.Permission; p != "" {
			needs = append(needs, p)
			full := im.module + "." + im.name
			switch ii.Use {
			case "none":
				unused = append(unused, full+" ("+string(p)+")")
			case "indirect":
				indirect = append(indirect, full+" ("+string(p)+")")
			}
		}
		in.Imports = append(in.Imports, ii)
	}
	if in.Refused != "" {
		in.Set, in.Confidence = mediator.SetMinimal, confidenceRefused
		in.Reasons = []string{in.Refused + "; no permission set links it, so the module cannot run"}
		return in, nil
	}
	in.Set = mediator.SmallestSetFor(needs, workspaceNeed)
	in.Pure = in.Set == mediator.SetMinimal
	in.Confidence = confidenceCertain
	rule, _ := mediator.SetRule(in.Set)
	switch {
	case len(needs) == 0 && workspaceNeed != mediator.WorkspaceNone:
		in.Reasons = append(in.Reasons, fmt.Sprintf("imports WASI file functions that need %s access to the workspace; %s is the smallest set that gives it (%s)", workspaceNeed, in.Set, rule.Why))
	case len(needs) == 0:
		in.Reasons = append(in.Reasons, "imports only input, result and compute-only WASI: pure work")
	case in.Pure:
		in.Reasons = append(in.Reasons, "imports only log, input, result and compute-only WASI: pure work")
	default:
		ws := ""
		if workspaceNeed != mediator.WorkspaceNone {
			ws = fmt.Sprintf(" and %s access to the workspace", workspaceNeed)
		}
		in.Reasons = append(in.Reasons, fmt.Sprintf("imports need %s%s; %s is the smallest set that links them (%s)", joinPerms(needs), ws, in.Set, rule.Why))
	}
	// Only imports that set the set matter: one that a smaller set would
	// link too changes nothing however the code reaches it.
	if used := smallestUsed(in.Imports); used != in.Set && len(unused) > 0 {
		in.Confidence = min(in.Confidence, confidenceUnsure)
		in.Reasons = append(in.Reasons, fmt.Sprintf("the code never references %s: it asks for more than it uses (%s would do)", strings.Join(unused, ", "), used))
	}
	if len(indirect) > 0 && use.callsIndirect {
		in.Confidence = min(in.Confidence, confidenceIndirect)
		in.Reasons = append(in.Reasons, fmt.Sprintf("%s is reached only through a function table; which call reaches it is decided at run time", strings.Join(indirect, ", ")))
	}
	if workspaceNeed == mediator.WorkspaceRead && slices.ContainsFunc(in.Imports, func(im InspectedImport) bool {
		return im.Module == wasiModule && im.Name == "path_open"
	}) {
		// path_open with write flags is a write the imports do not show;
		// under a read set the workspace is mounted read-only, so such a
		// write fails rather than happens.
		in.Confidence = min(in.Confidence, confidenceIndirect)
		in.Reasons = append(in.Reasons, "path_open may open a file for writing, which the imports cannot show; the workspace is mounted read-only under "+string(in.Set))
	}
	if use.unreadable != "" {
		in.Confidence = min(in.Confidence, confidenceUnsure)
		in.Reasons = append(in.Reasons, "the inspector cannot read "+use.unreadable+", so it cannot tell which imports the code uses")
	}
	if in.Confidence == confidenceCertain && !in.Pure {
		in.Reasons = append(in.Reasons, "every import is called by name")
	}
	return in, nil
}

// smallestUsed is the smallest set that links the imports the code
// references in any way.
func smallestUsed(imports []InspectedImport) mediator.PermissionSet {
	var perms []mediator.Permission
	for _, im := range imports {
		if im.Permission != "" && im.Use != "none" {
			perms = append(perms, im.Permission)
		}
	}
	return mediator.SmallestSet(perms)
}

func joinPerms(perms []mediator.Permission) string {
	s := make([]string, 0, len(perms))
	for _, p := range perms {
		if !slices.Contains(s, string(p)) {
			s = append(s, string(p))
		}
	}
	slices.Sort(s)
	return strings.Join(s, ", ")
}

// pureImports reports whether every import is one minimal links: the
// module can have no effect outside its run.
func pureImports(imports []moduleImport) bool {
	rule, _ := mediator.SetRule(mediator.SetMinimal)
	for _, im := range imports {
		if d := checkImports([]moduleImport{im}, rule.Allows, rule.Workspace); d != nil {
			return false
		}
	}
	return true
}

// workspacePermission is the grant a WASI file function needs beyond
// workspace.read: workspace.write for one that changes files.
func workspacePermission(need mediator.WorkspaceAccess) mediator.Permission {
	if need == mediator.WorkspaceReadWrite {
		return mediator.PermWorkspaceWrite
	}
	return mediator.PermWorkspaceRead
}
