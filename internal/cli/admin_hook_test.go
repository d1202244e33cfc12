package cli

func init() { testAdminPolicyAllowed = true }
