//go:build nmhost_testhooks

package cli

// A binary built for the project's script tests may read its admin
// policy from NMHOST_TEST_ADMIN_POLICY; released binaries never do.
func init() { testAdminPolicyAllowed = true }
