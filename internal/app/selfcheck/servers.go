package selfcheck

import (
	"context"
	"database/sql"
	"errors"
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

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/netproxy"
)

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
