package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"

	"github.com/agentgate/nmhost/mediator"
)

// Relayed prompts: a door with nobody to ask (the MCP gateway an MCP
// client started) puts its question in the store; a door with the person
// (a native host the extension is connected to) asks it through its own
// prompt window and puts the answer back. The asker applies the answer
// as its own prompt's: the policy that asked remembers and records it.

// DefaultClaimWithin is how long a relayed question waits for a process
// that can ask the person before the asker stops waiting.
const DefaultClaimWithin = 5 * time.Second

// relayPoll is how often the asker looks for its answer, and a host for
// questions.
const relayPoll = 100 * time.Millisecond

// relayedRequest is the question as it travels: the prompt's request,
// and what the request does not carry in JSON (the session, a tool's
// description).
type relayedRequest struct {
	Request     mediator.PromptRequest `json:"request"`
	SessionID   string                 `json:"sessionId,omitempty"`
	Description string                 `json:"description,omitempty"`
	Changed     string                 `json:"changed,omitempty"`
	Preview     string                 `json:"preview,omitempty"`
}

// RelayPrompter asks through whichever process can ask the person.
type RelayPrompter struct {
	a *App
	// ClaimWithin: a question no process claimed by then is refused with
	// confirmation_required (nobody can be asked). 0: DefaultClaimWithin.
	ClaimWithin time.Duration
}

// RelayPrompter is a Prompter that relays its questions (RelayPrompter).
func (a *App) RelayPrompter() *RelayPrompter { return &RelayPrompter{a: a} }

// Prompt implements mediator.Prompter.
func (r *RelayPrompter) Prompt(ctx context.Context, req mediator.PromptRequest) (mediator.Answer, error) {
	rr := relayedRequest{Request: req, SessionID: req.Op.SessionID, Preview: req.Op.Preview}
	if req.Op.Tool != nil {
		rr.Description, rr.Changed = req.Op.Tool.Description, req.Op.Tool.Changed
	}
	b, err := json.Marshal(rr)
	if err != nil {
		return "", err
	}
	raw := make([]byte, 16)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	id := hex.EncodeToString(raw)
	expires := time.Now().Add(req.Timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(expires) {
		expires = d
	}
	if err := r.a.st.RelayPrompt(ctx, id, b, expires); err != nil {
		return "", err
	}
	defer r.a.st.ForgetRelayedPrompt(context.WithoutCancel(ctx), id)
	within := r.ClaimWithin
	if within <= 0 {
		within = DefaultClaimWithin
	}
	unclaimed := time.Now().Add(within)
	tick := time.NewTicker(relayPoll)
	defer tick.Stop()
	for {
		claimed, answered, ans, code, msg, err := r.a.st.RelayedAnswer(ctx, id)
		switch {
		case err != nil:
			return "", err
		case answered && code != "":
			return "", mediator.Errorf(mediator.Code(code), "%s", msg)
		case answered:
			return mediator.Answer(ans), nil
		case !claimed && time.Now().After(unclaimed):
			return "", mediator.Errorf(mediator.CodeConfirmRequired,
				"it needs your confirmation and nobody could be asked: no browser with the extension took the question within %s, and there is no terminal", within)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-tick.C:
		}
	}
}

// ServeRelayedPrompts claims the questions other processes relay and asks
// them through p, the person's prompt window, until ctx ends. claimer
// names this process in the store.
func (a *App) ServeRelayedPrompts(ctx context.Context, claimer string, p mediator.Prompter) {
	tick := time.NewTicker(relayPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		q, ok, err := a.st.ClaimRelayedPrompt(ctx, claimer)
		if err != nil || !ok {
			continue
		}
		go a.askRelayed(ctx, claimer, p, q.ID, q.Request, q.Expires)
	}
}

func (a *App) askRelayed(ctx context.Context, claimer string, p mediator.Prompter, id string, raw []byte, expires time.Time) {
	answer := func(ans mediator.Answer, err error) {
		code, msg := "", ""
		if err != nil {
			code, msg = string(mediator.CodeOf(err)), mediator.MessageOf(err)
			if errors.Is(err, context.DeadlineExceeded) {
				code, msg = string(mediator.CodeTimeout), "nobody answered the prompt in time"
			}
		}
		_ = a.st.AnswerRelayedPrompt(context.WithoutCancel(ctx), id, claimer, string(ans), code, msg)
	}
	var rr relayedRequest
	// decode: written by RelayPrompter of this same binary's store; a
	// question that does not read is answered as an error, never asked.
	if err := json.Unmarshal(raw, &rr); err != nil {
		answer("", mediator.Errorf(mediator.CodeBadRequest, "a relayed question could not be read"))
		return
	}
	req := rr.Request
	req.Op.SessionID, req.Op.Preview = rr.SessionID, rr.Preview
	if req.Op.Tool != nil {
		req.Op.Tool.Description, req.Op.Tool.Changed = rr.Description, rr.Changed
	}
	pctx, cancel := context.WithDeadline(ctx, expires)
	defer cancel()
	// The asker may stop waiting (its client left): the question is then
	// gone from the store, and the window asking it is withdrawn.
	go func() {
		tick := time.NewTicker(5 * relayPoll)
		defer tick.Stop()
		for {
			select {
			case <-pctx.Done():
				return
			case <-tick.C:
			}
			if claimed, _, _, _, _, err := a.st.RelayedAnswer(pctx, id); err == nil && !claimed {
				cancel()
				return
			}
		}
	}()
	answer(p.Prompt(pctx, req))
}
