package app

import (
	"context"

	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/netproxy/agentfetch"
)

// Admin is the administrator's rules in force now.
func (a *App) Admin() mediator.Admin { return *a.admin.Load() }

// SetManaged puts the policy a browser's managed storage holds beside
// the machine's file for this process, replacing what managed storage
// set before: it can only add rules to the file's, never lift them. It
// returns the rules in force afterwards.
func (a *App) SetManaged(managed mediator.AdminPolicy) mediator.Admin {
	next := mediator.NewAdmin(a.machine).With(managed)
	a.admin.Store(&next)
	return next
}

// Policy is the mediator's policy over this App's records and admin
// rules, asking through o.Prompter (nil: operations that need a person
// are denied with confirmation_required). Every front end decides
// through a Policy built here, so the admin rules are the same ones.
func (a *App) Policy(o mediator.PolicyOptions) *mediator.Policy {
	o.Admin = a.Admin
	return mediator.NewPolicy(a.st, o)
}

// FetchService is the mediated fetch (grant, ACL, policy, every redirect
// hop) deciding through auth and logging denials through logDenial.
func (a *App) FetchService(auth mediator.Authorizer, logDenial func(context.Context, mediator.Denial)) (*agentfetch.Service, error) {
	return agentfetch.New(agentfetch.Config{Store: a.st, Fetcher: a.fetcher, Authorizer: auth, LogDenial: logDenial, Admin: a.Admin})
}

// LogDenial writes d to the denial log, naming layer when d names none.
// A denial is written even when the request that caused it was
// cancelled.
func (a *App) LogDenial(ctx context.Context, layer string, d mediator.Denial) {
	if d.Context.Layer == "" {
		d.Context.Layer = layer
	}
	_, _ = a.st.LogDenial(context.WithoutCancel(ctx), d)
}
