package core

import (
	"container/list"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// localEpoch numbers in-process semaphores. Each one's fencing tokens start
// at its number << 32, so tokens keep increasing even across a keyed
// semaphore that is evicted and created again, without a shared counter.
var localEpoch atomic.Int64

// Local is an in-process semaphore with the same semantics as the Redis
// backend: strict FIFO order (a large request at the head blocks smaller
// ones behind it, as in golang.org/x/sync/semaphore), weights, fencing
// tokens, a runtime limit and cancellation that never leaks a permit.
// Leases do not apply: a Local permit is never lost.
type Local struct {
	name string
	cfg  config

	mu      sync.Mutex
	limit   int64
	cur     int64
	token   int64     // the last fencing token granted
	waiters list.List // of *localWaiter
	closed  bool
}

type localWaiter struct {
	n     int64
	ready chan struct{} // closed when granted or failed
	token int64
	err   error // set before ready is closed when the waiter failed
}

// NewLocal returns an in-process semaphore of limit permits. It panics
// unless 0 < limit <= MaxLimit, or on a bad option (see Option).
func NewLocal(limit int64, opts ...Option) *Local {
	return newLocal("local", limit, buildConfig(opts))
}

func newLocal(name string, limit int64, cfg config) *Local {
	checkLimit("NewLocal limit", limit)
	return &Local{name: name, cfg: cfg, limit: limit, token: localEpoch.Add(1) << 32}
}

var _ Semaphore = (*Local)(nil)

// Acquire blocks until n permits (WithWeight, default 1) are available in
// FIFO order or ctx ends. If ctx is already done it fails even when a permit
// is free. On failure the semaphore is unchanged: a grant that raced the end
// of ctx is passed on to the next waiter.
func (s *Local) Acquire(ctx context.Context, opts ...AcquireOption) (*Permit, error) {
	return s.acquire(ctx, false, opts)
}

// TryAcquire grants n permits only if they are free and nobody is queued;
// otherwise it returns an ErrNoPermit error at once.
func (s *Local) TryAcquire(ctx context.Context, opts ...AcquireOption) (*Permit, error) {
	return s.acquire(ctx, true, opts)
}

func (s *Local) acquire(ctx context.Context, try bool, opts []AcquireOption) (*Permit, error) {
	a, err := buildAcquire(s.cfg.leaseTTL, opts)
	if err != nil {
		return nil, err
	}
	if p, ok, err := reenter(ctx, s.cfg.reentrant, s.name, a.weight, func(o releaser) bool { return o == s }); ok {
		return p, err
	}
	n := a.weight
	done := ctx.Done()
	s.mu.Lock()
	select {
	case <-done:
		s.mu.Unlock()
		return nil, ctxError(ctx, s.name)
	default:
	}
	switch {
	case s.closed:
		s.mu.Unlock()
		return nil, ErrClosed
	case n > s.limit:
		limit := s.limit
		s.mu.Unlock()
		return nil, invalid("weight %d exceeds the limit %d of %q", n, limit, s.name)
	case s.limit-s.cur >= n && s.waiters.Len() == 0:
		s.cur += n
		s.token++
		tok := s.token
		s.mu.Unlock()
		s.cfg.observe(Event{Kind: EventAcquired, Name: s.name, Weight: n})
		return &Permit{owner: s, weight: n, token: tok}, nil
	case try:
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: %q", ErrNoPermit, s.name)
	}
	w := &localWaiter{n: n, ready: make(chan struct{})}
	elem := s.waiters.PushBack(w)
	s.mu.Unlock()

	start := time.Now()
	s.cfg.observe(Event{Kind: EventWait, Name: s.name, Weight: n})
	select {
	case <-done:
		s.mu.Lock()
		select {
		case <-w.ready:
			if w.err == nil {
				// Granted after ctx ended: pretend it was not and pass
				// the permit on (go.dev/issue/63615).
				s.cur -= n
				s.notifyWaiters()
			}
		default:
			front := s.waiters.Front() == elem
			s.waiters.Remove(elem)
			if front && s.limit > s.cur {
				s.notifyWaiters()
			}
		}
		s.mu.Unlock()
		err := ctxError(ctx, s.name)
		s.cfg.observe(Event{Kind: EventAbandoned, Name: s.name, Weight: n, Wait: time.Since(start), Err: err})
		return nil, err
	case <-w.ready:
		if w.err != nil {
			s.cfg.observe(Event{Kind: EventAbandoned, Name: s.name, Weight: n, Wait: time.Since(start), Err: w.err})
			return nil, w.err
		}
		select {
		case <-done:
			// ctx ended as the grant arrived: fail, and give the permit back.
			s.mu.Lock()
			s.cur -= n
			s.notifyWaiters()
			s.mu.Unlock()
			err := ctxError(ctx, s.name)
			s.cfg.observe(Event{Kind: EventAbandoned, Name: s.name, Weight: n, Wait: time.Since(start), Err: err})
			return nil, err
		default:
		}
		s.cfg.observe(Event{Kind: EventAcquired, Name: s.name, Weight: n, Wait: time.Since(start)})
		return &Permit{owner: s, weight: n, token: w.token}, nil
	}
}

// notifyWaiters grants permits to queued waiters in FIFO order. It stops at
// the first waiter that does not fit, so a large request is never starved by
// smaller ones behind it. s.mu must be held.
func (s *Local) notifyWaiters() {
	for {
		next := s.waiters.Front()
		if next == nil {
			return
		}
		w := next.Value.(*localWaiter)
		if w.n > s.limit {
			// The limit was lowered below this request: it can never fit.
			w.err = invalid("weight %d exceeds the limit %d of %q", w.n, s.limit, s.name)
		} else if s.limit-s.cur < w.n {
			return
		} else {
			s.cur += w.n
			s.token++
			w.token = s.token
		}
		s.waiters.Remove(next)
		close(w.ready)
	}
}

func (s *Local) release(_ context.Context, p *Permit) error {
	s.mu.Lock()
	s.cur -= p.weight
	if s.cur < 0 {
		s.mu.Unlock()
		panic("core: released more than held")
	}
	s.notifyWaiters()
	s.mu.Unlock()
	s.cfg.observe(Event{Kind: EventReleased, Name: s.name, Weight: p.weight})
	return nil
}

// SetLimit changes the limit. Raising it grants queued waiters at once;
// lowering it lets current holders finish and admits no one until the
// permits in use fall below the new limit. A queued request heavier than the
// new limit fails with an ErrInvalidArgument error, and so does a limit
// that is not in [1, MaxLimit].
func (s *Local) SetLimit(_ context.Context, limit int64) error {
	if err := limitError(limit); err != nil {
		return err
	}
	s.mu.Lock()
	s.limit = limit
	// Every queued request heavier than the new limit fails now, not only
	// when it reaches the head.
	for e := s.waiters.Front(); e != nil; {
		next := e.Next()
		if w := e.Value.(*localWaiter); w.n > limit {
			w.err = invalid("weight %d exceeds the limit %d of %q", w.n, limit, s.name)
			s.waiters.Remove(e)
			close(w.ready)
		}
		e = next
	}
	s.notifyWaiters()
	s.mu.Unlock()
	return nil
}

// Stats returns the current limit, permits in use and queued waiters. It
// never fails.
func (s *Local) Stats(context.Context) (Stats, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{Limit: s.limit, InUse: s.cur, Waiting: int64(s.waiters.Len())}, nil
}

// Close fails every queued Acquire with ErrClosed, and every later Acquire
// too. Permits still held stay valid and may be released after Close.
func (s *Local) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for e := s.waiters.Front(); e != nil; e = s.waiters.Front() {
		w := e.Value.(*localWaiter)
		w.err = ErrClosed
		s.waiters.Remove(e)
		close(w.ready)
	}
	return nil
}
