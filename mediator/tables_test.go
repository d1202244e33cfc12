package mediator

import "testing"

// TestTablesCannotBeRewritten: what the table readers return is a copy;
// changing it changes no decision.
func TestTablesCannotBeRewritten(t *testing.T) {
	ops := Operations()
	for i := range ops {
		ops[i].Class = AlwaysSafe
		ops[i].Permission = ""
	}
	if r, _ := RuleFor(Operation{Name: OpClipboardRead}); r.Class != AlwaysConfirm || r.Permission != PermClipboardRead {
		t.Fatalf("clipboard.read became %+v", r)
	}
	perms := KnownPermissions()
	perms[0] = "run"
	if _, err := ParsePermission("run"); err == nil {
		t.Fatal("a permission was added through a copy")
	}
	rule, _ := SetRule(SetMinimal)
	rule.Permissions[0] = PermNetworkFetch
	rule.Permissions = append(rule.Permissions, PermClipboardRead)
	if r, _ := SetRule(SetMinimal); r.Allows(PermNetworkFetch) || r.Allows(PermClipboardRead) {
		t.Fatalf("minimal became %+v", r)
	}
	pure := PureOperations()
	pure[0] = "network.fetch"
	if IsPureOperation("network.fetch") {
		t.Fatal("network.fetch became pure through a copy")
	}
	if _, ok := ShellCommandFor("sh"); ok {
		t.Fatal("the shell runs sh")
	}
}
