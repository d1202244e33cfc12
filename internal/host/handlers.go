package host

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/agentgate/nmhost/internal/app"
	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/netproxy"
	"github.com/agentgate/nmhost/netproxy/agentfetch"
)

// helloData is hello's reply. Its members are in alphabetical order, as
// the map it replaced encoded them.
type helloData struct {
	MaxMessageBytes int    `json:"maxMessageBytes"`
	Name            string `json:"name"`
	Origin          string `json:"origin"`
	Protocol        int    `json:"protocol"`
	Version         string `json:"version"`
}

func handleHello(_ context.Context, s *server, _ *request) (any, error) {
	s.helloOnce.Do(func() {
		b, err := json.Marshal(helloData{
			Name: "nmhost", Version: s.opts.Version, Protocol: ProtocolVersion,
			Origin: s.opts.Caller.Origin, MaxMessageBytes: 1 << 20,
		})
		if err == nil {
			s.hello = encoded(b)
		}
	})
	if s.hello == nil {
		return nil, mediator.Errorf(mediator.CodeInternal, "the hello reply could not be encoded")
	}
	return s.hello, nil
}

// encoded is a reply's data already in JSON: hello's is the same for the
// host's whole life, and it is the request the extension sends first on
// every connection, so it is encoded once (write.go's jsonAppender).
type encoded []byte

func (e encoded) AppendJSON(dst []byte) []byte { return append(dst, e...) }
func (e encoded) JSONLen() int                 { return len(e) }

type agentParams struct {
	AgentID string `json:"agentId"`
}

func (p agentParams) check() error { return mediator.ValidAgentID(p.AgentID) }

func handleInstallAgent(ctx context.Context, s *server, req *request) (any, error) {
	var p struct {
		Profile json.RawMessage `json:"profile"`
		Module  string          `json:"module"` // base64, optional; a Python agent's source as text
	}
	if err := req.decode(&p); err != nil {
		return nil, err
	}
	if len(p.Profile) == 0 {
		return nil, mediator.Errorf(mediator.CodeBadRequest, "install-agent needs a profile")
	}
	prof, err := mediator.ParseProfile(p.Profile)
	if err != nil {
		return nil, err
	}
	var mod []byte
	switch {
	case prof.IsPython() && p.Module != "":
		// A Python agent's module is its source, as text.
		mod = []byte(p.Module)
	case p.Module != "":
		if base64.StdEncoding.DecodedLen(len(p.Module)) > app.MaxModuleBytes {
			return nil, mediator.Errorf(mediator.CodeTooLarge, "module is larger than %d bytes", app.MaxModuleBytes)
		}
		if mod, err = base64.StdEncoding.DecodeString(p.Module); err != nil {
			return nil, &mediator.Error{Code: mediator.CodeBadRequest, Msg: "module is not valid base64", Err: err}
		}
	}
	rec, err := s.app.Install(ctx, prof, mod)
	if err != nil {
		return nil, err
	}
	s.fetch.Forget(prof.AgentID)
	s.log.Info("agent installed", "agent", prof.AgentID, "module", rec.ModuleSHA256, "origin", s.opts.Caller.Origin)
	if mod != nil && !prof.IsPython() && s.opts.Runtime != nil {
		// Compiling is not running: the module is compiled now, in the
		// background and under the compile budget alone, into the
		// on-disk cache every later host process reads, so the agent's
		// first run does not spend its executionTimeout compiling.
		go func() {
			if err := s.opts.Runtime.Precompile(context.WithoutCancel(ctx), rec, mod); err != nil {
				s.log.Info("agent not compiled at install", "agent", prof.AgentID, "err", err)
			}
		}()
	}
	return rec, nil
}

func handleGetAgentInfo(ctx context.Context, s *server, req *request) (any, error) {
	var p agentParams
	if err := req.decode(&p); err != nil {
		return nil, err
	}
	if err := p.check(); err != nil {
		return nil, err
	}
	return s.app.Agents().Agent(ctx, p.AgentID)
}

func handleListAgents(ctx context.Context, s *server, _ *request) (any, error) {
	agents, err := s.app.Agents().ListAgents(ctx)
	if err != nil {
		return nil, err
	}
	return map[string]any{"agents": agents}, nil
}

func handleUninstallAgent(ctx context.Context, s *server, req *request) (any, error) {
	var p agentParams
	if err := req.decode(&p); err != nil {
		return nil, err
	}
	if err := p.check(); err != nil {
		return nil, err
	}
	if err := s.app.Agents().UninstallAgent(ctx, p.AgentID); err != nil {
		return nil, fmt.Errorf("agent[%s]: %w", p.AgentID, err)
	}
	s.fetch.Forget(p.AgentID)
	return map[string]any{"agentId": p.AgentID, "uninstalled": true}, nil
}

type permissionParams struct {
	AgentID    string `json:"agentId"`
	Permission string `json:"permission"`
}

func (p permissionParams) parse() (mediator.Permission, error) {
	if err := mediator.ValidAgentID(p.AgentID); err != nil {
		return "", err
	}
	return mediator.ParsePermission(p.Permission)
}

func handleGrant(ctx context.Context, s *server, req *request) (any, error) {
	var p permissionParams
	if err := req.decode(&p); err != nil {
		return nil, err
	}
	perm, err := p.parse()
	if err != nil {
		return nil, err
	}
	return s.app.Grant(ctx, p.AgentID, perm)
}

func handleRevoke(ctx context.Context, s *server, req *request) (any, error) {
	var p permissionParams
	if err := req.decode(&p); err != nil {
		return nil, err
	}
	perm, err := p.parse()
	if err != nil {
		return nil, err
	}
	existed, err := s.app.Revoke(ctx, p.AgentID, perm)
	if err != nil {
		return nil, err
	}
	return map[string]any{"agentId": p.AgentID, "permission": perm, "revoked": existed}, nil
}

type fetchParams struct {
	AgentID string       `json:"agentId"`
	URL     string       `json:"url"`
	Options fetchOptions `json:"options"`
}

// fetchOptions are a fetch's options as network-fetch and a Python
// agent's restricted_api.fetch send them.
type fetchOptions struct {
	Method       string         `json:"method"`
	Headers      boundedHeaders `json:"headers"`
	Body         string         `json:"body"`
	BodyEncoding string         `json:"bodyEncoding"` // "text" (default) or "base64"
}

// fetchFor runs one fetch for an agent through the mediated path (grant,
// ACL, policy, every redirect hop) and returns the reply; the server
// releases the body's memory once the reply is written.
func (s *server) fetchFor(ctx context.Context, agentID, level, session, url string, o fetchOptions) (any, error) {
	body, err := agentfetch.DecodeBody(o.Body, o.BodyEncoding)
	if err != nil {
		return nil, err
	}
	resp, err := s.fetch.Fetch(ctx, agentfetch.Request{AgentID: agentID, SessionLevel: level, SessionID: session, Request: netproxy.Request{
		URL: url, Method: o.Method, Headers: o.Headers, Body: body,
	}})
	if err != nil {
		return nil, err
	}
	res, err := agentfetch.NewResult(resp)
	if err != nil {
		resp.Release()
	}
	return res, err
}

func handleNetworkFetch(ctx context.Context, s *server, req *request) (any, error) {
	var p fetchParams
	if err := req.decode(&p); err != nil {
		return nil, err
	}
	return s.fetchFor(ctx, p.AgentID, "", "", p.URL, p.Options)
}

func handleListDenials(ctx context.Context, s *server, req *request) (any, error) {
	var f app.DenialFilter
	if err := req.decode(&f); err != nil {
		return nil, err
	}
	return s.app.Denials().ListDenials(ctx, f)
}

var codePattern = lazyRegexp(`^[a-z][a-z_]{0,63}$`)

// handleLogDenial records a denial decided in the extension (layer 1), so
// both layers' refusals land in one log.
func handleLogDenial(ctx context.Context, s *server, req *request) (any, error) {
	var p struct {
		AgentID    string                 `json:"agentId"`
		Permission string                 `json:"permission"`
		Code       mediator.Code          `json:"code"`
		Context    mediator.DenialContext `json:"context"`
	}
	if err := req.decode(&p); err != nil {
		return nil, err
	}
	if p.AgentID == "" || p.Permission == "" || !codePattern().MatchString(string(p.Code)) || p.Code == mediator.CodeAllowed {
		return nil, mediator.Errorf(mediator.CodeBadRequest, "log-denial needs agentId, permission and a reason code")
	}
	p.Context.Layer = "extension"
	p.Context.Origin = s.opts.Caller.Origin
	d, err := s.app.Denials().LogDenial(ctx, mediator.Denial{AgentID: p.AgentID, Permission: p.Permission, Code: p.Code, Context: p.Context})
	if err != nil {
		return nil, err
	}
	return d, nil
}

// optionalAgent reads a request whose one member is an optional agentId
// (every agent when absent), checked like every agent id.
func optionalAgent(req *request) (string, error) {
	var p struct {
		AgentID string `json:"agentId"`
	}
	if err := req.decode(&p); err != nil {
		return "", err
	}
	if p.AgentID != "" {
		if err := mediator.ValidAgentID(p.AgentID); err != nil {
			return "", err
		}
	}
	return p.AgentID, nil
}

func handleListPreferences(ctx context.Context, s *server, req *request) (any, error) {
	agentID, err := optionalAgent(req)
	if err != nil {
		return nil, err
	}
	prefs, err := s.app.Answers().ListPreferences(ctx, agentID)
	if err != nil {
		return nil, err
	}
	return map[string]any{"preferences": prefs}, nil
}

func handleRevokePreference(ctx context.Context, s *server, req *request) (any, error) {
	// Not "id": that is the envelope's request id.
	var p struct {
		PreferenceID int64 `json:"preferenceId"`
	}
	if err := req.decode(&p); err != nil {
		return nil, err
	}
	if p.PreferenceID <= 0 {
		return nil, mediator.Errorf(mediator.CodeBadRequest, "preferenceId must be an id from list-preferences")
	}
	ok, err := s.app.Answers().RevokePreference(ctx, p.PreferenceID)
	if err != nil {
		return nil, err
	}
	return map[string]any{"preferenceId": p.PreferenceID, "revoked": ok}, nil
}

func handleListAudit(ctx context.Context, s *server, req *request) (any, error) {
	var p struct {
		AfterSeq int64 `json:"afterSeq"`
		Limit    int   `json:"limit"`
		Tail     bool  `json:"tail"`
	}
	if err := req.decode(&p); err != nil {
		return nil, err
	}
	if p.AfterSeq < 0 || p.Limit < 0 || p.Limit > app.MaxDenialPage {
		return nil, mediator.Errorf(mediator.CodeBadRequest, "afterSeq must be >= 0 and limit in 0..%d", app.MaxDenialPage)
	}
	return s.app.Audit().ListAudit(ctx, p.AfterSeq, p.Limit, p.Tail)
}
