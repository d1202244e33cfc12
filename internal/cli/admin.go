package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/agentgate/nmhost/internal/adminpolicy"
	"github.com/agentgate/nmhost/mediator"
)

// adminPolicyPath is where the machine's admin policy is read from. The
// environment cannot move it (a user could point it at a file of their
// own); NMHOST_TEST_ADMIN_POLICY does, in this project's tests only,
// and only when the binary says so (testAdminPolicyAllowed).
func adminPolicyPath() string {
	if testAdminPolicyAllowed {
		if p := os.Getenv("NMHOST_TEST_ADMIN_POLICY"); p != "" {
			return p
		}
	}
	return adminpolicy.Path()
}

// testAdminPolicyAllowed is true only in this package's tests and in a
// binary built with the nmhost_testhooks tag (cmd/nmhost's script tests);
// a released binary always reads AdminPolicyPath.
var testAdminPolicyAllowed = false

// runPolicyList: nmhost policy list [--json]. Every rule in force, with
// where it comes from: the administrator's file (and, in a browser's host
// process, the extension's managed storage, which only the host sees),
// then the person's own: each agent's grants and remembered answers.
func runPolicyList(ctx context.Context, env Env) error {
	var asJSON bool
	fs := flag.NewFlagSet("policy list", flag.ContinueOnError)
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	if _, err := parse(specFor("policy list"), fs, env); err != nil {
		return err
	}
	// The core reads the administrator's file, and refuses one it cannot
	// trust, as every other door does.
	core, err := openApp(env)
	if err != nil {
		return err
	}
	defer core.Close(context.WithoutCancel(ctx))
	policies := core.Admin().Policies()
	type rule struct {
		Source string `json:"source"`
		Rule   string `json:"rule"`
		Value  string `json:"value"`
	}
	var rules []rule
	add := func(source, name string, values ...string) {
		for _, v := range values {
			rules = append(rules, rule{source, name, v})
		}
	}
	for _, admin := range policies {
		for _, p := range admin.BlockedPermissions {
			add(admin.Source, "blockedPermissions", string(p))
		}
		add(admin.Source, "deniedHosts", admin.DeniedHosts...)
		if admin.MaxSessionLevel != "" {
			add(admin.Source, "maxSessionLevel", admin.MaxSessionLevel)
		}
		if admin.ExportEndpoint != "" {
			add(admin.Source, "exportEndpoint", admin.ExportEndpoint)
		}
	}
	agents, err := core.Agents().ListAgents(ctx)
	if err != nil {
		return err
	}
	for _, a := range agents {
		for _, g := range a.Grants {
			add("user", "grant", a.Profile.AgentID+" "+string(g.Permission))
		}
		prefs, err := core.Answers().ListPreferences(ctx, a.Profile.AgentID)
		if err != nil {
			return err
		}
		for _, p := range prefs {
			add("user", "answer", strings.TrimSpace(a.Profile.AgentID+" "+p.Operation+" "+p.Target+" "+string(p.Answer)))
		}
	}
	if asJSON {
		if rules == nil {
			rules = []rule{}
		}
		return json.NewEncoder(env.Stdout).Encode(rules)
	}
	if len(policies) == 0 {
		fmt.Fprintf(env.Stdout, "no admin policy (%s); managed storage, when Chrome's policy sets it, applies in the browser's host processes\n", adminPolicyPath())
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SOURCE\tRULE\tVALUE")
	for _, r := range rules {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", mediator.EscapeTerminal(r.Source), r.Rule, mediator.EscapeTerminal(r.Value))
	}
	return tw.Flush()
}
