package wasmhost

import (
	"errors"

	"github.com/tetratelabs/wazero/api"

	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/netproxy"
	"github.com/agentgate/nmhost/netproxy/agentfetch"
)

// maxArgBytes bounds one argument a guest passes (a selector, a text, a
// fetch request): the request body limit of a fetch, with room for JSON.
const maxArgBytes = 33 << 20

// arg copies a guest's (ptr, len) argument out of its memory. Pointers
// and lengths are the guest's to choose: out of range is an error code
// for the guest, never a host panic.
func arg(mod api.Module, ptr, n uint64) ([]byte, error) { return argPlus(mod, ptr, n, 0) }

// argPlus is arg with room for extra more bytes after the argument.
func argPlus(mod api.Module, ptr, n uint64, extra int) ([]byte, error) {
	p, l := api.DecodeU32(ptr), api.DecodeU32(n)
	if l > maxArgBytes {
		return nil, mediator.Errorf(mediator.CodeTooLarge, "an argument of %d bytes is over the %d-byte limit", l, maxArgBytes)
	}
	b, ok := mod.Memory().Read(p, l)
	if !ok {
		return nil, mediator.Errorf(mediator.CodeBadRequest, "pointer %d and length %d are outside the module's memory", p, l)
	}
	return append(make([]byte, 0, len(b)+extra), b...), nil
}

// authorized runs do after the Authorizer allowed op, and reports its
// outcome. A denial becomes a denial event of this run.
func (ru *run) authorized(op mediator.Operation, do func() ([]byte, error)) ([]byte, error) {
	done, err := ru.authorize(op)
	if err != nil {
		return nil, err
	}
	out, err := do()
	done(err)
	return out, err
}

// authorize puts op to the Authorizer as this run's agent at its session
// level. A nil error allows it, and done must then be called with its
// outcome; a denial becomes a denial event of this run.
func (ru *run) authorize(op mediator.Operation) (func(error), error) {
	op.AgentID, op.SessionLevel, op.SessionID = ru.spec.Agent.Profile.AgentID, ru.spec.SessionLevel, ru.spec.SessionID
	rule, _ := mediator.RuleFor(op)
	op.Permission = rule.Permission
	done, err := ru.spec.Authorizer.Authorize(ru.ctx, op)
	if err != nil {
		ru.noteDenial(mediator.Denial{AgentID: op.AgentID, Permission: string(op.Permission), Code: mediator.CodeOf(err),
			Context: mediator.DenialContext{URL: op.URL, Reason: mediator.MessageOf(err), Method: op.Method, Layer: "policy",
				Details: map[string]string{"operation": op.Name}}})
		return nil, err
	}
	return done, nil
}

// browser sends an allowed call to the extension.
func (ru *run) browser(op mediator.Operation, params any) ([]byte, error) {
	if ru.spec.Browser == nil {
		return nil, mediator.Errorf(mediator.CodeNoBrowser, "%s needs the browser and none is attached", op.Name)
	}
	return ru.authorized(op, func() ([]byte, error) {
		return ru.spec.Browser.Call(ru.ctx, op.Name, params)
	})
}

func (ru *run) input(api.Module, []uint64) ([]byte, error) {
	return append([]byte(nil), ru.spec.Input...), nil
}

func (ru *run) log(mod api.Module, stack []uint64) ([]byte, error) {
	// One copy out of the guest's memory, with room for the newline: the
	// line is hashed into the run's aggregate record and written out.
	msg, err := argPlus(mod, stack[0], stack[1], 1)
	if err != nil {
		return nil, err
	}
	return ru.authorized(mediator.Operation{Name: mediator.OpLog, TextLength: len(msg), Content: string(msg)}, func() ([]byte, error) {
		if _, err := ru.write(append(msg, '\n')); err != nil {
			return nil, err
		}
		return nil, nil
	})
}

func (ru *run) querySelector(mod api.Module, stack []uint64) ([]byte, error) {
	sel, err := arg(mod, stack[0], stack[1])
	if err != nil {
		return nil, err
	}
	op := mediator.Operation{Name: mediator.OpPageQuerySelector, Selector: string(sel), Origin: ru.spec.PageOrigin}
	return ru.browser(op, map[string]any{"selector": string(sel)})
}

func (ru *run) querySelectorAll(mod api.Module, stack []uint64) ([]byte, error) {
	sel, err := arg(mod, stack[0], stack[1])
	if err != nil {
		return nil, err
	}
	limit := int(api.DecodeI32(stack[2]))
	if limit <= 0 || limit > 1000 {
		limit = 1000
	}
	op := mediator.Operation{Name: mediator.OpPageQuerySelectorAll, Selector: string(sel), Origin: ru.spec.PageOrigin}
	return ru.browser(op, map[string]any{"selector": string(sel), "limit": limit})
}

func (ru *run) getPageText(api.Module, []uint64) ([]byte, error) {
	return ru.browser(mediator.Operation{Name: mediator.OpPageGetPageText, Origin: ru.spec.PageOrigin}, map[string]any{})
}

func (ru *run) setElementText(mod api.Module, stack []uint64) ([]byte, error) {
	sel, err := arg(mod, stack[0], stack[1])
	if err != nil {
		return nil, err
	}
	text, err := arg(mod, stack[2], stack[3])
	if err != nil {
		return nil, err
	}
	op := mediator.Operation{Name: mediator.OpPageSetElementText, Selector: string(sel), TextLength: len(text), Origin: ru.spec.PageOrigin,
		Preview: mediator.PreviewOf(string(text))}
	return ru.browser(op, map[string]any{"selector": string(sel), "text": string(text)})
}

func (ru *run) clipboardRead(api.Module, []uint64) ([]byte, error) {
	return ru.browser(mediator.Operation{Name: mediator.OpClipboardRead}, map[string]any{})
}

func (ru *run) clipboardWrite(mod api.Module, stack []uint64) ([]byte, error) {
	text, err := arg(mod, stack[0], stack[1])
	if err != nil {
		return nil, err
	}
	return ru.browser(mediator.Operation{Name: mediator.OpClipboardWrite, TextLength: len(text), Preview: mediator.PreviewOf(string(text))},
		map[string]any{"text": string(text)})
}

func (ru *run) notify(mod api.Module, stack []uint64) ([]byte, error) {
	title, err := arg(mod, stack[0], stack[1])
	if err != nil {
		return nil, err
	}
	msg, err := arg(mod, stack[2], stack[3])
	if err != nil {
		return nil, err
	}
	op := mediator.Operation{Name: mediator.OpNotificationsShow, TextLength: len(title) + len(msg), Preview: mediator.PreviewOf(string(title) + ": " + string(msg))}
	return ru.browser(op, map[string]any{"title": string(title), "message": string(msg)})
}

// fetchRequest is the JSON a guest passes to fetch.
type fetchRequest struct {
	URL          string            `json:"url"`
	Method       string            `json:"method"`
	Headers      map[string]string `json:"headers"`
	Body         string            `json:"body"`
	BodyEncoding string            `json:"bodyEncoding"` // "text" (default) or "base64"
}

// fetch goes through the same mediated path as the network-fetch message;
// that path records its own denials, this run reports them as events.
func (ru *run) fetch(mod api.Module, stack []uint64) ([]byte, error) {
	raw, err := arg(mod, stack[0], stack[1])
	if err != nil {
		return nil, err
	}
	var req fetchRequest
	if err := mediator.DecodeExact(raw, &req); err != nil {
		return nil, mediator.Errorf(mediator.CodeBadRequest, "fetch: the request is not the JSON docs/abi.md describes (names match exactly; no unknown, repeated or case-variant members)")
	}
	body, err := agentfetch.DecodeBody(req.Body, req.BodyEncoding)
	if err != nil {
		return nil, err
	}
	if ru.spec.Fetch == nil {
		return nil, mediator.Errorf(mediator.CodeNetworkDisabled, "this run has no network")
	}
	resp, err := ru.spec.Fetch(ru.ctx, netproxy.Request{URL: req.URL, Method: req.Method, Headers: req.Headers, Body: body})
	if err != nil {
		if isDenial(err) {
			ru.noteDenial(mediator.Denial{AgentID: ru.spec.Agent.Profile.AgentID, Permission: string(mediator.PermNetworkFetch),
				Code: mediator.CodeOf(err), Context: mediator.DenialContext{URL: req.URL, Reason: mediator.MessageOf(err), Method: req.Method}})
		}
		return nil, err
	}
	res, err := agentfetch.NewResult(resp)
	defer resp.Release() // the body is copied into the reply below
	if err != nil {
		return nil, err
	}
	return res.AppendJSON(make([]byte, 0, res.JSONLen())), nil
}

// isDenial tells a refusal (recorded in the denial log) from a failure
// such as a timeout or an unreachable server.
func isDenial(err error) bool {
	var de *netproxy.DenyError
	if errors.As(err, &de) {
		return true
	}
	switch mediator.CodeOf(err) {
	case mediator.CodeUnknownAgent, mediator.CodePermissionNotGranted, mediator.CodeNetworkDisabled,
		mediator.CodeHostNotAllowed, mediator.CodePrivateAddress, mediator.CodeSchemeNotAllowed,
		mediator.CodeNonCanonicalHost, mediator.CodeInvalidURL, mediator.CodeHeaderNotAllowed,
		mediator.CodeMethodNotAllowed, mediator.CodeTooManyRedirects, mediator.CodeInvalidAllowedHost,
		mediator.CodeUserDenied, mediator.CodeBlockedByUser, mediator.CodePromptTimeout,
		mediator.CodeConfirmRequired, mediator.CodeSessionLevel:
		return true
	}
	return false
}
