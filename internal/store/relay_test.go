package store

import (
	"context"
	"testing"
	"time"
)

// TestRelayedPrompts: a question is claimed once, by one process; only
// its claimer's answer counts; an expired question is never claimed.
func TestRelayedPrompts(t *testing.T) {
	ctx := context.Background()
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, ok, err := s.ClaimRelayedPrompt(ctx, "h1"); ok || err != nil {
		t.Fatalf("claimed from an empty relay: %v %v", ok, err)
	}
	if err := s.RelayPrompt(ctx, "q1", []byte(`{"a":1}`), time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := s.RelayPrompt(ctx, "old", []byte(`{}`), time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	q, ok, err := s.ClaimRelayedPrompt(ctx, "h1")
	if err != nil || !ok || q.ID != "q1" || string(q.Request) != `{"a":1}` {
		t.Fatalf("claim: %+v %v %v", q, ok, err)
	}
	if _, ok, _ := s.ClaimRelayedPrompt(ctx, "h2"); ok {
		t.Fatal("a second process claimed the same question, or an expired one")
	}
	// Another process's answer does not count.
	if err := s.AnswerRelayedPrompt(ctx, "q1", "h2", "always-allow", "", ""); err != nil {
		t.Fatal(err)
	}
	if claimed, answered, _, _, _, _ := s.RelayedAnswer(ctx, "q1"); !claimed || answered {
		t.Fatalf("claimed %v answered %v after a stranger's answer", claimed, answered)
	}
	if err := s.AnswerRelayedPrompt(ctx, "q1", "h1", "deny", "", ""); err != nil {
		t.Fatal(err)
	}
	// The first answer stands.
	if err := s.AnswerRelayedPrompt(ctx, "q1", "h1", "always-allow", "", ""); err != nil {
		t.Fatal(err)
	}
	if _, answered, ans, code, _, _ := s.RelayedAnswer(ctx, "q1"); !answered || ans != "deny" || code != "" {
		t.Fatalf("answer %q %q", ans, code)
	}
	if err := s.ForgetRelayedPrompt(ctx, "q1"); err != nil {
		t.Fatal(err)
	}
	if claimed, answered, _, _, _, _ := s.RelayedAnswer(ctx, "q1"); claimed || answered {
		t.Fatal("a forgotten question is still there")
	}
}
