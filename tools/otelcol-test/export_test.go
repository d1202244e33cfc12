package otelcoltest

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/agentgate/nmhost/auditlog"
	"github.com/agentgate/nmhost/internal/app/export"
	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/mediator"
)

func openStore(t testing.TB) *store.Store {
	t.Helper()
	st, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// fill appends n decisions in batches of up to 1000, every tenth one
// denied with its denial (which appends its own decision record).
func fill(t testing.TB, st *store.Store, n int) { fillDenying(t, st, n, 10) }

// fillDenying is fill with every denyEvery-th record a denial (0: none).
func fillDenying(t testing.TB, st *store.Store, n, denyEvery int) {
	t.Helper()
	ctx := context.Background()
	var batch []mediator.AuditEntry
	flush := func() {
		if _, err := st.AppendAuditBatch(ctx, batch); err != nil {
			t.Fatal(err)
		}
		batch = batch[:0]
	}
	for i := 0; i < n; i++ {
		if denyEvery > 0 && i%denyEvery == denyEvery-1 {
			flush()
			_, err := st.LogDenial(ctx, mediator.Denial{AgentID: "fetcher", Permission: "network.fetch", Code: mediator.CodeHostNotAllowed,
				Context: mediator.DenialContext{URL: fmt.Sprintf("http://blocked.test/%d", i), Reason: "host not in allowedHosts", Layer: "host",
					Details: map[string]string{"decidedBy": "acl:allowedHosts", "session": "s1"}}})
			if err != nil {
				t.Fatal(err)
			}
			continue
		}
		batch = append(batch, mediator.AuditEntry{Kind: mediator.AuditDecision, Allowed: true, Code: mediator.CodeAllowed,
			DecidedBy: "class:ALWAYS_SAFE", Reason: "it only reads",
			Operation: mediator.Operation{AgentID: "fetcher", Permission: "network.fetch", Name: "network.fetch",
				Method: "GET", URL: fmt.Sprintf("https://example.com/%d", i), Host: "example.com"}})
		if len(batch) == 1000 {
			flush()
		}
	}
	if len(batch) > 0 {
		flush()
	}
}

func endpoint(t testing.TB, addr string) export.Options {
	u, err := export.ParseEndpoint("http://"+addr, false)
	if err != nil {
		t.Fatal(err)
	}
	return export.Options{Endpoint: u, Backoff: export.Backoff{Initial: 5 * time.Millisecond, Max: 50 * time.Millisecond}}
}

// TestRecordsArriveWithTheirAttributes: through the collector's receiver
// and pipeline, every record arrives with the attributes of the contract,
// and the last checkpoint, checked with the verifier key the resource
// names, signs a tree whose head the received bodies recompute: the
// collector side holds the whole log, untruncated.
func TestRecordsArriveWithTheirAttributes(t *testing.T) {
	st := openStore(t)
	fill(t, st, 50)
	addr := freeAddr(t)
	s := newSink()
	r := startCollector(t, addr, s)
	defer r.Shutdown(context.Background())
	res, err := export.Run(context.Background(), st, endpoint(t, addr))
	if err != nil {
		t.Fatal(err)
	}
	if res.Records != 50 || res.Denials != 5 || res.Checkpoints != 1 {
		t.Fatalf("result %+v", res)
	}
	bodies := map[int64]string{}
	var cp arrived
	for _, a := range s.all() {
		switch a.attrs[export.AttrKind] {
		case "decision":
			bodies[a.attrs[export.AttrSeq].(int64)] = a.body
			if a.attrs[export.AttrAgent] != "fetcher" || a.attrs[export.AttrOperation] != "network.fetch" || a.attrs[export.AttrDecidedBy] == nil ||
				a.attrs[export.AttrDecision] == nil || a.attrs[export.AttrCode] == nil || a.attrs[export.AttrDecidedSource] == nil || a.attrs[export.AttrURL] == nil {
				t.Errorf("decision %v lacks an attribute", a.attrs)
			}
			if a.event != "nmhost.audit.decision" {
				t.Errorf("event %q", a.event)
			}
		case "denial":
			if a.attrs[export.AttrDenialID] == nil || a.attrs[export.AttrDenialSeq] == nil || a.attrs[export.AttrSession] != "s1" || a.attrs[export.AttrCode] != "host_not_allowed" {
				t.Errorf("denial %v lacks an attribute", a.attrs)
			}
		case "checkpoint":
			cp = a
		default:
			t.Errorf("a record of kind %v", a.attrs[export.AttrKind])
		}
	}
	if len(bodies) != 50 {
		t.Fatalf("%d audit records arrived; want 50", len(bodies))
	}
	vkey, _ := cp.resource[export.AttrVerifierKey].(string)
	v, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatalf("resource's verifier key %q: %v", vkey, err)
	}
	tree, _, err := auditlog.Open([]byte(cp.attrs[export.AttrCPNote].(string)), v, vkey)
	if err != nil || tree.N != 50 || cp.attrs[export.AttrCPSize] != int64(50) {
		t.Fatalf("checkpoint %v: %v, %v", cp.attrs, tree, err)
	}
	if root := treeOf(t, bodies, tree.N); root != tree.Hash {
		t.Fatalf("the received bodies make the head %v; the checkpoint signed %v", root, tree.Hash)
	}
}

// treeOf recomputes the log's tree head over records 1..n as received.
func treeOf(t *testing.T, bodies map[int64]string, n int64) tlog.Hash {
	var hashes []tlog.Hash
	hr := tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			out[i] = hashes[x]
		}
		return out, nil
	})
	for seq := int64(1); seq <= n; seq++ {
		body, ok := bodies[seq]
		if !ok {
			t.Fatalf("record %d never arrived", seq)
		}
		hs, err := tlog.StoredHashes(seq-1, []byte(body), hr)
		if err != nil {
			t.Fatal(err)
		}
		hashes = append(hashes, hs...)
	}
	root, err := tlog.TreeHash(n, hr)
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestCollectorStoppedMidStreamEveryRecordOnce: the collector stops while
// an export is under way and starts again; the exporter retries, and every
// record arrives; by nmhost.seq (the receiver's dedupe key) each exactly
// once. A request the collector consumed but whose answer was lost with
// the connection is sent again: OTLP gives at-least-once, the seq makes it
// exactly-once. A second export sends nothing.
func TestCollectorStoppedMidStreamEveryRecordOnce(t *testing.T) {
	const n = 3000
	st := openStore(t)
	fill(t, st, n)
	addr := freeAddr(t)
	s := newSink()
	s.holdAt, s.held, s.release = 5, make(chan struct{}), make(chan struct{})
	r := startCollector(t, addr, s)
	o := endpoint(t, addr)
	o.BatchRecords = 100
	retrying := make(chan struct{}, 1)
	o.Notify = func(msg string) {
		if strings.Contains(msg, "retrying") {
			select {
			case retrying <- struct{}{}:
			default:
			}
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := export.Run(context.Background(), st, o)
		done <- err
	}()
	deadline := time.After(60 * time.Second)
	select {
	case <-s.held: // the fifth request is inside the pipeline
	case <-deadline:
		t.Fatal("the collector never got five requests")
	}
	// Stop the collector while it holds that request: its listener
	// closes first (polled for, with a deadline), then the held request
	// is let go and the shutdown completes.
	stopped := make(chan error, 1)
	go func() { stopped <- r.Shutdown(context.Background()) }()
	for {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			break
		}
		c.Close()
		select {
		case <-deadline:
			t.Fatal("the collector's listener never closed")
		case <-time.After(5 * time.Millisecond):
		}
	}
	close(s.release)
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	select {
	case <-retrying: // the exporter found it gone
	case err := <-done:
		t.Fatalf("the export ended while the collector was down: %v", err)
	case <-deadline:
		t.Fatal("the exporter never retried")
	}
	r = startCollector(t, addr, s)
	defer r.Shutdown(context.Background())
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-deadline:
		t.Fatal("the export did not finish after the collector came back")
	}
	seen := map[int64]int{}
	dups := 0
	for _, a := range s.all() {
		if seq, ok := a.attrs[export.AttrSeq].(int64); ok {
			seen[seq]++
			if seen[seq] > 1 {
				dups++
			}
		}
	}
	for seq := int64(1); seq <= n; seq++ {
		if seen[seq] == 0 {
			t.Fatalf("record %d never arrived", seq)
		}
	}
	if len(seen) != n {
		t.Fatalf("%d distinct records arrived; want %d", len(seen), n)
	}
	t.Logf("%d records, %d sent again after the stop (deduplicated by nmhost.seq)", n, dups)
	before := len(s.all())
	res, err := export.Run(context.Background(), st, o)
	if err != nil || res.Batches != 0 || len(s.all()) != before {
		t.Fatalf("a second export: %+v, %v; %d records arrived, want none", res, err, len(s.all())-before)
	}
}

func exportRun(o export.Options, st *store.Store) (export.Result, error) {
	return export.Run(context.Background(), st, o)
}
