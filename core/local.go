package core

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/distsem/distsem/core/internal/fair"
	"github.com/distsem/distsem/core/internal/word"
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
//
// With flows and levels (WithFlow, WithLevel, WithFairness, SetFairness)
// the order is fair instead (see Fairness): FIFO within a flow, deficit
// round robin between the flows of a level. Local keeps one queue per
// flow that has waiters, so a flow never shares a queue with another.
// From the first such call on, every grant and release takes a lock.
//
// An Acquire that finds room with nobody queued, and a Release with nobody
// queued, take no lock, so an uncontended Local costs about what
// golang.org/x/sync/semaphore does; a grant without the lock never
// overtakes a waiter that queued before it, nor uses a limit that SetLimit
// has already lowered.
type Local struct {
	// Without waiters, Acquire and Release are one compare-and-swap on
	// state (see core/internal/word). While anyone is queued, or after Close,
	// state is frozen and both go through mu, which keeps FIFO order.
	name string
	cfg  config

	state   atomic.Uint64 // see core/internal/word
	tokBase atomic.Int64  // a grant's token is tokBase + its seq
	// heavy is the sum of weight − 1 over the permits held, so that the
	// permits in use less heavy is the number of holders (Inspect). A
	// weight-1 permit leaves it alone: it costs its grant and release a
	// compare.
	heavy atomic.Int64

	mu      sync.Mutex
	limit   int64
	free    int64                    // while state is frozen: limit − permits in use
	seq     int64                    // while state is frozen: the grants so far
	waiters fair.Queue[*localWaiter] // non-empty only while state is frozen
	// lvl is nil until s has flows or levels (local_fair.go); from then
	// on the queue is fair, and state stays frozen.
	lvl    *[MaxLevels]permitExt
	closed bool // state stays frozen once closed
	// reserve is the permits held back from callers: a backend's share
	// (local_share.go); 0 otherwise.
	reserve int64
	// held is nil until the first Inspect, and then records the permits
	// granted since (local_inspect.go). The state stays frozen from then
	// on, so that every grant and release takes mu.
	held localHolders

	plain permitExt // shared by all of s's permits: they have no per-permit state. Its owner is s, or s's keyed entry (NewLocalKeyed)
}

// NewLocal returns an in-process semaphore of limit permits. It panics
// unless 0 < limit <= MaxLimit, or on a bad option (see Option).
func NewLocal(limit int64, opts ...Option) *Local {
	cfg := buildConfig(opts)
	cfg.refuse("NewLocal", optsLocal)
	if err := cfg.fair.Check(limit); err != nil {
		panic("core: WithFairness: " + err.Error())
	}
	s := newLocal(cfg.name, limit, cfg)
	if cfg.given&optFairness != 0 {
		s.mu.Lock()
		s.freeze()
		s.fairMode()
		s.mu.Unlock()
	}
	return s
}

func newLocal(name string, limit int64, cfg config) *Local {
	checkLimit("NewLocal limit", limit)
	s := &Local{name: name, cfg: cfg, limit: limit}
	s.plain.owner = s
	s.free = limit
	s.tokBase.Store(localEpoch.Add(1) << 32)
	s.state.Store(word.Frozen)
	s.thaw()
	return s
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
	n, note := int64(1), ""
	var fa *acquireConfig // the call's options, if it names a flow or a level
	if len(opts) != 0 {
		a, err := buildAcquire(s.cfg.leaseTTL, opts)
		if err != nil {
			return nil, err
		}
		n, note = a.weight, a.note
		if a.flowSet || a.level != 0 {
			fa = &a
		}
	}
	done := ctx.Done()
	if done != nil {
		select {
		case <-done:
			return nil, ctxError(ctx, s.name)
		default:
		}
	}
	// The fast path: room, and nobody queued.
	for fa == nil {
		st := s.state.Load()
		if st&word.Frozen != 0 {
			break
		}
		free, seq := word.Unpack(st)
		if free < n || seq >= word.SeqMax {
			break
		}
		if s.state.CompareAndSwap(st, word.Pack(free-n, seq+1)) {
			if n != 1 {
				s.heavy.Add(n - 1)
			}
			p := &Permit{permitExt: &s.plain, weight: n, token: s.tokBase.Load() + seq + 1}
			if o := s.cfg.observer; o != nil {
				o.Observe(Event{Kind: EventAcquired, Name: s.name, Weight: n, Ctx: ctx})
			}
			return p, nil
		}
	}
	return s.acquireSlow(ctx, done, try, n, note, fa)
}

// acquireSlow grants under mu, or queues. fa is the call's options if they
// name a flow or a level, else nil.
func (s *Local) acquireSlow(ctx context.Context, done <-chan struct{}, try bool, n int64, note string, fa *acquireConfig) (*Permit, error) {
	p, w, err := s.grantOrQueue(try, n, note, fa)
	switch {
	case err != nil:
		return nil, err
	case w != nil:
		return s.wait(ctx, done, w, fa)
	}
	if o := s.cfg.observer; o != nil {
		flow, level := fa.flowLevel()
		o.Observe(Event{Kind: EventAcquired, Name: s.name, Weight: n, Ctx: ctx, Flow: flow, Level: level})
	}
	return p, nil
}

// grantOrQueue, under mu, grants n permits at once, or queues a waiter for
// them (unless try), or fails and changes nothing. The sections of a
// Local under mu unlock by defer (all but its constructors'): a panic in
// one (net/http recovers a handler's) must not leave every later call
// blocked on mu.
func (s *Local) grantOrQueue(try bool, n int64, note string, fa *acquireConfig) (*Permit, *localWaiter, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return nil, nil, ErrClosed
	case n > s.limit:
		return nil, nil, invalid("weight %d exceeds the limit %d of %q", n, s.limit, s.name)
	case fa != nil && fa.level >= s.cfg.fair.Levels():
		return nil, nil, invalid("level %d of %q, which has %d levels", fa.level, s.name, s.cfg.fair.Levels())
	}
	s.freeze()
	if fa != nil {
		s.fairMode()
	}
	flow, level := fa.flowLevel()
	if s.waiters.Len() == 0 && s.free >= n {
		s.free -= n
		tok := s.nextToken()
		if n != 1 {
			s.heavy.Add(n - 1)
		}
		s.waiters.Held(level, n)
		x := s.ext(level)
		s.held.add(n, tok, note)
		s.thaw()
		return &Permit{permitExt: x, weight: n, token: tok}, nil, nil
	}
	if try {
		s.thaw()
		return nil, nil, fmt.Errorf("%w: %q", ErrNoPermit, s.name)
	}
	w := &localWaiter{p: Permit{weight: n}, ready: make(chan struct{})}
	w.q.V, w.q.Weight = w, n
	if note != "" || s.held != nil {
		w.meta = &localWaitMeta{note: note, since: time.Now()}
	}
	s.waiters.Push(&w.q, flow, level)
	return nil, w, nil
}

func (s *Local) release(ctx context.Context, p *Permit) error {
	n := p.weight
	if n != 1 {
		s.heavy.Add(1 - n)
	}
	level := 0
	for {
		st := s.state.Load()
		if st&word.Frozen != 0 {
			level = s.releaseFrozen(p)
			break
		}
		if s.state.CompareAndSwap(st, word.Release(st, n)) {
			break
		}
	}
	if o := s.cfg.observer; o != nil {
		o.Observe(Event{Kind: EventReleased, Name: s.name, Weight: n, Ctx: ctx, Level: level})
	}
	return nil
}

// releaseFrozen gives p's permits back under mu, grants the queue what
// fits, and returns p's level. It panics, changing nothing, if that would
// free more than the limit.
func (s *Local) releaseFrozen(p *Permit) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.freeze()
	if s.free+p.weight > s.limit {
		panic("core: released more than held")
	}
	s.free += p.weight
	delete(s.held, p.token)
	level := s.released(p)
	s.settle()
	return level
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
	defer s.mu.Unlock()
	s.freeze()
	s.setLimitLocked(limit)
	s.settle()
	return nil
}

// setLimitLocked makes limit the limit. Every queued request heavier than
// it fails now, not only when it reaches the head. s.mu must be held, and
// s frozen.
func (s *Local) setLimitLocked(limit int64) {
	s.free += limit - s.limit
	s.limit = limit
	if s.lvl != nil {
		s.waiters.Fair(fair.Reserves(s.cfg.fair.Reserves, limit), s.cfg.fair.Weights, 0)
	}
	s.failHeavier(limit)
}

// Stats returns the current limit, permits in use and queued waiters. It
// never fails.
func (s *Local) Stats(context.Context) (Stats, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Stats{Limit: s.limit, InUse: s.limit - s.freeNow(), Waiting: int64(s.waiters.Len())}
	for l := range st.Levels {
		st.Levels[l].InUse, st.Levels[l].Waiting, st.Backlogged = s.waiters.Level(l)
	}
	return st, nil
}

// Close fails every queued Acquire with ErrClosed, and every later Acquire
// too. Permits still held stay valid and may be released after Close.
func (s *Local) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.freeze()
	s.closed = true // state stays frozen
	for _, w := range s.queuedWaiters() {
		s.fail(w, ErrClosed)
	}
	return nil
}
