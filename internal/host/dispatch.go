package host

import (
	"context"
	"sync"

	"golang.org/x/sync/semaphore"

	"github.com/agentgate/nmhost/mediator"
)

// How requests are scheduled. A frame is read and takes its bytes from
// MaxInFlightBytes; a request then runs once it has one of MaxInFlight
// places. Reading pauses while the next frame cannot get what it needs:
// that bounds the host's memory. Requests run on workers, goroutines kept
// for the next request once they have answered one (at most MaxInFlight of
// them): a request does not pay for a new goroutine and for growing its
// stack again, as it would with a goroutine of its own.
//
// Three rules keep requests that wait for a long time (run-agent, a fetch,
// anything that may prompt the user for up to a minute) from starving the
// quick ones:
//
//   - Answers to the host's own requests (browser-result, prompt-result)
//     take no place at all: the reading loop hands them to their waiter
//     itself. Otherwise MaxInFlight runs each waiting for a browser-result
//     would leave no place for the results they wait for.
//   - Long requests (longTypes) run on their own workers, at most
//     MaxInFlight minus reservedShort of them: the reserved places stay
//     for everything else, so a hello, a grant or a revoke is answered
//     however many runs are in progress.
//   - A long request that finds every long worker busy waits in a queue
//     (of at most MaxInFlight, its bytes counted) instead of holding up
//     the reading loop, so the quick requests behind it are still read.
//     Only a full queue pauses reading.
//
// Frames of up to inlineParse bytes are parsed by the reading loop to
// apply these rules (and to answer a quick request at once when nothing
// else is in flight: quickTypes); a larger one is parsed by its worker and counts as
// short (its bytes already bound how many such frames can be in flight).

// inlineParse is the largest frame whose envelope the reading loop reads
// itself: enough for every request but an install or a large fetch body,
// small enough that parsing one never holds up reading for long.
const inlineParse = 64 << 10

// longTypes are the request types that can take seconds or wait for the
// user: they may not fill every place.
var longTypes = map[string]bool{
	"run-agent":     true,
	"network-fetch": true,
}

// quickTypes are answered from memory or by one read of the store. When
// no other request holds a place, the reading loop answers one itself:
// handing it to a worker wakes another goroutine, often on another
// thread, and that wake-up is a large part of a lone request's round trip
// (sendNativeMessage asks one thing at a time). What arrives meanwhile
// waits to be read for that one answer; when anything is in flight they
// go to workers like every other request.
var quickTypes = map[string]bool{
	"hello":        true,
	"getAgentInfo": true,
	"list-agents":  true,
}

// reservedShort is how many of MaxInFlight places long requests may not
// take (at least one, when MaxInFlight allows it).
func reservedShort(maxInFlight int) int {
	return min(max(maxInFlight/8, 1), maxInFlight-1)
}

type job struct {
	msg    []byte
	req    *request // parsed already when parsed is true
	err    error
	parsed bool
	weight int64
}

type dispatcher struct {
	s        *server
	places   chan struct{} // one per request running
	inFlight *semaphore.Weighted
	maxBytes int64

	work    chan job // to idle short workers
	workers int      // short workers started; only the reading loop touches these
	max     int

	longQueue   chan job // long requests waiting for a long worker
	longWorkers int
	maxLong     int

	wg sync.WaitGroup
}

func newDispatcher(s *server, maxInFlight int, maxBytes int64) *dispatcher {
	return &dispatcher{
		s:         s,
		places:    make(chan struct{}, maxInFlight),
		inFlight:  semaphore.NewWeighted(maxBytes),
		maxBytes:  maxBytes,
		work:      make(chan job),
		max:       maxInFlight,
		longQueue: make(chan job, maxInFlight),
		maxLong:   max(maxInFlight-reservedShort(maxInFlight), 1),
	}
}

// dispatch hands msg to a worker, or delivers it at once when it is a
// result. It returns an error only when ctx ends while it waits.
func (d *dispatcher) dispatch(ctx context.Context, msg []byte) error {
	j := job{msg: msg}
	long := false
	if len(msg) <= inlineParse {
		j.req, j.err = safeParse(msg)
		j.parsed = true
		if j.err == nil && d.s.opts.OriginAllowed {
			if _, ok := resultTypes[j.req.Type]; ok {
				d.s.peer.deliver(j.req) // never blocks
				return nil
			}
			long = longTypes[j.req.Type]
			if quickTypes[j.req.Type] && len(d.places) == 0 {
				// Nothing else is in flight: answered here, without
				// waking a worker (see quickTypes). The place is free,
				// and only this loop takes places, so this never waits.
				d.places <- struct{}{}
				d.run(ctx, j)
				return nil
			}
		}
	}
	// A frame larger than the whole budget waits for all of it.
	j.weight = min(int64(len(msg)), d.maxBytes)
	if err := d.inFlight.Acquire(ctx, j.weight); err != nil {
		return err
	}
	if long {
		return d.queueLong(ctx, j)
	}
	select {
	case d.places <- struct{}{}:
	case <-ctx.Done():
		d.inFlight.Release(j.weight)
		return ctx.Err()
	}
	select {
	case d.work <- j: // an idle worker takes it
		return nil
	default:
	}
	if d.workers < d.max {
		d.workers++
		d.wg.Add(1)
		go d.worker(ctx, j)
		return nil
	}
	// Every worker exists and none is idle yet, but this job holds a
	// place, so at most max-1 of them are busy: one is on its way back.
	d.work <- j
	return nil
}

// queueLong puts a long request in the queue its workers take from,
// starting one more of them while there are fewer than maxLong.
func (d *dispatcher) queueLong(ctx context.Context, j job) error {
	select {
	case d.longQueue <- j:
	case <-ctx.Done():
		d.inFlight.Release(j.weight)
		return ctx.Err()
	}
	if d.longWorkers < d.maxLong {
		d.longWorkers++
		d.wg.Add(1)
		go d.longWorker(ctx)
	}
	return nil
}

func (d *dispatcher) worker(ctx context.Context, j job) {
	defer d.wg.Done()
	for {
		d.run(ctx, j)
		var ok bool
		if j, ok = <-d.work; !ok {
			return
		}
	}
}

// longWorker runs queued long requests, each once it has a place.
func (d *dispatcher) longWorker(ctx context.Context) {
	defer d.wg.Done()
	for j := range d.longQueue {
		// Once the host is stopping, the request is still answered (with
		// its context's error), as a running one would be.
		d.places <- struct{}{}
		d.run(ctx, j)
	}
}

// run handles j and gives back its place and its bytes.
func (d *dispatcher) run(ctx context.Context, j job) {
	defer func() {
		if j.weight > 0 { // a quick request answered at once took none
			d.inFlight.Release(j.weight)
		}
		<-d.places
	}()
	if !j.parsed {
		j.req, j.err = safeParse(j.msg)
	}
	d.s.handle(ctx, j.req, j.err)
}

// wait ends the workers once every request read is answered. The reading
// loop calls it after its last dispatch.
func (d *dispatcher) wait() {
	close(d.work)
	close(d.longQueue)
	d.wg.Wait()
}

// safeParse is parseRequest that turns a panic into an internal error, as
// handle does for a handler's: one bad frame must not end the host.
func safeParse(msg []byte) (req *request, err error) {
	defer func() {
		if p := recover(); p != nil {
			req, err = nil, mediator.Errorf(mediator.CodeInternal, "the host failed while reading this request")
		}
	}()
	return parseRequest(msg)
}
