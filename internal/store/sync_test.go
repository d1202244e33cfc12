package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentgate/nmhost/internal/testkit"
	"github.com/agentgate/nmhost/mediator"
)

// waitDurable polls until the store reports seq durable, or fails.
func waitDurable(t *testing.T, s *Store, seq int64, within time.Duration) {
	t.Helper()
	testkit.Eventually(t, within, fmt.Sprintf("record %d to be durable", seq), func() bool { return s.DurableAuditSize() >= seq })
}

// TestDurabilityModes: the default keeps synchronous=NORMAL and the group
// syncer makes every commit durable within its window without anyone
// asking; strict keeps synchronous=FULL, so a commit is durable as it
// returns and the syncer never fsyncs; any other mode is refused.
func TestDurabilityModes(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name, mode string
		pragma     string
		syncs      bool // the syncer fsyncs the WAL itself
	}{
		{"default is written", "", "1", true},
		{"written", mediator.DurabilityWritten, "1", true},
		{"strict", mediator.DurabilityStrict, "2", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := Open(t.TempDir(), Options{Durability: c.mode})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var sync string
			if err := s.db.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync); err != nil || sync != c.pragma {
				t.Fatalf("synchronous=%s %v; want %s", sync, err, c.pragma)
			}
			rec, err := s.AppendAudit(ctx, mediator.AuditEntry{Kind: mediator.AuditDecision, Operation: mediator.Operation{AgentID: "a", Name: mediator.OpLog}})
			if err != nil {
				t.Fatal(err)
			}
			// Nobody asks: the window alone makes it durable (5 ms;
			// the deadline is a generous guard for a busy machine).
			if c.syncs {
				waitDurable(t, s, rec.Seq, 10*time.Second)
			}
			if err := s.SyncAudit(ctx, rec.Seq); err != nil || s.DurableAuditSize() < rec.Seq {
				t.Fatalf("SyncAudit: %v, durable %d; want %d", err, s.DurableAuditSize(), rec.Seq)
			}
			if got := s.sy.syncs.Load() > 0; got != c.syncs {
				t.Fatalf("syncer fsynced: %v; want %v", got, c.syncs)
			}
		})
	}
	t.Run("hostile settings refused", func(t *testing.T) {
		for _, o := range []Options{{Durability: "none"}, {Durability: "off"}, {Durability: "STRICT"}, {Durability: "written "},
			{AuditCalls: "none"}, {AuditCalls: "Per-Call"}, {SyncWindow: time.Hour}, {SyncWindow: -time.Millisecond}} {
			if _, err := Open(t.TempDir(), o); mediator.CodeOf(err) != mediator.CodeBadRequest {
				t.Errorf("Open with %+v: %v; want bad_request", o, err)
			}
		}
	})
}

// TestSyncWindowHoldsUntilAsked: with a window longer than the test, a
// commit stays undurable until someone asks (SyncAudit), a checkpoint is
// signed (it covers only what is on disk), or the store closes.
func TestSyncWindowHoldsUntilAsked(t *testing.T) {
	ctx := context.Background()
	appendOne := func(t *testing.T, s *Store) int64 {
		rec, err := s.AppendAudit(ctx, mediator.AuditEntry{Kind: mediator.AuditDecision, Operation: mediator.Operation{AgentID: "a", Name: mediator.OpLog}})
		if err != nil {
			t.Fatal(err)
		}
		if d := s.DurableAuditSize(); d >= rec.Seq {
			t.Fatalf("record %d durable (%d) before its hour-long window", rec.Seq, d)
		}
		return rec.Seq
	}
	t.Run("SyncAudit", func(t *testing.T) {
		s, _ := Open(t.TempDir(), Options{holdSync: true})
		defer s.Close()
		seq := appendOne(t, s)
		if err := s.SyncAudit(ctx, seq); err != nil || s.DurableAuditSize() < seq {
			t.Fatalf("SyncAudit: %v, durable %d", err, s.DurableAuditSize())
		}
	})
	t.Run("checkpoint", func(t *testing.T) {
		s, _ := Open(t.TempDir(), Options{holdSync: true})
		defer s.Close()
		seq := appendOne(t, s)
		_, size, _, err := s.AuditCheckpoint(ctx)
		if err != nil || size != seq || s.DurableAuditSize() < size {
			t.Fatalf("checkpoint of %d records: %v; durable %d", size, err, s.DurableAuditSize())
		}
	})
	t.Run("close", func(t *testing.T) {
		s, _ := Open(t.TempDir(), Options{holdSync: true})
		seq := appendOne(t, s)
		s.Close()
		if s.DurableAuditSize() < seq || s.sy.syncs.Load() == 0 {
			t.Fatalf("after Close: durable %d, %d fsyncs; want %d and one", s.DurableAuditSize(), s.sy.syncs.Load(), seq)
		}
	})
}

// TestCloseSyncsOnlyWhatThisProcessCommitted: Close fsyncs when the store
// committed something no sync has covered (here Open's own migration, made
// before the syncer existed, then a record), and not after a session that
// only read, as most of the browser's host processes are: their exit does
// not wait for a journal commit.
func TestCloseSyncsOnlyWhatThisProcessCommitted(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	closeCounting := func(t *testing.T, use func(s *Store)) int64 {
		t.Helper()
		s, err := Open(dir, Options{holdSync: true})
		if err != nil {
			t.Fatal(err)
		}
		use(s)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		return s.sy.syncs.Load()
	}
	if n := closeCounting(t, func(*Store) {}); n == 0 {
		t.Fatal("the migration that created the schema was never fsynced")
	}
	if n := closeCounting(t, func(s *Store) {
		if _, err := s.ListAgents(ctx); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("a store that only read fsynced %d times at Close", n)
	}
	if n := closeCounting(t, func(s *Store) {
		if _, err := s.AppendAudit(ctx, mediator.AuditEntry{Kind: mediator.AuditDecision, Operation: mediator.Operation{AgentID: "a", Name: mediator.OpLog}}); err != nil {
			t.Fatal(err)
		}
	}); n == 0 {
		t.Fatal("a record committed within an hour-long window was not fsynced at Close")
	}
}

// strictFixture is cachedFixture with an hour-long sync window and a
// second agent whose profile asks for the strict durability.
func strictFixture(t *testing.T) (*Store, *mediator.Policy) {
	t.Helper()
	s, err := Open(t.TempDir(), Options{Now: fixedClock(), holdSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for _, id := range []string{"c", "strict"} {
		p := testProfile(id, []mediator.Permission{mediator.PermNetworkFetch, mediator.PermPageRead, mediator.PermConsoleLog}, nil)
		p.Capabilities.NetworkAccess, p.Capabilities.DOMAccess = true, mediator.DOMReadOnly
		if id == "strict" {
			p.Audit = &mediator.AuditRequest{Durability: mediator.DurabilityStrict}
		}
		if err := p.Normalize(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.InstallAgent(context.Background(), p, ""); err != nil {
			t.Fatal(err)
		}
	}
	return s, mediator.NewPolicy(s, mediator.PolicyOptions{})
}

// TestStrictDurability: an effect of an agent whose profile asks for the
// strict durability runs only once its decision is on disk; another
// agent's waits only for the commit. A run that asks for strict (the
// host's config) is on disk before its barrier returns.
func TestStrictDurability(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name    string
		agent   string
		run     mediator.RunAudit
		durable bool // on disk when Authorize returns
	}{
		{"written agent", "c", mediator.RunAudit{}, false},
		{"strict profile", "strict", mediator.RunAudit{}, true},
		{"strict run", "c", mediator.RunAudit{Strict: true}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, pol := strictFixture(t)
			bar := mediator.NewRunBarrier(c.run)
			op := cachedFetch
			op.AgentID = c.agent
			done, err := pol.WithBarrier(bar).Authorize(ctx, op)
			if err != nil {
				t.Fatal(err)
			}
			// The fetch's decision is the newest record.
			p, err := s.ListAudit(ctx, 0, 10, true)
			if err != nil || len(p.Records) == 0 {
				t.Fatal(p, err)
			}
			seq := p.Records[len(p.Records)-1].Seq
			if got := s.DurableAuditSize() >= seq; got != c.durable {
				t.Fatalf("decision %d durable when Authorize returned: %v; want %v", seq, got, c.durable)
			}
			done(nil)
			if err := bar.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			if c.run.Strict && s.DurableAuditSize() < seq+1 {
				t.Fatalf("strict run: durable %d after its barrier; want %d", s.DurableAuditSize(), seq+1)
			}
		})
	}
}

// TestLogCallsAggregate: a run's allowed log calls leave exactly one
// aggregate record, with their count, bytes and the hash of their
// contents; asked per call (by the run or by the profile) each call keeps
// its two records; a denied call is always its own record.
func TestLogCallsAggregate(t *testing.T) {
	ctx := context.Background()
	const n = 50
	contents := make([]string, n)
	var bytes int64
	for i := range contents {
		// Hostile: contents that run into each other if not length-prefixed.
		contents[i] = strings.Repeat("x", i%3) + fmt.Sprint(i)
		bytes += int64(len(contents[i]))
	}
	cases := []struct {
		name    string
		agent   string
		run     mediator.RunAudit
		perCall bool
	}{
		{"aggregate by default", "c", mediator.RunAudit{}, false},
		{"per call by the host", "c", mediator.RunAudit{PerCall: true}, true},
		{"per call by the profile", "percall", mediator.RunAudit{}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, pol, _ := cachedFixture(t)
			p := testProfile("percall", []mediator.Permission{mediator.PermConsoleLog}, nil)
			p.Audit = &mediator.AuditRequest{Calls: mediator.AuditCallsPerCall}
			if err := p.Normalize(); err != nil {
				t.Fatal(err)
			}
			if _, err := s.InstallAgent(ctx, p, ""); err != nil {
				t.Fatal(err)
			}
			bar := mediator.NewRunBarrier(c.run)
			auth := pol.WithBarrier(bar)
			for _, m := range contents {
				done, err := auth.Authorize(ctx, mediator.Operation{AgentID: c.agent, Name: mediator.OpLog, Permission: mediator.PermConsoleLog,
					TextLength: len(m), Content: m})
				if err != nil {
					t.Fatal(err)
				}
				done(nil)
			}
			if err := bar.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			page, err := s.ListAudit(ctx, 0, 1000, false)
			if err != nil {
				t.Fatal(err)
			}
			if c.perCall {
				if len(page.Records) != 2*n {
					t.Fatalf("%d records; want %d (a decision and an executed record per call)", len(page.Records), 2*n)
				}
			} else {
				if len(page.Records) != 1 {
					t.Fatalf("%d records; want one aggregate: %+v", len(page.Records), page.Records)
				}
				r := page.Records[0]
				a := r.Aggregate
				if r.Kind != mediator.AuditAggregated || a == nil || a.Count != n || a.Bytes != bytes || a.SHA256 != mediator.AggregateHash(contents...) ||
					r.Code != mediator.CodeAllowed || r.DecidedBy != "class:ALWAYS_SAFE" || r.Operation.Name != mediator.OpLog || a.First > a.Last {
					t.Fatalf("aggregate record %+v %+v", r, a)
				}
			}
			if rep, err := s.VerifyAudit(ctx); err != nil || !rep.OK {
				t.Fatalf("verify %+v %v", rep, err)
			}
		})
	}
	// The run remembers its last allowed log decision while nothing was
	// committed: a revocation, by this Store or by another process's,
	// must deny the very next call.
	for _, other := range []bool{false, true} {
		name := "a revocation mid-run denies the next call"
		if other {
			name += " (another process)"
		}
		t.Run(name, func(t *testing.T) {
			s, pol, dir := cachedFixture(t)
			bar := mediator.NewRunBarrier(mediator.RunAudit{})
			auth := pol.WithBarrier(bar)
			logOnce := func() error {
				done, err := auth.Authorize(ctx, mediator.Operation{AgentID: "c", Name: mediator.OpLog, Permission: mediator.PermConsoleLog, Content: "x"})
				if err == nil {
					done(nil)
				}
				return err
			}
			for range 5 {
				if err := logOnce(); err != nil {
					t.Fatal(err)
				}
			}
			revoker := s
			if other {
				revoker = openTestStore(t, dir)
			}
			if _, err := revoker.Revoke(ctx, "c", mediator.PermConsoleLog); err != nil {
				t.Fatal(err)
			}
			if err := logOnce(); mediator.CodeOf(err) != mediator.CodeRevokedByUser {
				t.Fatalf("log after the revocation: %v; want revoked_by_user", err)
			}
			if err := bar.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			page, err := s.ListAudit(ctx, 0, 100, false)
			if err != nil || len(page.Records) != 2 || page.Records[0].Code != mediator.CodeRevokedByUser ||
				page.Records[1].Kind != mediator.AuditAggregated || page.Records[1].Aggregate.Count != 5 {
				t.Fatalf("trail %+v %v; want the denial, then the aggregate of 5", page, err)
			}
		})
	}
	t.Run("a denied log call is its own record", func(t *testing.T) {
		s, pol, _ := cachedFixture(t)
		if _, err := s.Revoke(ctx, "c", mediator.PermConsoleLog); err != nil {
			t.Fatal(err)
		}
		bar := mediator.NewRunBarrier(mediator.RunAudit{})
		for range 3 {
			if _, err := pol.WithBarrier(bar).Authorize(ctx, mediator.Operation{AgentID: "c", Name: mediator.OpLog, Content: "x"}); mediator.CodeOf(err) != mediator.CodeRevokedByUser {
				t.Fatalf("Authorize: %v; want revoked_by_user", err)
			}
		}
		if err := bar.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		page, err := s.ListAudit(ctx, 0, 100, false)
		if err != nil || len(page.Records) != 3 || page.Records[0].Kind != mediator.AuditDecision || page.Records[0].Code != mediator.CodeRevokedByUser {
			t.Fatalf("trail %+v %v; want three denied decisions", page, err)
		}
		dn, err := s.ListDenials(ctx, DenialFilter{})
		if err != nil || len(dn.Denials) != 3 {
			t.Fatalf("denials %+v %v", dn, err)
		}
	})
}

// TestPersonsChangesAreOnDiskWhenAcknowledged: a write that is not an
// audit record (a session's settings here; grants, revocations and
// answers take the same path) returns only after a sync begun after its
// commit has finished, whatever the window: a revocation a person was
// told about survives a power loss.
func TestPersonsChangesAreOnDiskWhenAcknowledged(t *testing.T) {
	s, err := Open(t.TempDir(), Options{SyncWindow: MaxSyncWindow})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 3 {
		before := s.sy.started.Load()
		if _, err := s.UpdateSessionSettings(context.Background(), "s", []byte(`{"permissionLevel":"low"}`)); err != nil {
			t.Fatal(err)
		}
		s.sy.mu.Lock()
		done := s.sy.done
		s.sy.mu.Unlock()
		if done <= before {
			t.Fatalf("write %d acknowledged with the last finished sync %d begun before it (%d)", i, done, before)
		}
	}
}
