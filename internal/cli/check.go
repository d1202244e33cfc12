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
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentgate/nmhost/internal/datadir"
	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/netproxy"
	"github.com/agentgate/nmhost/workspace"
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

// checkURLs tries URL spellings that hide the canary's address, or another
// host behind a listed one.
func checkURLs(ctx context.Context, srv *checkServers, acl *netproxy.ACL) []checkResult {
	cp := srv.canaryPort()
	listed := "example.com"
	if ns := listedNames(acl, 1); len(ns) > 0 {
		listed = ns[0].Host
	}
	type c struct {
		u        string
		code     mediator.Code
		loopback bool // refused only because loopback is not listed
	}
	cases := []c{
		{"http://2130706433:" + cp + "/", mediator.CodeNonCanonicalHost, false},
		{"http://0x7f000001:" + cp + "/", mediator.CodeNonCanonicalHost, false},
		{"http://0177.0.0.1:" + cp + "/", mediator.CodeNonCanonicalHost, false},
		{"http://0x7f.0.0.1:" + cp + "/", mediator.CodeNonCanonicalHost, false},
		{"http://127.1:" + cp + "/", mediator.CodeNonCanonicalHost, false},
		{"http://\uff11\uff12\uff17.\uff10.\uff10.\uff11:" + cp + "/", mediator.CodeNonCanonicalHost, false},
		{"http://127\u30020\u30020\u30021:" + cp + "/", mediator.CodeNonCanonicalHost, false},
		{"http://%31%32%37.0.0.1:" + cp + "/", mediator.CodeNonCanonicalHost, false},
		{"http://127.0.0.1:" + cp + "/", mediator.CodeHostNotAllowed, true},
		{"http://127.0.0.1.:" + cp + "/", mediator.CodeHostNotAllowed, true},
		{"http://[::ffff:127.0.0.1]:" + cp + "/", mediator.CodeHostNotAllowed, true},
		{"http://[0:0:0:0:0:ffff:7f00:1]:" + cp + "/", mediator.CodeHostNotAllowed, true},
		{"http://[::1]:" + cp + "/", mediator.CodeHostNotAllowed, true},
		{"http://[::127.0.0.1]:" + cp + "/", mediator.CodeHostNotAllowed, true},
		{"http://localhost:" + cp + "/", mediator.CodeHostNotAllowed, true},
		{"http://[fe80::1%25lo]:" + cp + "/", mediator.CodeInvalidURL, false},
		{"http://" + listed + "@127.0.0.1:" + cp + "/", mediator.CodeInvalidURL, false},
		{"http://" + listed + ":" + cp + "@127.0.0.1:" + cp + "/", mediator.CodeInvalidURL, false},
		{"http://" + listed + "\\@127.0.0.1:" + cp + "/", mediator.CodeInvalidURL, false},
		{"http://127.0.0.1:" + cp + "\\@" + listed + "/", mediator.CodeInvalidURL, false},
		{"http://127.0.0.1:" + cp + "\\" + listed + "/", mediator.CodeInvalidURL, false},
		{"http://" + listed + ".check.invalid:" + cp + "/", mediator.CodeHostNotAllowed, false},
		{"http://check-" + listed + ":" + cp + "/", mediator.CodeHostNotAllowed, false},
		{"file:///etc/passwd", mediator.CodeSchemeNotAllowed, false},
		{"gopher://127.0.0.1:" + cp + "/", mediator.CodeSchemeNotAllowed, false},
	}
	if l, ok := lookalike(listed); ok {
		cases = append(cases, c{"http://" + l + ":" + cp + "/", mediator.CodeHostNotAllowed, false})
	}
	f := srv.fetcher(checkResolver{})
	defer f.CloseIdleConnections()
	loop := coversLoopback(acl)
	var out []checkResult
	for _, k := range cases {
		r := checkResult{class: "url", tried: "GET " + k.u, want: codeWant(k.code)}
		if k.loopback && loop {
			r.skip = "the profile lists loopback itself, so the canary is allowed"
			out = append(out, r)
			continue
		}
		code, _, refused := fetchOutcome(ctx, f, acl, k.u)
		r.got, r.ok = codeGot(code, refused), refused && code == k.code
		out = append(out, r)
	}
	return out
}

// checkRedirects: a loopback redirector the check allows (beside the
// agent's own entries, deny entries included) redirects to the canary in
// several spellings; each hop must be refused.
func checkRedirects(ctx context.Context, srv *checkServers, entries []string) []checkResult {
	cp := srv.canaryPort()
	list := append(slices.Clone(entries), srv.redirectorAddr)
	acl, err := netproxy.NewACL(list)
	if err != nil {
		return []checkResult{{class: "redirect", tried: "allow the check's redirector", skip: "cannot add it: " + err.Error()}}
	}
	res := checkResolver{}
	name := ""
	if ns := listedNames(acl, 1); len(ns) > 0 {
		name = "check-redirect." + ns[0].Host
		res[name] = []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	}
	f := srv.fetcher(res)
	defer f.CloseIdleConnections()
	loop := coversLoopback(acl) // the redirector entry names a port: only the agent's entries count
	type c struct {
		to       string
		code     mediator.Code
		loopback bool
	}
	cases := []c{
		{"http://127.0.0.1:" + cp + "/", mediator.CodeHostNotAllowed, true},
		{"//127.0.0.1:" + cp + "/", mediator.CodeHostNotAllowed, true},
		{"http://localhost:" + cp + "/", mediator.CodeHostNotAllowed, true},
		{"http://[::ffff:127.0.0.1]:" + cp + "/", mediator.CodeHostNotAllowed, true},
		{"http://2130706433:" + cp + "/", mediator.CodeNonCanonicalHost, false},
		{"http://" + srv.redirectorAddr + "@127.0.0.1:" + cp + "/", mediator.CodeInvalidURL, false},
		{"file:///etc/passwd", mediator.CodeSchemeNotAllowed, false},
	}
	if name != "" {
		cases = append(cases, c{"http://" + name + ":" + cp + "/", mediator.CodePrivateAddress, false})
	}
	var out []checkResult
	for _, k := range cases {
		u := "http://" + srv.redirectorAddr + "/r?" + url.Values{"to": {k.to}}.Encode()
		r := checkResult{class: "redirect", tried: "302 to " + k.to, want: codeWant(k.code) + " at hop 1"}
		if k.loopback && loop {
			r.skip = "the profile lists loopback itself, so the canary is allowed"
			out = append(out, r)
			continue
		}
		code, hop, refused := fetchOutcome(ctx, f, acl, u)
		if refused && hop == 0 {
			r.skip = fmt.Sprintf("the agent's own entries refuse the redirector itself (%s)", code)
			out = append(out, r)
			continue
		}
		r.got = codeGot(code, refused)
		if refused {
			r.got += fmt.Sprintf(" at hop %d", hop)
		}
		r.ok = refused && code == k.code && hop == 1
		out = append(out, r)
	}
	return out
}

// privateAnswers are what a listed name is made to resolve to: each must
// be refused, because only an entry that names an address (or range)
// reaches a non-public one, never a name.
var privateAnswers = []string{"127.0.0.1", "::1", "::ffff:127.0.0.1", "10.0.0.1", "192.168.0.1", "100.64.0.1",
	"169.254.169.254", "fd00::1", "0.0.0.0"}

// checkPrivateNames makes names the agent's entries allow resolve to
// private addresses (from a table, not DNS).
func checkPrivateNames(ctx context.Context, srv *checkServers, acl *netproxy.ACL) []checkResult {
	names := listedNames(acl, 3)
	if len(names) == 0 {
		return []checkResult{{class: "dns", tried: "names resolving to private addresses", skip: "the profile lists no names"}}
	}
	cp := srv.canaryPort()
	res := checkResolver{}
	type c struct{ u, host, addr string }
	var cases []c
	for i, e := range names {
		for j, a := range privateAnswers {
			host := fmt.Sprintf("check-%d-%d.%s", i, j, e.Host)
			res[host] = []netip.Addr{netip.MustParseAddr(a)}
			scheme := e.Scheme
			if scheme == "" {
				scheme = "http"
			}
			port := cp
			if e.Port != 0 {
				port = fmt.Sprint(e.Port)
			}
			cases = append(cases, c{scheme + "://" + host + ":" + port + "/", host, a})
		}
	}
	f := srv.fetcher(res)
	defer f.CloseIdleConnections()
	var out []checkResult
	for _, k := range cases {
		r := checkResult{class: "dns", tried: "GET " + k.u + " (" + k.host + " -> " + k.addr + ")", want: "refused (private_address or host_not_allowed)"}
		code, _, refused := fetchOutcome(ctx, f, acl, k.u)
		r.got = codeGot(code, refused)
		r.ok = refused && (code == mediator.CodePrivateAddress || code == mediator.CodeHostNotAllowed)
		out = append(out, r)
	}
	return out
}

// checkOperations decides each row of the operation table against the
// agent's grants at the level, with nobody to answer a prompt. What should
// happen is read from the row and the grants, not from the policy: no
// grant, no operation; a row that needs confirmation runs only at a high
// level (REQUIRES_CONFIRMATION) or by a remembered "always allow".
func checkOperations(ctx context.Context, pol *mediator.Policy, rec mediator.AgentRecord, level string) []checkResult {
	held := map[mediator.Permission]bool{}
	for _, g := range rec.Grants {
		held[g.Permission] = true
	}
	var out []checkResult
	for _, row := range mediator.Operations() {
		op := mediator.Operation{AgentID: rec.Profile.AgentID, Permission: row.Permission, Name: row.Name, Method: row.Method, SessionLevel: level}
		label := row.Name
		switch {
		case row.Name == mediator.OpNetworkFetch:
			op.URL, op.Host = "https://check.invalid/", "check.invalid"
			label += " " + row.Method
		case strings.HasPrefix(row.Name, mediator.OpShellPrefix):
			op = mediator.ShellOp(rec.Profile.AgentID, level, mediator.ShellStep{Command: strings.TrimPrefix(row.Name, mediator.OpShellPrefix),
				Writes: !row.ReadOnly})
		case row.Target == "origin":
			op.Origin = "https://check.invalid"
		case row.Name == mediator.OpWorkspaceRead || row.Name == mediator.OpWorkspaceWrite:
			op.Path = "check.txt"
		}
		d := pol.Decide(ctx, op)
		r := checkResult{class: "operation", tried: label + " (" + string(row.Class) + ")"}
		byPref := strings.HasPrefix(d.DecidedBy, "preference:")
		switch {
		case row.Permission != "" && !held[row.Permission]:
			r.want = "refused: " + string(row.Permission) + " is not granted"
			r.ok = !d.Allowed && !d.RequiresPrompt
		case row.Class == mediator.AlwaysConfirm:
			r.want = "not run without a person's answer"
			r.ok = !d.Allowed || byPref
		case row.Class == mediator.RequiresConfirmation && level != mediator.LevelHigh:
			r.want = "not run without a person's answer at level " + level
			r.ok = !d.Allowed || byPref
		default:
			r.want = "decided by its grants, capabilities and level"
			r.ok = true
		}
		r.got = describeDecision(d)
		out = append(out, r)
	}
	return out
}

func describeDecision(d mediator.PolicyDecision) string {
	switch {
	case d.Allowed:
		return "allowed (" + d.DecidedBy + ")"
	case d.RequiresPrompt:
		return "needs a prompt, which nobody answers (" + string(d.Code) + ")"
	}
	return "refused (" + string(d.Code) + ")"
}

// checkOrigins: a page write for an origin the person never approved is
// not run without asking, and an "always allow" remembered for one origin
// does not carry over to another.
func checkOrigins(ctx context.Context, pol *mediator.Policy, rec mediator.AgentRecord, prefs []mediator.Preference, level string) []checkResult {
	origins := []string{"https://other-origin.check.invalid"}
	for _, p := range prefs {
		if p.Operation == mediator.OpPageSetElementText && p.Answer == mediator.AnswerAlwaysAllow && p.Target != "" {
			// The same host on another port, and another scheme: other origins.
			if u, err := url.Parse(p.Target); err == nil && u.Hostname() != "" {
				origins = append(origins, "https://"+u.Hostname()+":1", "http://"+u.Hostname()+":1")
			}
		}
	}
	var out []checkResult
	for _, o := range origins {
		op := mediator.Operation{AgentID: rec.Profile.AgentID, Permission: mediator.PermPageWrite, Name: mediator.OpPageSetElementText,
			Origin: o, Selector: "#check", TextLength: 1, SessionLevel: level}
		d := pol.Decide(ctx, op)
		r := checkResult{class: "origin", tried: "page.write.setElementText on " + o, want: "not run without a person's answer for that origin", got: describeDecision(d)}
		r.ok = !d.Allowed || (level == mediator.LevelHigh && d.DecidedBy == "level:high")
		out = append(out, r)
	}
	return out
}

// checkWorkspace tries to leave a temporary workspace (never the person's
// own): each attempt must be refused with path_not_allowed and leave the
// directory beside it untouched.
func checkWorkspace(dir string) []checkResult {
	outside := filepath.Join(filepath.Dir(dir), "outside")
	if err := os.MkdirAll(outside, 0o700); err != nil {
		return []checkResult{{class: "workspace", tried: "make a temporary workspace", skip: err.Error()}}
	}
	ws, err := workspace.Open(dir, workspace.Limits{})
	if err != nil {
		return []checkResult{{class: "workspace", tried: "make a temporary workspace", skip: err.Error()}}
	}
	defer ws.Close()
	type c struct {
		tried string
		do    func() error
	}
	cases := []c{
		{"write ../outside/x", func() error { return ws.WriteFile("../outside/x", []byte("x"), false) }},
		{"write " + filepath.Join(outside, "x") + " (absolute)", func() error { return ws.WriteFile(filepath.Join(outside, "x"), []byte("x"), false) }},
		{"read ../../etc/passwd", func() error { _, err := ws.ReadFile("../../etc/passwd", 1<<10); return err }},
		{"write a\\x00b (NUL)", func() error { return ws.WriteFile("a\x00b", []byte("x"), false) }},
	}
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err == nil {
		cases = append(cases,
			c{"write link/x (a link out)", func() error { return ws.WriteFile("link/x", []byte("x"), false) }},
			c{"read link/../.. (through a link)", func() error { _, err := ws.ReadFile("link/../../x", 1<<10); return err }})
	}
	var out []checkResult
	for _, k := range cases {
		err := k.do()
		r := checkResult{class: "workspace", tried: k.tried, want: "refused (path_not_allowed)"}
		switch {
		case err == nil:
			r.got = "not refused"
		default:
			r.got = "refused (" + string(mediator.CodeOf(err)) + ")"
			r.ok = mediator.CodeOf(err) == mediator.CodePathNotAllowed
		}
		out = append(out, r)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		out = append(out, checkResult{class: "workspace", tried: "the directory beside the workspace", want: "untouched", got: fmt.Sprintf("%d entries appeared", len(ents))})
	}
	return out
}
