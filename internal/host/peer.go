package host

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentgate/nmhost/internal/shown"
	"github.com/agentgate/nmhost/mediator"
)

// resultTypes are the frames the extension sends in answer to the host's
// own requests. They go to the waiting caller and are never answered: an
// answer to an answer would let the two sides ping-pong forever.
var resultTypes = map[string]string{
	"browser-result": "browser-call",
	"prompt-result":  "prompt",
	// A layer's prompt: one answer for every task it lists.
	"prompt-layer-result": "prompt-layer",
}

// promptTypes are the host's requests that open a window for a person.
// One that ends without its answer (the run it belongs to ended, its time
// ran out, the call was cancelled) is withdrawn with a prompt-cancel, so
// the window closes instead of waiting for an answer nothing reads.
var promptTypes = map[string]bool{"prompt": true, "prompt-layer": true}

// maxCancelled bounds the withdrawn prompts remembered for their late
// answers: a late answer to an older one is only dropped and logged.
const maxCancelled = 256

// DefaultBrowserTimeout bounds a browser-call: long enough for a slow page
// or the clipboard's offscreen document, short enough that a hung tab does
// not hold a run until its own timeout.
const DefaultBrowserTimeout = 15 * time.Second

// peer sends host-initiated requests to the extension and matches the
// results to their callers by id.
//
// An id is "h:INSTANCE:N": INSTANCE is 64 random bits drawn once per
// host process, N counts this process's requests. A process numbering
// afresh from h:1 would take an answer given to the previous process's
// h:1 (its window still open when that process ended) as its own; with
// the instance in the id, that answer names a request no process waits
// for, and is refused (answer_mismatch).
type peer struct {
	s        *server
	next     atomic.Int64
	instOnce sync.Once
	inst     string
	mu       sync.Mutex
	waiting  map[string]waiter
	// cancelled are withdrawn prompts by id, oldest first in order: an
	// answer that crossed the prompt-cancel on the way is refused and
	// recorded as theirs.
	cancelled map[string]mediator.Denial
	order     []string
}

type waiter struct {
	typ string // the request type; only its result type may answer
	ch  chan *request
	// shown is a prompt's digest as sent (internal/shown): its answer
	// counts only with the same digest, computed by the window that
	// showed it.
	shown string
}

// instance is this process's part of every id it sends.
func (p *peer) instance() string {
	p.instOnce.Do(func() {
		var b [8]byte
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (it panics instead)
		p.inst = hex.EncodeToString(b[:])
	})
	return p.inst
}

// deliver hands a result frame to the caller waiting for its id. An
// answer to a prompt the host withdrew is refused and recorded
// (refuseLate); other results nobody waits for (late, invented) are
// dropped.
func (p *peer) deliver(req *request) {
	var id string
	// decode: the id parseRequest already checked (validID) is a JSON
	// string or number; a number is not a host id.
	if json.Unmarshal(req.ID, &id) != nil {
		p.s.log.Warn("result dropped: id is not a host id", "type", req.Type, "id", clip(string(req.ID)))
		return
	}
	p.mu.Lock()
	w, ok := p.waiting[id]
	if ok && resultTypes[req.Type] == w.typ {
		delete(p.waiting, id)
	} else {
		ok = false
	}
	p.mu.Unlock()
	if !ok && p.refuseLate(id, req) {
		return
	}
	if !ok && promptTypes[resultTypes[req.Type]] {
		p.refuseUnbound(id, req)
		return
	}
	if !ok {
		p.s.log.Warn("result dropped: nobody waits for it", "type", req.Type, "id", clip(id))
		return
	}
	w.ch <- req // buffered: never blocks the reader
}

// refuseUnbound records a person's answer that names no prompt this
// process waits for: another process's (sent before a restart), one
// never sent, or one given as the wrong kind of answer. It counts for
// nothing, and is on the record.
func (p *peer) refuseUnbound(id string, req *request) {
	var res promptResult
	// decode: only to name the answer in the denial; it decides nothing.
	_ = json.Unmarshal(req.Raw, &res)
	p.s.log.Warn("answer refused: no prompt of this process has its id", "type", req.Type, "id", clip(id))
	p.s.recordDenial(context.Background(), mediator.Denial{Code: mediator.CodeAnswerMismatch,
		Context: mediator.DenialContext{Reason: "an answer for a prompt this host process did not send or does not wait for (another process's, sent before a restart, or never sent)",
			Details: map[string]string{"promptId": clip(id), "answer": clip(string(res.Answer)), "type": clip(req.Type)}}})
}

// ask sends a request of type typ with fields beside id and type, and waits
// for its result, the timeout, the caller's context or the browser leaving.
func (p *peer) ask(ctx context.Context, typ string, timeout time.Duration, fields map[string]any) (*request, error) {
	id := "h:" + p.instance() + ":" + strconv.FormatInt(p.next.Add(1), 10)
	msg := make(map[string]any, len(fields)+2)
	for k, v := range fields {
		msg[k] = v
	}
	msg["id"], msg["type"] = id, typ
	w := waiter{typ: typ, ch: make(chan *request, 1)}
	if promptTypes[typ] {
		d, err := shown.Of(msg)
		if err != nil {
			return nil, &mediator.Error{Code: mediator.CodeInternal, Msg: typ + " could not be encoded", Err: err}
		}
		w.shown = d
	}
	p.mu.Lock()
	if p.waiting == nil {
		p.waiting = map[string]waiter{}
	}
	p.waiting[id] = w
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.waiting, id)
		p.mu.Unlock()
	}()

	rawID, _ := json.Marshal(id)
	if err := p.s.write(rawID, msg); err != nil {
		return nil, &mediator.Error{Code: mediator.CodeInternal, Msg: typ + " could not be encoded", Err: err}
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case r := <-w.ch:
		if err := w.bound(r); err != nil {
			return nil, err
		}
		return r, nil
	case <-timer.C:
		p.withdraw(id, typ, fields, "its time ran out")
		p.lateInQueue(id, w)
		return nil, mediator.Errorf(mediator.CodeTimeout, "the extension did not answer %s within %v", typ, timeout)
	case <-p.s.broken:
		return nil, mediator.Errorf(mediator.CodeNoBrowser, "the extension went away before answering %s", typ)
	case <-p.s.inputEnded:
		return nil, mediator.Errorf(mediator.CodeNoBrowser, "the extension closed the connection before answering %s", typ)
	case <-ctx.Done():
		cause := context.Cause(ctx)
		if mediator.CodeOf(cause) == mediator.CodePromptCancelled {
			// The run ended (pythonRun.end): the call is refused for
			// that, not as a prompt nobody answered.
			p.withdraw(id, typ, fields, mediator.MessageOf(cause))
			p.lateInQueue(id, w)
			return nil, &mediator.Error{Code: mediator.CodePromptCancelled, Msg: mediator.MessageOf(cause), Err: ctx.Err()}
		}
		why := "the call it was for was cancelled"
		if errors.Is(cause, context.DeadlineExceeded) {
			why = "its time ran out"
		}
		p.withdraw(id, typ, fields, why)
		p.lateInQueue(id, w)
		return nil, &mediator.Error{Code: mediator.CodeTimeout, Msg: typ + " was cancelled", Err: ctx.Err()}
	}
}

// bound refuses a prompt's answer given in a window that did not show
// this prompt: its digest is not the one the host computed when it sent
// it. A result that cannot be read is left to readAnswer, which denies.
func (w waiter) bound(r *request) error {
	if w.shown == "" {
		return nil
	}
	var res promptResult
	if mediator.DecodeExact(r.Raw, &res) != nil {
		return nil
	}
	if res.Shown != w.shown {
		return mediator.Errorf(mediator.CodeAnswerMismatch,
			"the answer came from a window that did not show this prompt (its digest %q is not the prompt's)", clip(res.Shown))
	}
	return nil
}

// lateInQueue refuses an answer that reached w as the wait ended another
// way (select picks either when both are ready): it counts for nothing
// and is recorded like any later one.
func (p *peer) lateInQueue(id string, w waiter) {
	select {
	case r := <-w.ch:
		p.refuseLate(id, r)
	default:
	}
}

// refuseLate records req, a prompt-result for prompt id that the host
// withdrew, as refused: the answer counts for nothing, and is on the
// record. It reports whether id was such a prompt.
func (p *peer) refuseLate(id string, req *request) bool {
	if resultTypes[req.Type] != "prompt" {
		return false
	}
	p.mu.Lock()
	late, ok := p.cancelled[id]
	delete(p.cancelled, id)
	p.mu.Unlock()
	if !ok {
		return false
	}
	var res promptResult
	_ = mediator.DecodeExact(req.Raw, &res)
	late.Context.Details["answer"] = clip(string(res.Answer))
	p.s.recordDenial(context.Background(), late)
	return true
}

// withdraw tells the extension that prompt id is over (prompt-cancel): its
// window closes and an answer given to it counts for nothing. The prompt
// is kept, bounded, so an answer already on its way is refused and
// recorded (deliver). Requests other than prompts are not withdrawn.
func (p *peer) withdraw(id, typ string, fields map[string]any, why string) {
	if !promptTypes[typ] {
		return
	}
	// Nobody waits from here on: an answer arriving after the
	// prompt-cancel is sent must find the prompt withdrawn, not waited for.
	p.mu.Lock()
	delete(p.waiting, id)
	p.mu.Unlock()
	// A layer's prompt speaks for a workflow, not one agent's operation:
	// its late answer is dropped and logged by deliver, not kept here.
	if typ == "prompt" {
		agent, _ := fields["agentId"].(string)
		op, _ := fields["operation"].(string)
		perm, _ := fields["permission"].(mediator.Permission)
		late := mediator.Denial{AgentID: agent, Permission: string(perm), Code: mediator.CodePromptCancelled,
			Context: mediator.DenialContext{Reason: "answered after the prompt was withdrawn: " + why,
				Details: map[string]string{"operation": op, "promptId": id}}}
		p.mu.Lock()
		if p.cancelled == nil {
			p.cancelled = map[string]mediator.Denial{}
		}
		p.cancelled[id] = late
		p.order = append(p.order, id)
		if len(p.order) > maxCancelled {
			delete(p.cancelled, p.order[0])
			p.order = p.order[1:]
		}
		p.mu.Unlock()
	}
	rawID, _ := json.Marshal(id)
	if err := p.s.write(rawID, map[string]any{"id": id, "type": "prompt-cancel", "code": mediator.CodePromptCancelled, "reason": why}); err != nil {
		p.s.log.Warn("prompt-cancel not sent", "id", id, "err", err)
	}
}

// browserResult is what the extension answers to a browser-call.
type browserResult struct {
	Success bool            `json:"success"`
	Data    json.RawMessage `json:"data"`
	Code    string          `json:"code"`
	Error   string          `json:"error"`
}

// Browser performs page, clipboard and notification calls for one run in
// the extension. context is the object the extension sent with run-agent.
type Browser struct {
	peer    *peer
	agentID string
	context json.RawMessage
	timeout time.Duration
}

// Call sends a browser-call and returns the extension's data. A failure the
// extension reports keeps its code when the code is well-formed; the text
// is the extension's, bounded.
func (b *Browser) Call(ctx context.Context, call string, params any) (json.RawMessage, error) {
	fields := map[string]any{"agentId": b.agentID, "call": call, "params": params}
	if len(b.context) > 0 {
		fields["context"] = b.context
	}
	// Perform or cancel is decided once, here. A call whose run ended
	// before it was sent is not sent. One sent may be performed whatever
	// the run does next, so its answer is waited for (within the browser
	// timeout) even when the run ends meanwhile: the record says what the
	// extension did, never "cancelled" for a write that landed.
	if ctx.Err() != nil {
		cause := context.Cause(ctx)
		code := mediator.CodeTimeout
		if mediator.CodeOf(cause) == mediator.CodePromptCancelled {
			code = mediator.CodePromptCancelled
		}
		return nil, &mediator.Error{Code: code, Msg: "browser-call was cancelled before it was sent: nothing was done", Err: ctx.Err()}
	}
	r, err := b.peer.ask(context.WithoutCancel(ctx), "browser-call", b.timeout, fields)
	if err != nil {
		return nil, err
	}
	var res browserResult
	// decode: a page's answer carries what the page script returned; it
	// is read for success, code and error, and its data goes back to the
	// agent as the page gave it. The answer itself is the extension's.
	if err := json.Unmarshal(r.Raw, &res); err != nil {
		return nil, &mediator.Error{Code: mediator.CodeBadRequest, Msg: "the extension's browser-result is malformed", Err: err}
	}
	if !res.Success {
		code := mediator.Code(res.Code)
		if !codePattern().MatchString(res.Code) || code == mediator.CodeAllowed {
			code = mediator.CodeInternal
		}
		return nil, &mediator.Error{Code: code, Msg: "browser: " + clip(res.Error)}
	}
	if len(res.Data) == 0 {
		return json.RawMessage("{}"), nil
	}
	return res.Data, nil
}

// prompter asks the user through the extension's prompt window.
type prompter struct{ peer *peer }

// promptTarget is the exact target a prompt shows: never contents.
type promptTarget struct {
	Method   string `json:"method,omitempty"`
	URL      string `json:"url,omitempty"`
	Host     string `json:"host,omitempty"`
	Origin   string `json:"origin,omitempty"`
	Selector string `json:"selector,omitempty"`
	// Path is a workspace name; Paths the names a shell command reads
	// and writes, outside ones absolute.
	Path       string   `json:"path,omitempty"`
	Paths      []string `json:"paths,omitempty"`
	TextLength int      `json:"textLength,omitempty"`
	// Tool is an MCP tool call's: which tool of which server, what its
	// server says it does, and the hashes an answer is bound to.
	Tool *promptTool `json:"tool,omitempty"`
}

// promptTool is what a prompt shows of an MCP tool call.
type promptTool struct {
	Server      string `json:"server"`
	Tool        string `json:"tool"`
	Description string `json:"description,omitempty"`
	// Changed says what changed in the tool since it was listed before,
	// for the person to see before answering again.
	Changed    string `json:"changed,omitempty"`
	Definition string `json:"definition"`
	ArgsSHA256 string `json:"argsSha256"`
}

// targetOf is the one place an operation becomes what a prompt shows.
func targetOf(op mediator.Operation) promptTarget {
	t := promptTarget{Method: op.Method, URL: op.URL, Host: op.Host, Origin: op.Origin,
		Selector: op.Selector, Path: op.Path, TextLength: op.TextLength}
	if op.Shell != nil {
		t.Paths = op.Shell.Paths
	}
	if tc := op.Tool; tc != nil {
		t.Tool = &promptTool{Server: tc.Server, Tool: tc.Tool, Description: tc.Description, Changed: tc.Changed, Definition: tc.Definition, ArgsSHA256: tc.ArgsSHA256}
	}
	return t
}

// Prompt sends a prompt, with the answers it offers, and waits for its
// prompt-result. An answer it did not offer, or no answer at all, is
// refused with answer_not_offered.
func (p prompter) Prompt(ctx context.Context, req mediator.PromptRequest) (mediator.Answer, error) {
	op := req.Op
	r, err := p.peer.ask(ctx, "prompt", req.Timeout, map[string]any{
		"agentId": op.AgentID, "operation": op.Name, "permission": op.Permission, "class": req.Class,
		"target":     targetOf(op),
		"rememberAs": req.Target, "permissionSet": req.PermissionSet,
		"reason": req.Reason, "timeoutMs": req.Timeout.Milliseconds(), "offers": req.Offers,
		// What a write carries, its start: the person sees what they
		// allow, and the shown digest binds the answer to it.
		"preview": op.Preview,
	})
	if err != nil {
		return "", err
	}
	return readAnswer(r, req.Offers)
}

// readAnswer reads a prompt-result exactly and refuses an answer outside
// offered; a malformed result denies as a plain deny would.
func readAnswer(r *request, offered []mediator.Answer) (mediator.Answer, error) {
	var res promptResult
	if mediator.DecodeExact(r.Raw, &res) != nil {
		return mediator.AnswerDeny, nil
	}
	if err := mediator.CheckAnswer(res.Answer, offered); err != nil {
		return "", err
	}
	return res.Answer, nil
}

// promptResult is the extension's answer to a prompt or a layer's prompt,
// read exactly: {"answer":"deny","answer":"allow-once"} is refused, not
// read as either.
type promptResult struct {
	ID     json.RawMessage `json:"id"`
	Type   string          `json:"type"`
	Answer mediator.Answer `json:"answer"`
	// Shown is the digest of the prompt as its window received it
	// (internal/shown, extension/shown.js).
	Shown string `json:"shown"`
}
