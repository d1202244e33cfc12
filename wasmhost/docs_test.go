package wasmhost

import (
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/agentgate/nmhost/mediator"
)

// docTable returns the rows of the Markdown table in file whose header
// row starts with header, each row as its trimmed cells with backquotes
// removed.
func docTable(t *testing.T, file, header string) [][]string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]string
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, header):
			in = true
		case in && strings.HasPrefix(line, "| ---"):
		case in && strings.HasPrefix(line, "|"):
			var cells []string
			for _, c := range strings.Split(strings.Trim(line, "|"), "|") {
				cells = append(cells, strings.ReplaceAll(strings.TrimSpace(c), "`", ""))
			}
			rows = append(rows, cells)
		case in:
			if len(rows) == 0 {
				t.Fatalf("%s: the table %q has no rows", file, header)
			}
			return rows
		}
	}
	if !in {
		t.Fatalf("%s: no table %q", file, header)
	}
	return rows
}

// TestDocsTablesMatchCode holds docs/abi.md and docs/permissions.md to
// the linker's and the inspector's own tables, so the docs cannot say
// again that an import is refused while the code links it.
func TestDocsTablesMatchCode(t *testing.T) {
	t.Run("WASI file functions and their grants", func(t *testing.T) {
		got := map[string]string{}
		for _, r := range docTable(t, "../docs/abi.md", "| WASI function | grant |") {
			got[r[0]] = r[1]
		}
		want := map[string]string{}
		for name, need := range wasiWorkspace {
			want[name] = string(workspacePermission(need))
		}
		if !maps.Equal(got, want) {
			t.Fatalf("docs/abi.md says %v; the linker has %v", got, want)
		}
	})
	t.Run("WASI functions that need no grant", func(t *testing.T) {
		b, err := os.ReadFile("../docs/abi.md")
		if err != nil {
			t.Fatal(err)
		}
		_, para, ok := strings.Cut(string(b), "`wasi_snapshot_preview1` (no permission needed):")
		if !ok {
			t.Fatal("docs/abi.md lacks the list of WASI functions that need no permission")
		}
		para, _, _ = strings.Cut(para, ". They run")
		var got []string
		for _, f := range strings.Split(para, ",") {
			got = append(got, strings.Trim(strings.TrimSpace(f), "`"))
		}
		want := slices.Sorted(maps.Keys(wasiAllowed))
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("docs/abi.md lists %v; the linker allows %v", got, want)
		}
	})
	t.Run("restricted API functions and their permissions", func(t *testing.T) {
		rows := docTable(t, "../docs/abi.md", "| function | params | permission |")
		if len(rows) != len(hostFuncs) {
			t.Fatalf("docs/abi.md has %d functions; the ABI %d", len(rows), len(hostFuncs))
		}
		for _, r := range rows {
			i := slices.IndexFunc(hostFuncs, func(h hostFunc) bool { return h.name == r[0] })
			if i < 0 || string(hostFuncs[i].permission) != r[2] {
				t.Errorf("docs/abi.md: %s needs %q; the ABI says otherwise", r[0], r[2])
			}
		}
	})
	t.Run("permission sets", func(t *testing.T) {
		rows := docTable(t, "../docs/permissions.md", "| `permissionSet` |")
		if len(rows) != len(mediator.PermissionSets()) {
			t.Fatalf("docs/permissions.md has %d sets", len(rows))
		}
		for _, r := range rows {
			rule, ok := mediator.SetRule(mediator.PermissionSet(r[0]))
			if !ok {
				t.Fatalf("docs/permissions.md names set %q", r[0])
			}
			var want []mediator.Permission
			switch r[1] {
			case "every permission":
				want = mediator.KnownPermissions()
			case "everything but clipboard.read":
				want = slices.DeleteFunc(slices.Clone(mediator.KnownPermissions()), func(p mediator.Permission) bool { return p == mediator.PermClipboardRead })
			default:
				for _, p := range strings.Split(r[1], ",") {
					want = append(want, mediator.Permission(strings.TrimSpace(p)))
				}
			}
			if !sameSet(want, rule.Permissions) {
				t.Errorf("docs/permissions.md: %s may be granted %v; the table says %v", r[0], want, rule.Permissions)
			}
			if string(rule.Workspace) != r[2] {
				t.Errorf("docs/permissions.md: %s's workspace is %q; the table says %q", r[0], r[2], rule.Workspace)
			}
		}
	})
	t.Run("imports no set links", func(t *testing.T) {
		for _, r := range docTable(t, "../docs/permissions.md", "| what the inspector sees | confidence |") {
			if !strings.Contains(r[0], "no set links") {
				continue
			}
			for name := range wasiWorkspace {
				if strings.Contains(r[0], name) {
					t.Errorf("docs/permissions.md says no set links %s; it links with its grant", name)
				}
			}
		}
	})
}

func sameSet(a, b []mediator.Permission) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
