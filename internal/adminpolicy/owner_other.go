//go:build !unix

package adminpolicy

// adminOnly: on Windows the policy lives under %ProgramData%, whose ACLs
// an administrator sets; the host does not read ACLs (docs/fleet.md).
func adminOnly(string) error { return nil }
