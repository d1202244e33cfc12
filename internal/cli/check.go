package cli

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentgate/nmhost/internal/datadir"
	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/netproxy"
)

// errCheckFailed: nmhost check printed a rule that did not fire.
var errCheckFailed = errors.New("a rule did not fire")

// checkResult is one line of nmhost check: what was tried, what the rules
// say should happen, what happened. Skip says why a rule could not be
// tried against this agent (its profile lets the target through itself).
type checkResult struct {
	class, tried, want, got string
	ok                      bool
	skip                    string
}

// runCheck is `nmhost check AGENT`: a built-in hostile corpus against an
// installed agent's stored profile and grants, with no side effects. It
// reads the store through a throwaway copy (VACUUM INTO from a read-only
// connection), so neither the person's database nor their audit trail or
// denial log is written; workspace escapes are tried in a temporary
// workspace; every fetch goes through a resolver that answers from a table
// (no real DNS) and a dialler that connects only to the loopback servers
// the check started, whatever a rule does.
func runCheck(ctx context.Context, env Env) error {
	var level string
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.StringVar(&level, "level", mediator.LevelMedium, "the session `LEVEL` operations are decided at: low, medium or high")
	args, err := parse(specFor("check"), fs, env)
	if err != nil {
		return err
	}
	if _, err := mediator.ParseLevel(level); err != nil {
		return usagef("check", "%s", mediator.MessageOf(err))
	}
	agentID := args[0]
	dir, err := datadir.Resolve(env.Getenv)
	if err != nil {
		return err
	}
	if err := datadir.CheckPrivate(dir); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "nmhost-check-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	st, err := snapshotStore(ctx, dir, filepath.Join(tmp, "data"))
	if err != nil {
		return err
	}
	defer st.Close()
	rec, err := st.Agent(ctx, agentID)
	if err != nil {
		return explainAgentErr(err, agentID)
	}
	prefs, err := st.ListPreferences(ctx, agentID)
	if err != nil {
		return err
	}
	acl, err := netproxy.NewACL(rec.Profile.Capabilities.AllowedHosts)
	if err != nil {
		return fmt.Errorf("the stored allowedHosts of %s do not parse: %w", agentID, err)
	}

	srv, err := startCheckServers()
	if err != nil {
		return err
	}
	defer srv.close()

	var results []checkResult
	results = append(results, checkURLs(ctx, srv, acl)...)
	results = append(results, checkRedirects(ctx, srv, rec.Profile.Capabilities.AllowedHosts)...)
	results = append(results, checkPrivateNames(ctx, srv, acl)...)
	pol := mediator.NewPolicy(readOnlyRecords{st}, mediator.PolicyOptions{}) // no prompter: nobody answers
	results = append(results, checkOperations(ctx, pol, rec, level)...)
	results = append(results, checkOrigins(ctx, pol, rec, prefs, level)...)
	results = append(results, checkWorkspace(filepath.Join(tmp, "ws"))...)
	if n := srv.canaryHits.Load() + srv.canaryConns.Load(); n != 0 {
		results = append(results, checkResult{class: "canary", tried: "every refused request above",
			want: "nothing reaches the loopback canary", got: fmt.Sprintf("%d requests or connections reached it", n)})
	} else {
		results = append(results, checkResult{class: "canary", tried: "every refused request above",
			want: "nothing reaches the loopback canary", got: "nothing reached it", ok: true})
	}
	for _, d := range srv.strayDials() {
		results = append(results, checkResult{class: "dial", tried: "connect to " + d,
			want: "only the check's own loopback servers are ever dialled", got: "refused by the check's dialler"})
	}

	return printCheck(env.Stdout, agentID, level, results)
}

// printCheck prints one line per rule and the summary, and fails when a
// rule did not fire.
func printCheck(w io.Writer, agentID, level string, results []checkResult) error {
	failed, skipped := 0, 0
	for _, r := range results {
		mark := "ok  "
		switch {
		case r.skip != "":
			mark = "skip"
			skipped++
		case !r.ok:
			mark = "FAIL"
			failed++
		}
		line := fmt.Sprintf("%s %-9s %s: want %s; got %s", mark, r.class, r.tried, r.want, r.got)
		if r.skip != "" {
			line = fmt.Sprintf("%s %-9s %s: %s", mark, r.class, r.tried, r.skip)
		}
		fmt.Fprintln(w, mediator.EscapeTerminal(line))
	}
	fmt.Fprintf(w, "%s: %d rules fired, %d did not, %d skipped (level %s; nothing of yours was written)\n",
		mediator.EscapeTerminal(agentID), len(results)-failed-skipped, failed, skipped, level)
	if failed > 0 {
		return errCheckFailed
	}
	return nil
}

// snapshotStore copies the person's database into dst with VACUUM INTO,
// from a connection opened read-only, and opens the copy: whatever opening
// or deciding writes (migrations, caches) lands in the copy.
func snapshotStore(ctx context.Context, dir, dst string) (*store.Store, error) {
	src := filepath.Join(dir, store.DBFileName)
	if _, err := os.Stat(src); err != nil {
		return nil, fmt.Errorf("no store in %s (install an agent first: nmhost run installs one)", dir)
	}
	if err := os.MkdirAll(dst, 0o700); err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: src}).EscapedPath()+"?mode=ro")
	if err != nil {
		return nil, err
	}
	_, err = db.ExecContext(ctx, "VACUUM INTO ?", filepath.Join(dst, store.DBFileName))
	db.Close()
	if err != nil {
		return nil, fmt.Errorf("cannot copy the store in %s for the check: %w", dir, err)
	}
	return store.Open(dst, store.Options{})
}

// readOnlyRecords is the policy's view of the copied store: it reads
// decision facts and refuses every write, so a decision can never be
// remembered or recorded even by mistake.
type readOnlyRecords struct{ st *store.Store }

var errCheckReadOnly = errors.New("nmhost check writes nothing")

func (r readOnlyRecords) DecisionFacts(ctx context.Context, agentID string, perm mediator.Permission, operation, target string) (mediator.DecisionFacts, error) {
	return r.st.DecisionFacts(ctx, agentID, perm, operation, target)
}
func (readOnlyRecords) SetPreference(context.Context, mediator.Preference) (mediator.Preference, error) {
	return mediator.Preference{}, errCheckReadOnly
}
func (readOnlyRecords) AppendAudit(context.Context, mediator.AuditEntry) (mediator.AuditRecord, error) {
	return mediator.AuditRecord{}, errCheckReadOnly
}
func (readOnlyRecords) LogDenial(context.Context, mediator.Denial) (mediator.Denial, error) {
	return mediator.Denial{}, errCheckReadOnly
}

// checkServers are the loopback servers the check starts: a canary that
// must never be reached and a redirector whose Location points at it. The
// dialler connects to these two and to nothing else.
type checkServers struct {
	canary, redirector         *http.Server
	canaryAddr, redirectorAddr string // 127.0.0.1:port
	canaryHits, canaryConns    atomic.Int64
	mu                         sync.Mutex
	stray                      []string
}

func startCheckServers() (*checkServers, error) {
	s := &checkServers{}
	cl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("cannot listen on loopback for the check's canary: %w", err)
	}
	rl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cl.Close()
		return nil, fmt.Errorf("cannot listen on loopback for the check's redirector: %w", err)
	}
	s.canaryAddr, s.redirectorAddr = cl.Addr().String(), rl.Addr().String()
	s.canary = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.canaryHits.Add(1)
			io.WriteString(w, "canary")
		}),
		ConnState: func(_ net.Conn, st http.ConnState) {
			if st == http.StateNew {
				s.canaryConns.Add(1)
			}
		},
		ReadHeaderTimeout: 5 * time.Second,
	}
	s.redirector = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header()["Location"] = []string{r.URL.Query().Get("to")}
			w.WriteHeader(http.StatusFound)
		}),
		ReadHeaderTimeout: 5 * time.Second,
	}
	go s.canary.Serve(cl)
	go s.redirector.Serve(rl)
	return s, nil
}

func (s *checkServers) close() {
	s.canary.Close()
	s.redirector.Close()
}

func (s *checkServers) canaryPort() string {
	_, p, _ := net.SplitHostPort(s.canaryAddr)
	return p
}

// dial is the fetcher's only way out: the check's own servers, or a
// refusal that is reported as a rule that did not hold.
func (s *checkServers) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if addr != s.canaryAddr && addr != s.redirectorAddr {
		s.mu.Lock()
		s.stray = append(s.stray, addr)
		s.mu.Unlock()
		return nil, errors.New("nmhost check dials only its own loopback servers")
	}
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

func (s *checkServers) strayDials() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.stray)
}

// checkResolver answers names from a table and never asks DNS.
type checkResolver map[string][]netip.Addr

func (r checkResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := r[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host (nmhost check asks no DNS)", Name: host, IsNotFound: true}
}

func (s *checkServers) fetcher(res checkResolver) *netproxy.Fetcher {
	return netproxy.New(netproxy.Config{Resolver: res, Dial: s.dial, Timeout: 10 * time.Second, MaxRedirects: 3})
}

// fetchOutcome fetches u and says what happened: the refusal's code and
// hop, or that it was not refused.
func fetchOutcome(ctx context.Context, f *netproxy.Fetcher, acl *netproxy.ACL, u string) (mediator.Code, int, bool) {
	resp, err := f.Fetch(ctx, acl, netproxy.Request{URL: u})
	if err == nil {
		resp.Release()
		return mediator.CodeAllowed, 0, false
	}
	var de *netproxy.DenyError
	if errors.As(err, &de) {
		return de.Code, de.Hop, true
	}
	return mediator.CodeOf(err), 0, false
}

// listedNames are up to max names the agent's allow entries cover, one
// per entry: the entry's own name, or one below a wildcard.
func listedNames(acl *netproxy.ACL, max int) []netproxy.Entry {
	var out []netproxy.Entry
	for _, e := range acl.Entries() {
		if e.Deny || (e.Kind != netproxy.EntryDomain && e.Kind != netproxy.EntryWildcard) {
			continue
		}
		out = append(out, e)
		if len(out) == max {
			break
		}
	}
	return out
}

// coversLoopback reports whether an allow entry lets 127.0.0.1 (or ::1,
// or localhost) through on any port: then the profile itself allows the
// canary, and the rules about unlisted loopback cannot be tried. It reads
// the parsed entries plainly, apart from the ACL's own matching.
func coversLoopback(acl *netproxy.ACL) bool {
	for _, e := range acl.Entries() {
		if e.Deny || e.Port != 0 {
			continue
		}
		switch e.Kind {
		case netproxy.EntryLocalhost:
			return true
		case netproxy.EntryIP:
			if e.Addr.IsLoopback() {
				return true
			}
		case netproxy.EntryRange:
			if e.Prefix.Contains(netip.MustParseAddr("127.0.0.1")) || e.Prefix.Contains(netip.IPv6Loopback()) {
				return true
			}
		}
	}
	return false
}

// lookalike replaces the first Latin letter of name that has a Cyrillic
// twin with the twin: a different name that reads the same.
func lookalike(name string) (string, bool) {
	twins := map[byte]string{'a': "\u0430", 'e': "\u0435", 'o': "\u043e", 'p': "\u0440", 'c': "\u0441", 'x': "\u0445"}
	for i := 0; i < len(name); i++ {
		if t, ok := twins[name[i]]; ok {
			return name[:i] + t + name[i+1:], true
		}
	}
	return "", false
}

func codeWant(code mediator.Code) string { return "refused (" + string(code) + ")" }

func codeGot(code mediator.Code, refused bool) string {
	if !refused {
		if code == mediator.CodeAllowed {
			return "not refused"
		}
		return "not refused by a rule (" + string(code) + ")"
	}
	return "refused (" + string(code) + ")"
}
