package viewer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentgate/nmhost/workflow"

	"github.com/gorilla/websocket"

	"github.com/agentgate/nmhost/internal/app"
	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/netproxy/agentfetch"
	"github.com/agentgate/nmhost/wasmhost"
)

// Config configures a viewer Server. Store and Token are required; every
// other field has a safe zero value.
type Config struct {
	// App is the application core (required): the store, and the
	// operations whose rules every front end shares.
	App *app.App
	// Token admits requests. The zero Token admits none.
	Token Token

	// Runtime, Fetch and Authorizer run agents for websocket "run"
	// messages. A nil Runtime refuses runs (internal_error); a nil
	// Authorizer is a mediator.Policy with no prompter, so operations that
	// need confirmation are denied with confirmation_required: the viewer
	// has no one to ask. A nil Fetch denies every fetch.
	Runtime    *wasmhost.Runtime
	Fetch      *agentfetch.Service
	Authorizer mediator.Authorizer
	// Workflow is the data dir's workflow settings for websocket
	// "run-workflow" messages; nil: all on.
	Workflow *workflow.Settings

	// UnsafeBindHost is the address the server listens on when it is not
	// loopback (nmhost serve --unsafe-bind). Its host:port is then admitted
	// as a Host header besides the loopback names. Default "": only
	// 127.0.0.1, localhost and [::1] at the listening port, which is what
	// defeats DNS rebinding.
	UnsafeBindHost string

	// PollInterval is how often the live tail looks for denials written by
	// any process. Default 100ms: well inside the one second a person
	// expects, and a query of a few microseconds when nothing is new.
	PollInterval time.Duration

	// ClientQueue bounds the messages waiting for one websocket client.
	// Default 4096: seconds of a busy log. A client whose queue fills is
	// disconnected, so one stalled client costs bounded memory and never
	// slows the others.
	ClientQueue int

	// WriteTimeout bounds one websocket write. Default 10s.
	WriteTimeout time.Duration

	// Log receives diagnostics (refused requests, dropped clients). nil
	// discards them.
	Log *slog.Logger
}

// Limits on what a client may send.
const (
	// MaxBodyBytes bounds a JSON request body; settings and revokes are
	// under a kilobyte.
	MaxBodyBytes = 64 << 10
	// MaxWSMessageBytes bounds one websocket message from a client, the
	// run input included.
	MaxWSMessageBytes = 256 << 10
	// maxRunsPerClient bounds concurrent runs of one websocket client.
	maxRunsPerClient = 4
)

// Server is the viewer's HTTP server. Create it with New, start it with
// Serve.
type Server struct {
	cfg  Config
	app  *app.App
	log  *slog.Logger
	hub  *hub
	port string // the listening port, set by Serve before any request
	mux  *http.ServeMux

	crossOrigin *http.CrossOriginProtection

	runsWG sync.WaitGroup
}

// New checks cfg and returns a Server.
func New(cfg Config) (*Server, error) {
	if cfg.App == nil {
		return nil, errors.New("viewer: Config.App is required")
	}
	if cfg.Token.s == "" {
		return nil, errors.New("viewer: Config.Token is required")
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 100 * time.Millisecond
	}
	if cfg.ClientQueue <= 0 {
		cfg.ClientQueue = 4096
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 10 * time.Second
	}
	if cfg.Authorizer == nil {
		cfg.Authorizer = cfg.App.Policy(mediator.PolicyOptions{})
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, app: cfg.App, log: log, crossOrigin: http.NewCrossOriginProtection()}
	s.hub = newHub(s.app.Denials(), cfg.PollInterval, log)
	s.routes()
	return s, nil
}

// Serve answers requests on ln until ctx ends, then shuts down: open
// websockets are closed and runs are cancelled.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	_, port, err := net.SplitHostPort(ln.Addr().String())
	if err != nil {
		return fmt.Errorf("viewer: listener address %s: %w", ln.Addr(), err)
	}
	s.port = port
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := s.hub.start(ctx); err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    16 << 10,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		cancel()
		s.hub.wait()
		return err
	case <-ctx.Done():
	}
	shutdownCtx, done := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer done()
	err = srv.Shutdown(shutdownCtx)
	s.hub.wait()
	s.runsWG.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// ServeHTTP applies, in order, the checks every request passes: security
// headers, the Host header, the token (except for the page and its static
// files, which hold no secret), then same-origin for anything that changes
// state. Only then does the request reach a handler. No reply ever sets a
// cookie: a cookie is sent by the browser to every port of 127.0.0.1, so it
// would hand the token to any local server the user's browser visits.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")

	if !s.hostAllowed(r.Host) {
		s.refuse(w, r, http.StatusForbidden, "the Host header %q is not this viewer's loopback address", clip(r.Host, 64))
		return
	}
	if r.URL.Query().Has("token") {
		// A token in a query string ends up in logs, history and Referer
		// headers. Refusing it outright, even on the public page, stops an
		// old-style URL from being bookmarked or pasted with the token.
		s.refuse(w, r, http.StatusUnauthorized, "the token never goes in a URL query: open the URL `nmhost serve` printed (#token=...), or send Authorization: Bearer")
		return
	}
	if !publicPath(r.URL.Path) {
		if !s.authenticate(r) {
			s.refuse(w, r, http.StatusUnauthorized, "no valid token: open the URL that `nmhost serve` printed")
			return
		}
	}
	if s.crossSite(r) {
		s.refuse(w, r, http.StatusForbidden, "cross-origin request refused (Origin %q, Sec-Fetch-Site %q)",
			clip(r.Header.Get("Origin"), 64), clip(r.Header.Get("Sec-Fetch-Site"), 32))
		return
	}
	s.mux.ServeHTTP(w, r)
}

// publicPath reports whether a path is the page or one of its static files,
// served to any request that passes the Host check: they are the same in
// every build and hold no secret. Everything else, /api/, /ws and unknown
// paths alike, needs the token. A path with ".." is never public: the mux
// would redirect it elsewhere.
func publicPath(p string) bool {
	if strings.Contains(p, "..") {
		return false
	}
	return p == "/" || strings.HasPrefix(p, "/static/")
}

// hostAllowed is the DNS-rebinding defence: a page on evil.example that
// rebinds its name to 127.0.0.1 still sends Host: evil.example.
func (s *Server) hostAllowed(host string) bool {
	if s.port == "" {
		return false
	}
	h, port, err := net.SplitHostPort(host)
	if err != nil || port != s.port {
		return false
	}
	switch strings.ToLower(h) {
	case "127.0.0.1", "localhost", "::1":
		return true
	}
	return s.cfg.UnsafeBindHost != "" && h == s.cfg.UnsafeBindHost
}

// Websocket subprotocols. A browser cannot set an Authorization header on a
// websocket, so the page offers the token as a second subprotocol,
// TokenProtocolPrefix+TOKEN, next to ViewerProtocol. The server answers
// with ViewerProtocol only, so the token never comes back in a reply.
const (
	ViewerProtocol      = "nmhost.viewer.v1"
	TokenProtocolPrefix = "nmhost.token."
)

// authenticate looks for the token where a client must put it on purpose:
// the Authorization header (Bearer), and on a websocket upgrade also the
// token subprotocol. Nothing a browser attaches by itself (cookies, HTTP
// auth) counts. Every token presented must match: a wrong one anywhere
// refuses the request even if another place holds the right one.
func (s *Server) authenticate(r *http.Request) bool {
	var presented []string
	if a := r.Header.Get("Authorization"); a != "" {
		tok, ok := strings.CutPrefix(a, "Bearer ")
		if !ok {
			return false
		}
		presented = append(presented, tok)
	}
	if r.URL.Path == "/ws" {
		for _, p := range websocket.Subprotocols(r) {
			if tok, ok := strings.CutPrefix(p, TokenProtocolPrefix); ok {
				presented = append(presented, tok)
			}
		}
	}
	for _, tok := range presented {
		if !s.cfg.Token.Matches(tok) {
			return false
		}
	}
	return len(presented) > 0
}

// crossSite reports whether r changes state on behalf of another site, on
// top of the token check: Go's CrossOriginProtection (Sec-Fetch-Site
// first, then Origin against Host; programs that send neither pass, since
// they hold the token on purpose), plus the scheme, which it does not
// compare: the viewer serves plain http, so an Origin must say http.
func (s *Server) crossSite(r *http.Request) bool {
	if err := s.crossOrigin.Check(r); err != nil {
		return true
	}
	safe := r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodOptions
	origin := r.Header.Get("Origin")
	return !safe && origin != "" && origin != "http://"+r.Host
}

// refuse answers an admission failure with unauthorized and logs it.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, status int, format string, args ...any) {
	reason := fmt.Sprintf(format, args...)
	s.log.Warn("viewer request refused", "method", r.Method, "path", clip(r.URL.Path, 128), "remote", r.RemoteAddr, "status", status, "reason", reason)
	writeError(w, status, mediator.Errorf(mediator.CodeUnauthorized, "%s", reason))
}

// clip bounds attacker-chosen text for a log line or an error, escaping
// control characters so it cannot forge lines.
func clip(s string, n int) string {
	q := strconv.Quote(mediator.Truncate(s, n))
	return q[1 : len(q)-1]
}
