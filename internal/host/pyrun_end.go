package host

import (
	"context"
	"fmt"
	"time"

	"github.com/agentgate/nmhost/mediator"
)

// How a Python run's calls find it, and how it ends: python-run-end, or
// its deadline when nobody ends it.

// lookupRun finds an open run of agentID in host s and counts a call of
// it in progress: the caller calls the run's active.Done when the call
// is answered. Anything else (an unknown id, another agent's run, another
// host's, an expired or ended one) is the same unknown_run, so a guess
// learns nothing.
func lookupRun(ctx context.Context, s *server, runID, agentID string) (*pythonRun, error) {
	r, expired, err := findRun(s, runID, agentID)
	if expired != nil {
		// After the lock is let go: it waits for the run's calls and
		// writes the store.
		if eerr := expired.end(ctx); eerr != nil {
			s.log.Error("python run expired; its audit records were not written", "agent", expired.agentID, "err", eerr)
		}
	}
	return r, err
}

// findRun is lookupRun under the lock; an expired run it drops is
// returned to be ended.
func findRun(s *server, runID, agentID string) (r *pythonRun, expired *pythonRun, err error) {
	pythonRuns.Lock()
	defer pythonRuns.Unlock()
	r, ok := pythonRuns.m[runID]
	if ok && r.expiredAt(time.Now()) {
		delete(pythonRuns.m, runID)
		ok, expired = false, r
	}
	if !ok || r.owner != s || r.agentID != agentID {
		return nil, expired, mediator.Errorf(mediator.CodeUnknownRun, "no open Python run %q of agent %q", clip(runID), clip(agentID))
	}
	if r.calls++; r.calls > maxPythonCalls {
		return nil, nil, mediator.Errorf(mediator.CodeCallLimit, "the run made more than %d calls", maxPythonCalls)
	}
	r.active.Add(1)
	return r, nil, nil
}

// end closes a run already taken out of pythonRuns (ended or expired):
// its calls in progress are cancelled and waited for, then its records
// (runs.Deps.Barrier), so the run's end is reported only once every
// record of it is written (durable in the strict durability); its error
// says when one was not. Then the run's session is removed when it is
// the run's own (ephemeral): nobody else knows that session. A failure
// to remove it is logged; the store's next open sweeps what is left.
func (r *pythonRun) end(ctx context.Context) error {
	if r.expiry != nil {
		r.expiry.Stop()
	}
	if r.cancel != nil {
		r.cancel(errRunEnded)
	}
	r.active.Wait()
	var err error
	if r.bar != nil {
		err = r.bar.Wait(context.WithoutCancel(ctx))
	}
	if r.ephemeral {
		if derr := r.owner.app.Sessions().DeleteEphemeralSession(context.WithoutCancel(ctx), r.session); derr != nil {
			r.owner.log.Error("ephemeral session not removed", "session", r.session, "err", derr)
		}
	}
	return err
}

// handlePythonRunEnd closes a run: later calls with its id are unknown_run.
func handlePythonRunEnd(ctx context.Context, s *server, req *request) (any, error) {
	var p struct {
		RunID   string `json:"runId"`
		AgentID string `json:"agentId"`
		Status  string `json:"status"`
	}
	if err := req.decode(&p); err != nil {
		return nil, err
	}
	pythonRuns.Lock()
	r, ok := pythonRuns.m[p.RunID]
	if ok && r.owner == s && r.agentID == p.AgentID {
		delete(pythonRuns.m, p.RunID)
	} else {
		ok = false
	}
	pythonRuns.Unlock()
	if !ok {
		return nil, mediator.Errorf(mediator.CodeUnknownRun, "no open Python run %q of agent %q", clip(p.RunID), clip(p.AgentID))
	}
	if err := r.end(ctx); err != nil {
		return nil, fmt.Errorf("agent[%s] python-run-end: %w", clip(p.AgentID), err)
	}
	s.log.Info("python run ended", "agent", p.AgentID, "status", clip(p.Status), "calls", r.calls)
	return map[string]any{"runId": p.RunID, "ended": true, "calls": r.calls}, nil
}
