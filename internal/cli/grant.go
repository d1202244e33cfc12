package cli

import (
	"context"
	"flag"
	"fmt"

	"github.com/agentgate/nmhost/mediator"
)

// runGrant is `nmhost grant AGENT PERMISSION` (grant true) and `nmhost
// revoke AGENT PERMISSION`: the options page's grant and revoke buttons
// for a terminal. A revocation sticks: installing the same profile and
// module again, as `nmhost run` does, does not grant it back.
func runGrant(ctx context.Context, env Env, grant bool) error {
	name := map[bool]string{true: "grant", false: "revoke"}[grant]
	args, err := parse(specFor(name), flag.NewFlagSet(name, flag.ContinueOnError), env)
	if err != nil {
		return err
	}
	agent := args[0]
	perm, err := mediator.ParsePermission(args[1])
	if err != nil {
		return usagef(name, "%s; known: %s", mediator.MessageOf(err), permissionNames())
	}
	core, err := openApp(env)
	if err != nil {
		return err
	}
	defer core.Close(context.WithoutCancel(ctx))
	if grant {
		g, err := core.Grant(ctx, agent, perm)
		if err != nil {
			return explainAgentErr(err, agent)
		}
		fmt.Fprintf(env.Stdout, "granted %s to %s (source %s)\n", perm, agent, g.Source)
		return nil
	}
	existed, err := core.Revoke(ctx, agent, perm)
	if err != nil {
		return explainAgentErr(err, agent)
	}
	if !existed {
		fmt.Fprintf(env.Stdout, "%s did not hold %s; it stays without it\n", agent, perm)
		return nil
	}
	fmt.Fprintf(env.Stdout, "revoked %s from %s; it stays revoked when the same agent is installed again (nmhost grant %s %s gives it back)\n", perm, agent, agent, perm)
	return nil
}

// explainAgentErr turns the store's refusals into sentences a person can
// act on.
func explainAgentErr(err error, agent string) error {
	switch mediator.CodeOf(err) {
	case mediator.CodeUnknownAgent:
		return fmt.Errorf("no agent %q is installed (the extension lists them; nmhost run installs one)", mediator.Truncate(agent, 64))
	case mediator.CodeBadRequest:
		return fmt.Errorf("%s", mediator.MessageOf(err))
	}
	return err
}
