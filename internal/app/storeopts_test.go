package app

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentgate/nmhost/internal/datadir"
	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/mediator"
)

// TestStoreOptionsFromConfig: the audit settings come from config.json;
// an unreadable config keeps the most records the most carefully; a value
// the store does not know stops it from opening rather than being ignored.
func TestStoreOptionsFromConfig(t *testing.T) {
	cases := []struct {
		name string
		cfg  datadir.Config
		err  error
		want store.Options
		code mediator.Code // what store.Open says; "" opens
	}{
		{"no audit settings", datadir.Config{}, nil, store.Options{}, ""},
		{"strict, per call, 2 ms", datadir.Config{Audit: &datadir.AuditSettings{Durability: "strict", Calls: "per-call", SyncWindowMS: 2}}, nil,
			store.Options{Durability: "strict", AuditCalls: "per-call", SyncWindow: 2 * time.Millisecond}, ""},
		{"unreadable config", datadir.Config{}, errors.New("config: bad"), store.Options{Durability: "strict", AuditCalls: "per-call"}, ""},
		{"hostile durability", datadir.Config{Audit: &datadir.AuditSettings{Durability: "off"}}, nil, store.Options{Durability: "off"}, mediator.CodeBadRequest},
		{"hostile calls", datadir.Config{Audit: &datadir.AuditSettings{Calls: "none"}}, nil, store.Options{AuditCalls: "none"}, mediator.CodeBadRequest},
		{"window over a second", datadir.Config{Audit: &datadir.AuditSettings{SyncWindowMS: 3_600_000}}, nil, store.Options{SyncWindow: time.Hour}, mediator.CodeBadRequest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := storeOptions(c.cfg, c.err)
			if got.Durability != c.want.Durability || got.AuditCalls != c.want.AuditCalls || got.SyncWindow != c.want.SyncWindow {
				t.Fatalf("options %+v; want %+v", got, c.want)
			}
			s, err := store.Open(t.TempDir(), got)
			if err == nil {
				s.Close()
			}
			if mediator.CodeOf(err) != c.code && !(c.code == "" && err == nil) {
				t.Fatalf("Open: %v; want %q", err, c.code)
			}
		})
	}
	t.Run("read from the data dir", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, datadir.ConfigFile), []byte(`{"allowedOrigins": [], "audit": {"durability": "strict"}}`), 0o600); err != nil {
			t.Fatal(err)
		}
		if got := storeOptions(datadir.LoadConfig(dir)); got.Durability != mediator.DurabilityStrict {
			t.Fatalf("options %+v; want strict", got)
		}
		// A misspelt member makes the config unreadable: the careful settings.
		if err := os.WriteFile(filepath.Join(dir, datadir.ConfigFile), []byte(`{"audit": {"durabilty": "written"}}`), 0o600); err != nil {
			t.Fatal(err)
		}
		if got := storeOptions(datadir.LoadConfig(dir)); got.Durability != mediator.DurabilityStrict || got.AuditCalls != mediator.AuditCallsPerCall {
			t.Fatalf("options %+v; want strict and per-call", got)
		}
	})
}
