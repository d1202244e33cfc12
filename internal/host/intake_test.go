package host

import (
	"context"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentgate/nmhost/internal/frame"
	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/netproxy"
)

// TestServeStopsWithoutItsRead: the host stops on its context while its
// input is open and a read is waiting (a signal with stdin open).
func TestServeStopsWithoutItsRead(t *testing.T) {
	st, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	defer inW.Close()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- Serve(ctx, inR, outW, Options{
			App: testApp(t, st, netproxy.New(netproxy.Config{}), mediator.AdminPolicy{}), Caller: Caller{Origin: testOrigin, Browser: "chromium"}, OriginAllowed: true,
		})
		outW.Close()
	}()
	w, r := frame.NewBrowserWriter(inW), frame.NewReader(outR)
	// An answer shows the host running; its reading goroutine then waits
	// in a read of the open input.
	if err := w.Write([]byte(`{"id":"1","type":"hello"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(); err != nil {
		t.Fatalf("hello before the stop: %v", err)
	}
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(time.Minute): // a guard against a hang, not a timing
		t.Fatal("Serve did not return on its context's end while a read was waiting")
	}
}

// TestIntakeDropsWhatComesAfterStop: a frame the waiting read brings once
// the intake has stopped is not handed over, and the reading goroutine
// ends with that read.
func TestIntakeDropsWhatComesAfterStop(t *testing.T) {
	inR, inW := io.Pipe()
	defer inW.Close()
	var handed atomic.Int32
	first := make(chan struct{}, 1)
	in := &intake{r: frame.NewReader(inR), done: make(chan struct{}),
		dispatch: func(context.Context, []byte) error { handed.Add(1); first <- struct{}{}; return nil }}
	go in.loop(context.Background())
	w := frame.NewBrowserWriter(inW)
	if err := w.Write([]byte(`{"id":"1","type":"hello"}`)); err != nil {
		t.Fatal(err)
	}
	<-first
	in.stop()
	if err := w.Write([]byte(`{"id":"2","type":"hello"}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-in.done:
	case <-time.After(time.Minute): // a guard against a hang, not a timing
		t.Fatal("the reading goroutine went on after the stop")
	}
	if n := handed.Load(); n != 1 {
		t.Fatalf("%d frames handed over, want 1: the one after the stop must not be", n)
	}
}
