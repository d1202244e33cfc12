package store

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/agentgate/nmhost/mediator"
)

// bigStore is a 1,000,000-denial database shared by the benchmarks that
// need one; building it takes seconds, so it is built once per test binary.
var bigStore struct {
	once   sync.Once
	dir    string
	remove bool // a temp dir that TestMain removes
	err    error
}

const bigRows = 1_000_000

var (
	benchAgents = func() []string {
		a := make([]string, 50)
		for i := range a {
			a[i] = "agent-" + strconv.Itoa(i)
		}
		return a
	}()
	benchCodes = []mediator.Code{mediator.CodeHostNotAllowed, mediator.CodePermissionNotGranted, mediator.CodePrivateAddress, mediator.CodeUnknownPermission,
		mediator.CodeTimeout, mediator.CodeNetworkDisabled, mediator.CodeSchemeNotAllowed, mediator.CodeInvalidURL, mediator.CodeTooManyRedirects, mediator.CodeDNSError}
)

const benchT0 = 1_700_000_000_000

func TestMain(m *testing.M) {
	code := m.Run()
	if bigStore.remove {
		os.RemoveAll(bigStore.dir)
	}
	if memoryBenchDir != "" {
		os.RemoveAll(memoryBenchDir)
	}
	os.Exit(code)
}

func bigStoreDir(b *testing.B) string {
	bigStore.once.Do(func() {
		// NMHOST_BENCH_DIR keeps the database between runs (for profiling
		// queries); by default it lives in a temp dir removed by TestMain.
		dir := os.Getenv("NMHOST_BENCH_DIR")
		if dir == "" {
			tmp, err := os.MkdirTemp("", "nmhost-bench-")
			if err != nil {
				bigStore.err = err
				return
			}
			dir, bigStore.remove = tmp, true
		}
		bigStore.dir = dir
		s, err := Open(dir, Options{})
		if err != nil {
			bigStore.err = err
			return
		}
		defer s.Close()
		var have int
		if bigStore.err = s.db.QueryRow("SELECT count(*) FROM denials").Scan(&have); bigStore.err != nil || have == bigRows {
			return
		}
		// One transaction: the point is the size of the table, not the
		// cost of a million fsyncs.
		tx, err := s.db.Begin()
		if err != nil {
			bigStore.err = err
			return
		}
		defer tx.Rollback()
		stmt, err := tx.Prepare(`INSERT INTO denials (agent_id, permission, ts, code, context) VALUES (?, ?, ?, ?, ?)`)
		if err != nil {
			bigStore.err = err
			return
		}
		defer stmt.Close()
		for i := range bigRows {
			// Independent pseudo-random columns, so that combined filters
			// have sparse intersections as in real logs.
			h := uint64(i)*0x9E3779B97F4A7C15 ^ uint64(i)>>7
			ctxJSON := `{"url":"https://h` + strconv.Itoa(i%997) + `.example.com/path?q=1","reason":"host is not in allowedHosts","layer":"host"}`
			if _, err := stmt.Exec(benchAgents[h%uint64(len(benchAgents))], string(mediator.KnownPermissions()[(h>>20)%uint64(len(mediator.KnownPermissions()))]),
				int64(benchT0+i*100), string(benchCodes[(h>>40)%uint64(len(benchCodes))]), ctxJSON); err != nil {
				bigStore.err = err
				return
			}
		}
		bigStore.err = tx.Commit()
	})
	if bigStore.err != nil {
		b.Fatal(bigStore.err)
	}
	return bigStore.dir
}

func BenchmarkListDenialsFiltered(b *testing.B) {
	dir := bigStoreDir(b)
	s, err := Open(dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	cases := []struct {
		name string
		f    DenialFilter
	}{
		{"newest", DenialFilter{}},
		{"agent", DenialFilter{AgentID: "agent-7"}},
		{"permission", DenialFilter{Permission: "network.fetch"}},
		{"code", DenialFilter{Code: mediator.CodePrivateAddress}},
		{"agent+code", DenialFilter{AgentID: "agent-7", Code: mediator.CodeUnknownPermission}}, // 1 row in 50: a sparse intersection
		{"agent+permission+code", DenialFilter{AgentID: "agent-3", Permission: "page.read", Code: mediator.CodeHostNotAllowed}},
		{"time range", DenialFilter{Since: benchT0 + 10_000_000, Until: benchT0 + 20_000_000}},
		{"agent deep page", DenialFilter{AgentID: "agent-7", BeforeID: bigRows / 2}},
		{"time range deep (1/3 of table, 2/3 newer)", DenialFilter{Since: benchT0 + 10_000_000, Until: benchT0 + 40_000_000}},
		{"time range since", DenialFilter{Since: benchT0 + 90_000_000}},
		{"time range empty", DenialFilter{Since: benchT0 + 200_000_000}},
		{"agent+time range", DenialFilter{AgentID: "agent-7", Since: benchT0 + 10_000_000, Until: benchT0 + 20_000_000}},
		{"tail", DenialFilter{AfterID: bigRows - 500}},
		{"agent tail from start", DenialFilter{AgentID: "agent-9", AfterID: 1}},
		{"no match", DenialFilter{AgentID: "nobody"}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			c.f.Limit = 100
			var n int
			for b.Loop() {
				p, err := s.ListDenials(ctx, c.f)
				if err != nil {
					b.Fatal(err)
				}
				n = len(p.Denials)
			}
			if n == 0 && c.name != "no match" && c.name != "time range empty" {
				b.Fatalf("empty page for %+v", c.f)
			}
			b.ReportMetric(float64(n), "rows/page")
		})
	}
}

func BenchmarkLogDenial(b *testing.B) {
	for _, mode := range []struct {
		name   string
		normal bool
	}{{"synchronous=FULL", false}, {"synchronous=NORMAL", true}} {
		b.Run(mode.name, func(b *testing.B) {
			s, err := Open(b.TempDir(), Options{synchronousNormal: mode.normal})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			d := mediator.Denial{AgentID: "agent-1", Permission: "network.fetch", Code: mediator.CodeHostNotAllowed,
				Context: mediator.DenialContext{URL: "https://evil.example/", Reason: "host is not in allowedHosts", Layer: "host"}}
			for b.Loop() {
				if _, err := s.LogDenial(ctx, d); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkCheck(b *testing.B) {
	s, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for i := range 100 {
		if _, err := s.InstallAgent(ctx, testProfile(fmt.Sprintf("agent-%d", i), []mediator.Permission{mediator.PermConsoleLog, mediator.PermPageRead}, nil), ""); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range []struct {
		name  string
		perm  mediator.Permission
		allow bool
	}{{"granted", mediator.PermPageRead, true}, {"not granted", mediator.PermNetworkFetch, false}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if d := s.Check(ctx, "agent-42", c.perm); d.Allowed != c.allow {
					b.Fatalf("Check = %+v", d)
				}
			}
		})
	}
	b.Run("parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if d := s.Check(ctx, "agent-42", mediator.PermPageRead); !d.Allowed {
					b.Fatalf("Check = %+v", d)
				}
			}
		})
	})
}

// BenchmarkOpen is the store's share of the host's cold start: open an
// existing store and answer the first question.
func BenchmarkOpen(b *testing.B) {
	dir := b.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.InstallAgent(context.Background(), testProfile("agent", []mediator.Permission{mediator.PermConsoleLog}, nil), ""); err != nil {
		b.Fatal(err)
	}
	s.Close()
	for _, c := range []struct{ name, dir string }{{"small", dir}, {"1M denials", ""}} {
		b.Run(c.name, func(b *testing.B) {
			d := c.dir
			if d == "" {
				d = bigStoreDir(b)
			}
			for b.Loop() {
				s, err := Open(d, Options{})
				if err != nil {
					b.Fatal(err)
				}
				s.Check(context.Background(), "agent", mediator.PermConsoleLog)
				s.Close()
			}
		})
	}
}
