package core

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
)

func (s *Redis) acquire(ctx context.Context, try bool, opts []AcquireOption) (*Permit, error) {
	a, err := buildAcquire(s.b.cfg.leaseTTL, opts)
	if err != nil {
		return nil, err
	}
	if p, ok, err := reenter(ctx, s.b.cfg.reentrant, s.name, a.weight, s.owns); ok {
		return p, err
	}
	if ctx.Err() != nil {
		return nil, ctxError(ctx, s.name)
	}
	if try {
		id := s.b.newID()
		r, err := s.runAcquire(ctx, id, a, true)
		switch {
		case errors.Is(err, ErrUnavailable):
			return s.failed(ctx, "acquire", err, true, opts, a.weight)
		case err != nil:
			return nil, err
		case r.code == 1:
			return s.granted(id, a, r.value, r.nowUS, 0), nil
		}
		return nil, fmt.Errorf("%w: %q", ErrNoPermit, s.name)
	}
	if err := s.b.listen(ctx); err != nil {
		if ctx.Err() != nil {
			return nil, ctxError(ctx, s.name)
		}
		if err == ErrClosed {
			return nil, err
		}
		return s.failed(ctx, "subscribe", err, false, opts, a.weight)
	}
	p, err := s.wait(ctx, a)
	if err != nil {
		if errors.Is(err, ErrUnavailable) {
			return s.failed(ctx, "acquire", err, false, opts, a.weight)
		}
		return nil, err
	}
	return p, nil
}

// wait enqueues and waits for the grant. A waiter evicted from the queue
// while alive (its heartbeats failed for 2/3 of its TTL) queues again.
func (s *Redis) wait(ctx context.Context, a acquireConfig) (p *Permit, err error) {
	w := &redisWaiter{s: s, id: s.b.newID(), ttl: a.ttl, ch: make(chan grantNote, 1)}
	var start time.Time // set once queued
	var queueUS int64
	defer func() {
		if err != nil && !start.IsZero() {
			s.b.cfg.observe(Event{Kind: EventAbandoned, Name: s.label, Weight: a.weight, Wait: time.Since(start), Err: err})
		}
	}()
	for {
		if err := s.b.addWaiter(w); err != nil {
			return nil, err
		}
		r, err := s.runAcquire(ctx, w.id, a, false)
		if err != nil || r.code == 1 {
			s.b.removeWaiter(w)
		}
		if err != nil {
			return nil, err
		}
		if r.code == 1 {
			return s.granted(w.id, a, r.value, r.nowUS, since(start)), nil
		}
		s.b.queued(w, r.value)
		if a.queued != nil {
			a.queued()
		}
		queueUS = r.nowUS
		if start.IsZero() {
			start = time.Now()
			s.b.cfg.observe(Event{Kind: EventWait, Name: s.label, Weight: a.weight})
		}

		var n grantNote
		select {
		case n = <-w.ch:
		case <-ctx.Done():
			s.b.removeWaiter(w)
			s.leave(ctx, w.id, a.ttl)
			return nil, ctxError(ctx, s.name)
		case <-s.b.stop:
			s.b.removeWaiter(w)
			s.leave(ctx, w.id, a.ttl)
			return nil, ErrClosed
		}
		switch {
		case n.token == -1:
			return nil, invalid("weight %d exceeds the lowered limit of %q", a.weight, s.name)
		case n.token == -2:
			continue // evicted while alive: queue again
		case ctx.Err() != nil:
			// Granted as ctx ended: pass the permit on (go.dev/issue/63615).
			s.leave(ctx, w.id, a.ttl)
			return nil, ctxError(ctx, s.name)
		}
		p := s.granted(w.id, a, n.token, n.grantUS, time.Since(start))
		p.queueUS = queueUS
		return p, nil
	}
}

// runAcquire runs the acquire script for id: code 1 granted (value = token),
// 0 no permit (try), 2 queued (value = ms to the earliest lease end). A
// weight above the limit is an ErrInvalidArgument error. If the round trip
// fails, the script may still have run, so id is taken back out of the
// queue (or its permit released) before the error is returned: the ctx's
// error, or ErrUnavailable.
func (s *Redis) runAcquire(ctx context.Context, id string, a acquireConfig, try bool) (reply, error) {
	tryArg := 0
	if try {
		tryArg = 1
	}
	r, err := s.run(ctx, scriptAcquire, s.limit, id, a.weight, a.ttl.Milliseconds(), tryArg)
	if err != nil {
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
	if r.code == -1 {
		return r, invalid("weight %d exceeds the limit %d of %q", a.weight, r.limit, s.name)
	}
	return r, nil
}

func since(t time.Time) time.Duration {
	if t.IsZero() {
		return 0
	}
	return time.Since(t)
}

// granted makes the permit of holder id and tracks it for renewal.
func (s *Redis) granted(id string, a acquireConfig, token, grantUS int64, waited time.Duration) *Permit {
	p := &Permit{owner: s, weight: a.weight, token: token, id: id, ttl: a.ttl.Milliseconds(),
		lost: make(chan struct{}), grantUS: grantUS}
	s.b.hold(s, p)
	s.b.cfg.observe(Event{Kind: EventAcquired, Name: s.label, Weight: a.weight, Wait: waited})
	return p
}

// leave takes waiter id out of the queue, or releases its permit if the
// grant raced, with a ctx that outlives the caller's. On failure the entry
// expires by itself within the lease TTL.
func (s *Redis) leave(ctx context.Context, id string, ttl time.Duration) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ttl)
	defer cancel()
	if _, err := s.run(ctx, scriptRelease, s.limit, id); err != nil {
		s.b.report(s.label, unavailable("leave queue", s.name, err))
	}
}

// neverSent reports whether err shows the command never reached Redis (the
// connection could not even be made), so there is nothing to undo.
func neverSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// failed applies the failure policy to a backend error.
func (s *Redis) failed(ctx context.Context, op string, cause error, try bool, opts []AcquireOption, weight int64) (*Permit, error) {
	err := cause
	if !errors.Is(err, ErrUnavailable) {
		err = unavailable(op, s.name, cause)
		s.b.report(s.label, err)
	}
	switch s.b.cfg.policy.mode {
	case 1:
		return &Permit{owner: nopOwner{}, weight: weight}, nil
	case 2:
		if try {
			return s.fallback.TryAcquire(ctx, opts...)
		}
		return s.fallback.Acquire(ctx, opts...)
	}
	return nil, err
}

func (s *Redis) release(ctx context.Context, p *Permit) error {
	s.b.unhold(s, p)
	if ctx.Err() != nil {
		// A request ctx is often over by release time; giving up here
		// would hold the permit until its lease ends.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), time.Duration(p.ttl)*time.Millisecond)
		defer cancel()
	}
	r, err := s.run(ctx, scriptRelease, s.limit, p.id)
	if err != nil {
		err = unavailable("release", s.name, err)
		s.b.report(s.label, err)
		return err
	}
	s.b.cfg.observe(Event{Kind: EventReleased, Name: s.label, Weight: p.weight})
	if r.code != 1 {
		return fmt.Errorf("%w: %q token %d", ErrNotHeld, s.name, p.token)
	}
	return nil
}

// run runs one script on s's keys with ARGV = limit, channel, args...,
// and delivers the grants its reply carries for this process's waiters
// (the in-process hand-off that skips pub/sub).
func (s *Redis) run(ctx context.Context, sc *redis.Script, limit int64, args ...any) (reply, error) {
	argv := make([]any, 0, 2+len(args))
	argv = append(argv, limit, s.b.channel)
	argv = append(argv, args...)
	v, err := sc.Run(ctx, s.b.client, s.keys, argv...).Slice()
	if err != nil {
		return reply{}, err
	}
	r, err := parseReply(v)
	s.b.deliver(r.notes)
	if r.limit > 0 {
		s.seen.Store(r.limit)
	}
	return r, err
}
