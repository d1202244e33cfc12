package runs

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/wasmhost"
)

// recorder collects the events a batcher sends on, and signals each one.
type recorder struct {
	mu   sync.Mutex
	got  []wasmhost.Event
	sent chan struct{}
}

func (r *recorder) event(e wasmhost.Event) {
	r.mu.Lock()
	r.got = append(r.got, e)
	r.mu.Unlock()
	r.sent <- struct{}{}
}

func (r *recorder) events() []wasmhost.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]wasmhost.Event(nil), r.got...)
}

// TestOutputBatching: consecutive output goes out as one event, never
// after a later denial, never lost at the end, and on its own once its
// window passes or enough of it waits.
func TestOutputBatching(t *testing.T) {
	denial := wasmhost.Event{Kind: "denial", Denial: &mediator.Denial{Code: mediator.CodeHostNotAllowed}}
	out := func(s string) wasmhost.Event { return wasmhost.Event{Kind: "output", Text: s} }
	cases := []struct {
		name string
		in   []wasmhost.Event
		want []string // kinds and texts, "denial" for a denial
	}{
		{"lines coalesce", []wasmhost.Event{out("a\n"), out("b\n"), out("c\n")}, []string{"a\nb\nc\n"}},
		{"a denial sends the output before it", []wasmhost.Event{out("a\n"), denial, out("b\n")}, []string{"a\n", "denial", "b\n"}},
		{"a denial alone", []wasmhost.Event{denial}, []string{"denial"}},
		{"nothing", nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := &recorder{sent: make(chan struct{}, 100)}
			b := newOutputBatcher(r.event)
			for _, e := range c.in {
				b.event(e)
			}
			b.flush() // as Run does before it reports
			var got []string
			for _, e := range r.events() {
				if e.Kind == "denial" {
					got = append(got, "denial")
				} else {
					got = append(got, e.Text)
				}
			}
			if strings.Join(got, "|") != strings.Join(c.want, "|") {
				t.Fatalf("sent %q; want %q", got, c.want)
			}
		})
	}
	t.Run("the window sends without a flush", func(t *testing.T) {
		r := &recorder{sent: make(chan struct{}, 100)}
		b := newOutputBatcher(r.event)
		b.event(out("late\n"))
		select {
		case <-r.sent:
		case <-time.After(10 * time.Second): // a guard; the window is 10 ms
			t.Fatal("output not sent after its window")
		}
		if got := r.events(); len(got) != 1 || got[0].Text != "late\n" {
			t.Fatalf("sent %+v", got)
		}
	})
	t.Run("a full buffer sends at once", func(t *testing.T) {
		r := &recorder{sent: make(chan struct{}, 100)}
		b := newOutputBatcher(r.event)
		big := strings.Repeat("x", outputMax)
		b.event(out(big))
		if got := r.events(); len(got) != 1 || got[0].Text != big {
			t.Fatalf("%d events sent at once; want the full buffer", len(got))
		}
	})
}
