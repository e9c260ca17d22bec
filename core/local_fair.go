package core

import (
	"context"
	"maps"
	"slices"

	"github.com/distsem/distsem/core/internal/fair"
)

// Fair queuing in Local. A Local starts with one FIFO queue (s.waiters).
// The first call with a flow or a level, SetFairness, or WithFairness
// switches it to a fair.Sched for the rest of its life; from then on every
// grant and release takes s.mu, and each permit's permitExt is that of its
// level (s.lvl), so that its release is counted at its level.

// fairMode switches s to fair queuing. s.mu must be held, and s frozen.
func (s *Local) fairMode() {
	if s.fq != nil {
		return
	}
	s.fq = &fair.Sched[*localWaiter]{Reserves: s.cfg.fair.reservesFor(s.limit), Weights: s.cfg.fair.Weights}
	s.lvl = new([MaxLevels]permitExt)
	for i := range s.lvl {
		s.lvl[i].owner = s.plain.owner
	}
	s.fq.Held(0, s.limit-s.free) // the permits held so far count at level 0
	for w := s.waiters.head; w != nil; w = s.waiters.head {
		s.waiters.remove(w)
		w.it = s.fq.Push(w, "", 0, w.p.weight)
	}
}

// reservesFor returns the reserves in force under limit: honoured level by
// level until they add up to the limit.
func (f Fairness) reservesFor(limit int64) []int64 {
	r := slices.Clone(f.Reserves)
	for i := range r {
		r[i] = min(r[i], limit)
		limit -= r[i]
	}
	return r
}

// SetFairness changes the levels' reserves and the flows' weights, from
// the next grant on. It returns an ErrInvalidArgument error naming the
// problem (see Fairness.Check), and then changes nothing. A queued Acquire
// at a level that no longer exists fails with an ErrInvalidArgument error.
func (s *Local) SetFairness(_ context.Context, f Fairness) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := f.Check(s.limit); err != nil {
		return err
	}
	s.freeze()
	s.cfg.fair = Fairness{Reserves: slices.Clone(f.Reserves), Weights: maps.Clone(f.Weights)}
	s.fairMode()
	s.fq.Reserves, s.fq.Weights = s.cfg.fair.reservesFor(s.limit), s.cfg.fair.Weights
	for _, it := range s.fq.Items() {
		if it.Level >= f.Levels() {
			s.fail(it.V, invalid("level %d of %q, which now has %d levels", it.Level, s.name, f.Levels()))
		}
	}
	s.settle()
	return nil
}

// enqueue queues w, of flow and level if a (the call's options) names
// them. s.mu must be held, and s frozen.
func (s *Local) enqueue(w *localWaiter, a *acquireConfig) {
	if s.fq == nil {
		s.waiters.push(w)
		return
	}
	flow, level := "", 0
	if a != nil {
		flow, level = a.flow, a.level
	}
	w.it = s.fq.Push(w, flow, level, w.p.weight)
}

// unqueue takes w, which must be queued, out of the queue.
func (s *Local) unqueue(w *localWaiter) {
	if w.it != nil {
		s.fq.Remove(w.it)
		w.it = nil
		return
	}
	s.waiters.remove(w)
}

// fail unqueues w and fails it with err.
func (s *Local) fail(w *localWaiter, err error) {
	w.err = err
	s.unqueue(w)
	close(w.ready)
}

// next returns the waiter to grant next, or nil if none is queued.
func (s *Local) next() *localWaiter {
	if s.fq == nil {
		return s.waiters.head
	}
	if it := s.fq.Next(); it != nil {
		return it.V
	}
	return nil
}

// queued returns the number of waiters.
func (s *Local) queued() int {
	if s.fq == nil {
		return s.waiters.n
	}
	return s.fq.Len()
}

// queuedWaiters returns the waiters, in the order that Inspect lists.
func (s *Local) queuedWaiters() []*localWaiter {
	var all []*localWaiter
	if s.fq == nil {
		for w := s.waiters.head; w != nil; w = w.next {
			all = append(all, w)
		}
		return all
	}
	for _, it := range s.fq.Items() {
		all = append(all, it.V)
	}
	return all
}

// take unqueues w, granted, and returns the permitExt of its level.
func (s *Local) take(w *localWaiter) *permitExt {
	if w.it == nil {
		s.waiters.remove(w)
		return &s.plain
	}
	x := &s.lvl[w.it.Level]
	s.fq.Grant(w.it)
	w.it = nil
	return x
}

// holdAt counts n permits granted with nobody queued at level, and returns
// their permitExt.
func (s *Local) holdAt(level int, n int64) *permitExt {
	if s.fq == nil {
		return &s.plain
	}
	s.fq.Held(level, n)
	return &s.lvl[level]
}

// released counts p's permits as given back at its level, and returns
// the level.
func (s *Local) released(p *Permit) int {
	if s.fq == nil {
		return 0
	}
	level := 0
	for i := range s.lvl {
		if p.permitExt == &s.lvl[i] {
			level = i
		}
	}
	s.fq.Released(level, p.weight)
	return level
}

// flowLevel returns the flow and level that a names; "" and 0 if a is nil.
func (a *acquireConfig) flowLevel() (string, int) {
	if a == nil {
		return "", 0
	}
	return a.flow, a.level
}

// levelStats fills st's levels from the scheduler. s.mu must be held.
func (s *Local) levelStats(st *Stats) {
	if s.fq == nil {
		return
	}
	for l := range st.Levels {
		st.Levels[l].InUse, st.Levels[l].Waiting = s.fq.Level(l)
	}
	st.Backlogged = s.fq.Backlogged()
}
