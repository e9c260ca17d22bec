package admit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/distsem/distsem/core"
)

// ErrTooManyWaiting is the cause of a NoCapacity rejection when WithMaxWaiting
// requests of the same key were already waiting. It matches core.ErrNoPermit.
var ErrTooManyWaiting = fmt.Errorf("admit: too many requests waiting: %w", core.ErrNoPermit)

// Controller admits requests by key. It is safe for concurrent use; one
// Controller may serve any number of handlers.
type Controller struct {
	sem core.KeyedSemaphore
	o   options

	mu      sync.Mutex
	waiting map[string]int // keys with at least one waiter in this process
}

// New returns a Controller that takes permits from sem. It panics if sem is
// nil or an option is out of range (see the option's documentation).
func New(sem core.KeyedSemaphore, opts ...Option) *Controller {
	if sem == nil {
		panic("admit: New expects a non-nil semaphore")
	}
	o := defaultOptions
	for _, f := range opts {
		f(&o)
	}
	if err := o.resolve(); err != nil {
		panic(err.Error())
	}
	return &Controller{sem: sem, o: o, waiting: make(map[string]int)}
}

// Acquire admits one request of key. ctx is the request's context: if it
// ends first, the request is rejected with ClientGone and holds nothing.
// If ctx carries a flow and a level (core.ContextWithFlow), the permit is
// asked for with them.
//
// On success it returns a Ticket that the caller must Release once, when
// the request is done. On failure it returns the zero Ticket and a
// *Rejection (always that type), and the semaphore is left as if Acquire had
// not been called. See the package documentation for how long it waits.
func (c *Controller) Acquire(ctx context.Context, key string) (Ticket, error) {
	obs := c.o.observer
	var start time.Time
	if obs != nil {
		start = time.Now()
	}
	fo := core.FlowOptions(ctx) // nil, with no allocation, unless ctx names a flow
	skip, counted := c.queueFirst(ctx, key, fo)
	if !skip {
		p, err := c.sem.TryAcquire(ctx, key, fo...)
		if err == nil {
			return c.admitted(key, p, start, false), nil
		}
		if c.o.maxWait == 0 || !errors.Is(err, core.ErrNoPermit) {
			return Ticket{}, c.reject(ctx, key, err, start, false)
		}
	}
	if !counted && !c.enqueue(key) {
		return Ticket{}, c.reject(ctx, key, ErrTooManyWaiting, start, false)
	}
	if obs != nil {
		obs.Observe(Event{Kind: EventQueued, Key: key})
	}
	var p *core.Permit
	var err error
	if c.o.maxWait == WaitForever {
		p, err = c.sem.Acquire(ctx, key, fo...)
	} else {
		wctx, cancel := context.WithTimeout(ctx, c.o.maxWait)
		p, err = c.sem.Acquire(wctx, key, fo...)
		cancel()
	}
	c.dequeue(key)
	if err != nil {
		return Ticket{}, c.reject(ctx, key, err, start, true)
	}
	return c.admitted(key, p, start, true), nil
}

// queueFirst reports whether a request of key skips the try for a free
// permit and joins the queue at once (Acquire still grants at once a permit
// that is free). That saves a round trip with the Redis backend when the
// try is known to fail or to make no difference:
//   - it may wait as long as its context allows, any number of requests may
//     wait, and no Observer is told whether it queued; or
//   - another request of key is waiting in this process, there is room for
//     one more, and the request names no flow nor level (core.ContextWithFlow)
//     and holds no permit (core.ContextWithPermit). The semaphore then grants
//     a free permit to that waiter first, so the try would fail.
//
// In the second case it also counts the request as waiting (enqueue), in
// the same hold of c.mu, and reports counted.
func (c *Controller) queueFirst(ctx context.Context, key string, fo []core.AcquireOption) (skip, counted bool) {
	switch {
	case c.o.maxWait == 0:
		return false, false
	case c.o.maxWait == WaitForever && c.o.maxWaiting == math.MaxInt && c.o.observer == nil:
		return true, false
	case fo != nil || core.PermitFromContext(ctx) != nil:
		return false, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.waiting[key]
	if n > 0 && n < c.o.maxWaiting {
		c.waiting[key] = n + 1
		return true, true
	}
	return false, false
}

func (c *Controller) admitted(key string, p *core.Permit, start time.Time, queued bool) Ticket {
	t := Ticket{c: c, p: p, key: key}
	if obs := c.o.observer; obs != nil {
		t.at = time.Now()
		if queued {
			obs.Observe(Event{Kind: EventDequeued, Key: key})
		}
		obs.Observe(Event{Kind: EventAdmitted, Key: key, Wait: t.at.Sub(start)})
	}
	return t
}

func (c *Controller) reject(ctx context.Context, key string, err error, start time.Time, queued bool) error {
	r := &Rejection{Reason: classify(ctx, err), Key: key, Err: err}
	if obs := c.o.observer; obs != nil {
		if queued {
			obs.Observe(Event{Kind: EventDequeued, Key: key})
		}
		obs.Observe(Event{Kind: EventRejected, Key: key, Reason: r.Reason, Wait: time.Since(start), Err: err})
	}
	return r
}

// classify sorts a failed acquire. The request's own context is checked
// first: once it has ended, whatever the semaphore said, the client is gone.
// A backend failure comes next, since it may wrap context.DeadlineExceeded
// (Redis silent for the operation timeout): that is no verdict on capacity.
func classify(ctx context.Context, err error) Reason {
	switch {
	case ctx.Err() != nil:
		return ClientGone
	case errors.Is(err, core.ErrUnavailable):
		return Unavailable
	case errors.Is(err, core.ErrNoPermit), errors.Is(err, context.DeadlineExceeded):
		return NoCapacity
	}
	return Unavailable
}

func (c *Controller) enqueue(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.waiting[key]
	if n >= c.o.maxWaiting { // NoWaiting (-1) too
		return false
	}
	c.waiting[key] = n + 1
	return true
}

func (c *Controller) dequeue(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := c.waiting[key] - 1; n > 0 {
		c.waiting[key] = n
	} else {
		delete(c.waiting, key) // only keys with waiters use memory
	}
}

// Waiting returns how many requests of key are waiting in this process.
// Where Acquire skips the try (see the package documentation) a request
// counts from the start of its acquire, even one granted at once.
func (c *Controller) Waiting(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.waiting[key]
}

// Ticket is an admitted request's hold on its permit. The zero Ticket holds
// nothing. A Ticket is a small value: copy it freely, but Release it once.
type Ticket struct {
	c   *Controller
	p   *core.Permit
	key string
	at  time.Time // when admitted; set only when there is an observer
}

// Permit returns the permit held, or nil for the zero Ticket.
func (t Ticket) Permit() *core.Permit { return t.p }

// Context returns ctx holding the ticket's permit (core.ContextWithPermit),
// so that a handler given it can acquire the same semaphore again when the
// semaphore is a core.Reentrant (or core.ReentrantKeyed) wrapper. The
// adapters pass it to the handlers they run. The zero Ticket returns ctx unchanged.
func (t Ticket) Context(ctx context.Context) context.Context { return core.ContextWithPermit(ctx, t.p) }

// Key returns the key the ticket was admitted under.
func (t Ticket) Key() string { return t.key }

// Release gives the permit back. ctx is the request's context; it may
// already be cancelled: a permit with a lease is released with
// context.WithoutCancel(ctx) bounded by WithReleaseTimeout. Release must be
// called once per admitted request; the permit itself tolerates more calls
// (they do nothing and return nil), but concurrent extra calls may report
// EventReleased twice. The error, if any, comes from core.Permit.Release and
// is also reported in EventReleased: the backend reclaims a permit whose
// release failed when its lease ends.
func (t Ticket) Release(ctx context.Context) error {
	p := t.p
	if p == nil || p.Released() {
		return nil
	}
	err := p.ReleaseDetached(ctx, t.c.o.releaseTimeout)
	if obs := t.c.o.observer; obs != nil {
		select {
		case <-p.Lost():
			obs.Observe(Event{Kind: EventLost, Key: t.key})
		default:
		}
		obs.Observe(Event{Kind: EventReleased, Key: t.key, Wait: time.Since(t.at), Err: err})
	}
	return err
}

// Global returns a KeyedSemaphore that ignores the key: every key shares the
// one limit of sem. Use it to give an adapter a single global limit.
func Global(sem core.Semaphore) core.KeyedSemaphore {
	if sem == nil {
		panic("admit: Global expects a non-nil semaphore")
	}
	return global{sem}
}

type global struct{ s core.Semaphore }

func (g global) Acquire(ctx context.Context, _ string, opts ...core.AcquireOption) (*core.Permit, error) {
	return g.s.Acquire(ctx, opts...)
}

func (g global) TryAcquire(ctx context.Context, _ string, opts ...core.AcquireOption) (*core.Permit, error) {
	return g.s.TryAcquire(ctx, opts...)
}
