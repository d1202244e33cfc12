package selfcheck

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/netproxy"
)

// Result is one rule of the check: what was tried, what the rules say
// should happen, what happened. Skip says why a rule could not be tried
// against this agent (its profile lets the target through itself).
type Result struct {
	Class string `json:"class"`
	Tried string `json:"tried"`
	Want  string `json:"want,omitempty"`
	Got   string `json:"got,omitempty"`
	OK    bool   `json:"ok"`
	Skip  string `json:"skip,omitempty"`
}

// Report is the whole check of one agent at one level.
type Report struct {
	AgentID string   `json:"agentId"`
	Level   string   `json:"level"`
	Results []Result `json:"results"`
	Fired   int      `json:"fired"`
	Failed  int      `json:"failed"`
	Skipped int      `json:"skipped"`
	// Pass: every rule that was tried fired.
	Pass bool `json:"pass"`
}

// Run checks the installed agent agentID of the data directory dir at
// session level: a built-in hostile corpus against its stored profile and
// grants, with no side effects. It reads the store through a throwaway
// copy (VACUUM INTO from a read-only connection), so neither the person's
// database nor their audit trail or denial log is written; workspace
// escapes are tried in a temporary workspace; every fetch goes through a
// resolver that answers from a table (no real DNS) and a dialler that
// connects only to the loopback servers the check started, whatever a
// rule does. `nmhost check` and the host's check-agent run it.
func Run(ctx context.Context, dir, agentID, level string) (Report, error) {
	if _, err := mediator.ParseLevel(level); err != nil {
		return Report{}, err
	}
	if err := mediator.ValidAgentID(agentID); err != nil {
		return Report{}, mediator.Errorf(mediator.CodeUnknownAgent, "no agent %q is installed", mediator.Truncate(agentID, 64))
	}
	tmp, err := os.MkdirTemp("", "nmhost-check-")
	if err != nil {
		return Report{}, err
	}
	defer os.RemoveAll(tmp)
	st, err := snapshotStore(ctx, dir, filepath.Join(tmp, "data"))
	if err != nil {
		return Report{}, err
	}
	defer st.Close()
	rec, err := st.Agent(ctx, agentID)
	if err != nil {
		return Report{}, err
	}
	prefs, err := st.ListPreferences(ctx, agentID)
	if err != nil {
		return Report{}, err
	}
	acl, err := netproxy.NewACL(rec.Profile.Capabilities.AllowedHosts)
	if err != nil {
		return Report{}, fmt.Errorf("the stored allowedHosts of %s do not parse: %w", agentID, err)
	}

	srv, err := startCheckServers()
	if err != nil {
		return Report{}, err
	}
	defer srv.close()

	var results []Result
	results = append(results, checkURLs(ctx, srv, acl)...)
	results = append(results, checkRedirects(ctx, srv, rec.Profile.Capabilities.AllowedHosts)...)
	results = append(results, checkPrivateNames(ctx, srv, acl)...)
	pol := mediator.NewPolicy(readOnlyRecords{st}, mediator.PolicyOptions{}) // no prompter: nobody answers
	results = append(results, checkOperations(ctx, pol, rec, level)...)
	results = append(results, checkOrigins(ctx, pol, rec, prefs, level)...)
	results = append(results, checkTools(ctx, pol, rec, level)...)
	results = append(results, checkWorkspace(filepath.Join(tmp, "ws"))...)
	if n := srv.canaryHits.Load() + srv.canaryConns.Load(); n != 0 {
		results = append(results, Result{Class: "canary", Tried: "every refused request above",
			Want: "nothing reaches the loopback canary", Got: fmt.Sprintf("%d requests or connections reached it", n)})
	} else {
		results = append(results, Result{Class: "canary", Tried: "every refused request above",
			Want: "nothing reaches the loopback canary", Got: "nothing reached it", OK: true})
	}
	for _, d := range srv.strayDials() {
		results = append(results, Result{Class: "dial", Tried: "connect to " + d,
			Want: "only the check's own loopback servers are ever dialled", Got: "refused by the check's dialler"})
	}
	return Summarise(agentID, level, results), nil
}

// Summarise counts results into a Report.
func Summarise(agentID, level string, results []Result) Report {
	r := Report{AgentID: agentID, Level: level, Results: results}
	for _, x := range results {
		switch {
		case x.Skip != "":
			r.Skipped++
		case !x.OK:
			r.Failed++
		default:
			r.Fired++
		}
	}
	r.Pass = r.Failed == 0
	return r
}
