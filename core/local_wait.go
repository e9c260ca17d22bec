package core

import (
	"context"
	"time"

	"github.com/distsem/distsem/core/internal/fair"
)

// The queue side of Local: waiters, in FIFO order, and how they are
// granted or give up.

// localWaiter is a queued Acquire of a Local. The permit it is granted is
// part of it, so a grant after a wait allocates nothing more; its weight
// is the weight asked for from the start.
type localWaiter struct {
	q     fair.Item[*localWaiter] // in Local.waiters while queued
	meta  *localWaitMeta          // for Inspect: nil unless a note was given or s was inspected
	ready chan struct{}           // closed when granted or failed
	err   error                   // set before ready is closed when the waiter failed
	p     Permit                  // the grant; set before ready is closed
}

// localWaitMeta is what Inspect lists of a waiter beyond its weight,
// apart so that a waiter of a Local never inspected is no larger.
type localWaitMeta struct {
	note  string    // WithNote
	since time.Time // when it queued
}

// failHeavier fails and unqueues every waiter heavier than limit: it can
// never fit. s.mu must be held.
func (s *Local) failHeavier(limit int64) {
	for _, w := range s.queuedWaiters() {
		if w.p.weight > limit {
			s.fail(w, invalid("weight %d exceeds the limit %d of %q", w.p.weight, limit, s.name))
		}
	}
}

// wait waits for w's grant, or for ctx to end.
func (s *Local) wait(ctx context.Context, done <-chan struct{}, w *localWaiter, fa *acquireConfig) (*Permit, error) {
	n := w.p.weight
	flow, level := fa.flowLevel()
	o := s.cfg.observer
	var start time.Time
	if o != nil {
		start = time.Now()
		o.Observe(Event{Kind: EventWait, Name: s.name, Weight: n, Ctx: ctx, Flow: flow, Level: level})
	}
	var err error
	if done == nil { // a ctx that never ends: no select needed
		<-w.ready
		err = w.err
	} else {
		err = s.waitCtx(ctx, done, w)
	}
	if err != nil {
		if o != nil {
			o.Observe(Event{Kind: EventAbandoned, Name: s.name, Weight: n, Wait: time.Since(start), Err: err, Ctx: ctx, Flow: flow, Level: level})
		}
		return nil, err
	}
	if o != nil {
		o.Observe(Event{Kind: EventAcquired, Name: s.name, Weight: n, Wait: time.Since(start), Ctx: ctx, Flow: flow, Level: level})
	}
	return &w.p, nil
}

// waitCtx waits for w's grant or for done, and returns nil if w was
// granted and ctx is still live. On failure no permit is left held.
func (s *Local) waitCtx(ctx context.Context, done <-chan struct{}, w *localWaiter) error {
	select {
	case <-done:
		s.abandon(w)
		return ctxError(ctx, s.name)
	case <-w.ready:
		if w.err != nil {
			return w.err
		}
		select {
		case <-done:
			// ctx ended as the grant arrived: fail, and give the permit back.
			s.abandon(w)
			return ctxError(ctx, s.name)
		default:
			return nil
		}
	}
}

// abandon takes w out of the queue for a ctx that ended, or passes its
// permit on if it was granted meanwhile: a grant after ctx ended is as if
// it were not (go.dev/issue/63615).
func (s *Local) abandon(w *localWaiter) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.freeze()
	select {
	case <-w.ready:
		if w.err == nil {
			s.free += w.p.weight
			s.ungrant(&w.p)
		}
	default:
		s.waiters.Remove(&w.q)
	}
	s.settle()
}

// notifyWaiters grants permits to queued waiters in FIFO order. It stops at
// the first waiter that does not fit, so a large request is never starved by
// smaller ones behind it. s.mu must be held; while anyone is queued the slow
// bit is set, so only holders of s.mu change state.
func (s *Local) notifyWaiters() {
	for it := s.waiters.Next(); it != nil; it = s.waiters.Next() {
		w := it.V
		if w.p.weight > s.limit {
			// The limit was lowered below this request: it can never fit.
			s.fail(w, invalid("weight %d exceeds the limit %d of %q", w.p.weight, s.limit, s.name))
			continue
		}
		if s.free < w.p.weight {
			return
		}
		s.free -= w.p.weight
		s.waiters.Grant(&w.q)
		w.p.permitExt, w.p.token = s.ext(w.q.Level), s.nextToken() // its weight is read unlocked
		s.granted(w)
		close(w.ready)
	}
}

// settle grants what it can to the queue, then clears the slow bit if
// nobody is left queued and s is open. s.mu must be held.
func (s *Local) settle() {
	s.notifyWaiters()
	s.thaw()
}
