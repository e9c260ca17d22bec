package redissem

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/distsem/distsem/core"
)

func (s *Semaphore) acquire(ctx context.Context, try bool, opts []core.AcquireOption) (*core.Permit, error) {
	a, err := buildAcquire(s.b.cfg.leaseTTL, opts)
	if err != nil {
		return nil, err
	}
	h, err := s.take(ctx, try, a)
	switch {
	case err == nil:
		return h.p, nil
	case errors.Is(err, core.ErrUnavailable):
		return s.failed(ctx, err, try, opts, a.weight)
	}
	return nil, err
}

// take acquires a, and returns the holder of the grant. A backend failure
// is an ErrUnavailable error, already reported, to which the caller
// applies the failure policy.
func (s *Semaphore) take(ctx context.Context, try bool, a acquireSpec) (*holder, error) {
	if ctx.Err() != nil {
		return nil, ctxError(ctx, s.name)
	}
	if s.b.isClosed() {
		return nil, core.ErrClosed
	}
	if s.b.regate.wait(ctx) != nil {
		return nil, ctxError(ctx, s.name)
	}
	if try {
		id := s.b.newID(a.note != "")
		r, err := s.runAcquire(ctx, id, a, true)
		switch {
		case err != nil:
			return nil, err
		case r.code == codeGranted:
			return s.granted(ctx, id, a, r.value, r.nowUS, 0)
		}
		return nil, fmt.Errorf("%w: %q", core.ErrNoPermit, s.name)
	}
	if err := s.b.listen(ctx, s); err != nil {
		if ctx.Err() != nil {
			return nil, ctxError(ctx, s.name)
		}
		if err == core.ErrClosed {
			return nil, err
		}
		err = unavailable("subscribe", s.name, err)
		s.b.report(s.label, err)
		return nil, err
	}
	h, err := s.wait(ctx, a)
	if errors.Is(err, core.ErrUnavailable) && s.b.isClosed() {
		return nil, core.ErrClosed // the failure is Close's doing
	}
	return h, err
}

// wait enqueues and waits for the grant. A waiter evicted from the queue
// while alive (its heartbeats failed for 2/3 of its TTL) queues again.
// Whatever Redis does, it returns by ctx's end: the clean-up that must still
// reach Redis (leaving the queue) runs in the background.
func (s *Semaphore) wait(ctx context.Context, a acquireSpec) (h *holder, err error) {
	w := &redisWaiter{s: s, id: s.b.newID(a.note != ""), ttl: a.ttl, ch: make(chan grantNote, 1)}
	var start time.Time // set once queued
	var queueUS int64
	defer func() {
		if err != nil && !start.IsZero() {
			s.b.cfg.observe(core.Event{Kind: core.EventAbandoned, Name: s.label, Weight: a.weight, Wait: time.Since(start), Err: err, Ctx: ctx, Flow: a.flow, Level: a.level})
		}
	}()
	for {
		if err := s.b.addWaiter(w); err != nil {
			return nil, err
		}
		r, err := s.runAcquire(ctx, w.id, a, false)
		if err != nil || r.code == codeGranted {
			s.b.removeWaiter(w)
		}
		if err != nil {
			return nil, err
		}
		if r.code == codeGranted {
			return s.granted(ctx, w.id, a, r.value, r.nowUS, since(start))
		}
		s.b.queued(w, r.value)
		if a.queued != nil {
			a.queued()
		}
		queueUS = r.nowUS
		if start.IsZero() {
			start = time.Now()
			s.b.cfg.observe(core.Event{Kind: core.EventWait, Name: s.label, Weight: a.weight, Ctx: ctx, Flow: a.flow, Level: a.level})
		}

		var n grantNote
		select {
		case n = <-w.ch:
		case <-ctx.Done():
			if s.b.removeWaiter(w) {
				s.leave(ctx, w.id, a.ttl)
				return nil, ctxError(ctx, s.name)
			}
			n = <-w.ch // delivered meanwhile: handled below
		case <-s.b.stop:
			// Close took every waiter out of the Redis queue and sent
			// each a note; a grant delivered before it is handled below.
			if s.b.removeWaiter(w) {
				s.leave(ctx, w.id, a.ttl)
				return nil, core.ErrClosed
			}
			n = <-w.ch
		}
		switch {
		case n.token == noteRejected:
			return nil, invalid("weight %d exceeds the lowered limit of %q", a.weight, s.name)
		case n.token == noteLevelGone:
			return nil, invalid("level %d was removed from %q by SetFairness", a.level, s.name)
		case n.token == noteEvicted && ctx.Err() != nil:
			return nil, ctxError(ctx, s.name)
		case n.token == noteEvicted:
			continue // evicted while alive: queue again
		case n.token == noteClosed:
			return nil, core.ErrClosed
		case n.token == noteOutage:
			s.leave(ctx, w.id, a.ttl)
			return nil, unavailable("acquire", s.name, errOutage)
		case ctx.Err() != nil:
			// Granted as ctx ended: pass the permit on (go.dev/issue/63615).
			s.leave(ctx, w.id, a.ttl)
			return nil, ctxError(ctx, s.name)
		}
		h, err := s.granted(ctx, w.id, a, n.token, n.grantUS, time.Since(start))
		if h != nil {
			h.queueUS = queueUS
		}
		return h, err
	}
}

// Notes that the process makes itself, never sent by Redis.
const (
	noteClosed = -10 // Close took the waiter out of the queue
	noteOutage = -11 // the backend has been unreachable for the outage grace
)

var errOutage = errors.New("backend unreachable for longer than the outage grace")

// runAcquire runs the acquire script for id: code 1 granted (value = token),
// 0 no permit (try), 2 queued (value = ms to the earliest lease end). A
// weight above the limit is an ErrInvalidArgument error. If the round trip
// fails, the script may still run later, so id is taken back out of the
// queue (or its permit released) in the background, and the script carries
// a deadline in server time after which Redis refuses it. The error is the
// ctx's, or ErrUnavailable.
func (s *Semaphore) runAcquire(ctx context.Context, id string, a acquireSpec, try bool) (reply, error) {
	tryArg := 0
	if try {
		tryArg = 1
	}
	for attempt := 0; ; attempt++ {
		deadline := s.serverDeadline(ctx, attempt > 0)
		sent, owner := s.ownerDue(a.ttl)
		var r reply
		var err error
		if flow := s.flowArgs(a); flow != nil {
			args := append([]any{id, a.weight, s.b.leaseArg(a.ttl), tryArg, deadline, s.probe(try), a.note, owner}, flow...)
			r, err = s.run(ctx, scriptAcquire, s.limit, args...)
		} else if a.note == "" && owner == "" {
			r, err = s.run(ctx, scriptAcquire, s.limit, id, a.weight, s.b.leaseArg(a.ttl), tryArg, deadline, s.probe(try))
		} else {
			r, err = s.run(ctx, scriptAcquire, s.limit, id, a.weight, s.b.leaseArg(a.ttl), tryArg, deadline, s.probe(try), a.note, owner)
		}
		if errors.Is(err, ErrReplicaAck) && r.code != codeGranted {
			// Nothing granted to give back: a queued waiter's heartbeats
			// keep it queued, and its grant is announced once acknowledged.
			err = nil
		}
		if err == nil && owner != "" && (r.code == codeGranted || r.code == codeQueued) {
			s.ownerStored(sent, 2*a.ttl)
		}
		if err != nil || r.deaf {
			s.probeAt.Store(0) // the next one probes again
		}
		if err != nil {
			// A grant that the replicas did not acknowledge is given back
			// too (WithReplicaAck).
			if !neverSent(err) {
				s.leave(ctx, id, a.ttl)
			}
			if ctx.Err() != nil {
				return r, ctxError(ctx, s.name)
			}
			err = unavailable("acquire", s.name, err)
			s.b.report(s.label, err)
			return r, err
		}
		switch r.code {
		case codeTooHeavy:
			return r, invalid("weight %d exceeds the limit %d of %q", a.weight, r.limit, s.name)
		case codeLevel:
			return r, levelError(a.level, r.value, s.name)
		case codeLate:
			if ctx.Err() != nil {
				return r, ctxError(ctx, s.name)
			}
			// Redis found the request past its deadline although this
			// process does not: the clock estimate was off. It has been
			// corrected from this reply; try once more.
			if attempt == 0 && ctx.Err() == nil {
				continue
			}
			return r, unavailable("acquire", s.name, errors.New("request reached Redis after its deadline"))
		case codeDone:
			if s.b.isClosed() {
				return r, core.ErrClosed
			}
			return r, unavailable("acquire", s.name, errors.New("request id already released"))
		}
		return r, nil
	}
}

// probeEvery is how often a queued Acquire probes that somebody listens on
// its channel where the script ran. The probe finds a subscription left on a
// server that is no longer the master (after a failover, before the
// follower moved it); a waiter queued unprobed meanwhile is skipped by its
// grant (nobody listens there) and queues again at its next heartbeat. A
// failed round trip makes the next Acquire probe at once.
const probeEvery = time.Second

// probe returns the acquire script's probe argument: "1" at most every
// probeEvery per semaphore, for an Acquire that may queue. (It returns
// constants as any: boxing them allocates nothing.)
func (s *Semaphore) probe(try bool) any {
	if try {
		return "0"
	}
	now := time.Now().UnixNano()
	if at := s.probeAt.Load(); now < at || !s.probeAt.CompareAndSwap(at, now+int64(probeEvery)) {
		return "0"
	}
	return "1"
}

func since(t time.Time) time.Duration {
	if t.IsZero() {
		return 0
	}
	return time.Since(t)
}

// granted makes the permit of holder id and tracks it for renewal. After
// Close it gives the permit back instead and returns ErrClosed.
func (s *Semaphore) granted(ctx context.Context, id string, a acquireSpec, token, grantUS int64, waited time.Duration) (*holder, error) {
	h := s.newHolder(id, a.weight, token, a.ttl, grantUS)
	h.ctx, h.level = ctx, a.level
	if !s.b.hold(s, h) {
		s.leave(ctx, id, a.ttl)
		return nil, core.ErrClosed
	}
	s.b.cfg.observe(core.Event{Kind: core.EventAcquired, Name: s.label, Weight: a.weight, Wait: waited, Ctx: ctx, Flow: a.flow, Level: a.level})
	return h, nil
}

// leave takes waiter id out of the queue, or releases its permit if the
// grant raced, and leaves a tombstone that refuses a late copy of its
// acquire. It never blocks the caller: it runs in the background, retried
// for at most a third of ttl (each try bounded by the operation timeout),
// and stops retrying at Close. If it never arrives, the queue entry expires
// by itself within 2/3 of ttl; a permit granted meanwhile is released when
// its grant note reaches this process (redis_redo.go), else within ttl.
func (s *Semaphore) leave(ctx context.Context, id string, ttl time.Duration) {
	ctx = context.WithoutCancel(ctx)
	if !s.b.goBackground(func() {
		ctx, cancel := bound(ctx, ttl/3)
		defer cancel()
		s.releaseID(ctx, id, ttl, false)
	}) {
		// Closed: one bounded try, done before Close's caller returns.
		ctx, cancel := bound(ctx, s.b.cfg.fault.opTimeout)
		defer cancel()
		_, _ = s.run(ctx, scriptRelease, s.limit, id, s.b.tombArg(ttl))
	}
}

// releaseID runs the idempotent release script for id until it succeeds,
// ctx ends or the backend closes, and returns its code. In the foreground
// (a Release) it gives up at once when the breaker is open; in the
// background, when it gives up, it remembers id as an orphan and reports
// the failure.
func (s *Semaphore) releaseID(ctx context.Context, id string, ttl time.Duration, foreground bool) (int64, error) {
	backoff := 20 * time.Millisecond
	var moving error // the latest migration reply
	for {
		r, err := s.runScript(ctx, scriptRelease, true, s.limit, id, s.b.tombArg(ttl))
		if err == nil {
			s.b.noteReleased(s, id, ttl)
			return r.code, nil
		}
		if isMigration(err) {
			moving = err
		} else if moving != nil && ctx.Err() != nil {
			err = moving // ctx ended a retry: the migration is what failed
		}
		if foreground && errors.Is(err, errBreakerOpen) {
			return 0, err
		}
		if ctx.Err() == nil {
			t := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
			case <-s.b.stop:
				t.Stop()
				return 0, err
			case <-t.C:
			}
			t.Stop()
			backoff = min(2*backoff, time.Second)
		}
		if ctx.Err() != nil {
			if !foreground {
				s.b.orphaned(s, id, ttl)
				s.b.report(s.label, unavailable("leave queue", s.name, err))
			}
			return 0, err
		}
	}
}

// neverSent reports whether err shows the command never reached Redis (the
// connection could not even be made, or the breaker refused it), so there
// is nothing to undo. A refusal for missing rights (checked before any
// script) is one too.
func neverSent(err error) bool {
	var op *net.OpError
	return errors.Is(err, errBreakerOpen) || errors.Is(err, errNoRights) || errors.As(err, &op) && op.Op == "dial"
}

// failed applies the failure policy to err, an ErrUnavailable error.
// Permits of the fail-open and fail-local policies carry token 0.
func (s *Semaphore) failed(ctx context.Context, err error, try bool, opts []core.AcquireOption, weight int64) (*core.Permit, error) {
	return fallback(ctx, s.b.cfg.policy, s.fallback, try, opts, weight, err)
}

// release gives p back. The release script is idempotent, so a round trip
// whose reply was lost is retried, within ctx and twice the operation
// timeout: Release reports success when the release took effect. If that
// does not suffice, or the breaker is open, it returns ErrUnavailable and
// the release goes on in the background for a third of the lease.
func (s *Semaphore) release(ctx context.Context, p *holder) error {
	s.b.unhold(s, p)
	ttl := time.Duration(p.ttl) * time.Millisecond
	budget := 2 * s.b.cfg.fault.opTimeout
	if ctx.Err() != nil {
		// A request ctx is often over by release time; giving up here
		// would hold the permit until its lease ends.
		ctx, budget = context.WithoutCancel(ctx), min(budget, ttl)
	}
	rctx, cancel := bound(ctx, budget)
	code, err := s.releaseID(rctx, p.id, ttl, true)
	cancel()
	if isMigration(err) && ctx.Err() == nil {
		// A Cluster slot in migration answers MOVED, ASK or TRYAGAIN until
		// it settles: keep at it, within ctx, for up to migrateBudget more.
		rctx, cancel = bound(ctx, migrateBudget)
		code, err = s.releaseID(rctx, p.id, ttl, true)
		cancel()
	}
	if err != nil {
		s.leave(ctx, p.id, ttl)
		err = unavailable("release", s.name, err)
		s.b.report(s.label, err)
		return err
	}
	s.b.cfg.observe(core.Event{Kind: core.EventReleased, Name: s.label, Weight: p.weight, Ctx: ctx, Level: p.level})
	if code != codeGranted {
		return fmt.Errorf("%w: %q token %d", core.ErrNotHeld, s.name, p.token)
	}
	return nil
}
