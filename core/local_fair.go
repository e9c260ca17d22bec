package core

import (
	"context"
	"maps"
	"slices"

	"github.com/distsem/distsem/core/internal/fair"
)

// Fair queuing in Local. A Local's queue is FIFO until the first call with
// a flow or a level, SetFairness or WithFairness makes it fair
// (fair.Queue) for the rest of its life; from then on every grant and
// release takes s.mu, and each permit's permitExt is that of its level
// (s.lvl), so that its release is counted at its level.

// fairMode makes s's queue fair. s.mu must be held, and s frozen.
func (s *Local) fairMode() {
	if s.lvl != nil {
		return
	}
	s.lvl = new([MaxLevels]permitExt)
	for i := range s.lvl {
		s.lvl[i].owner = s.plain.owner
	}
	s.waiters.Fair(fair.Reserves(s.cfg.fair.Reserves, s.limit), s.cfg.fair.Weights, s.limit-s.free)
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
	s.setFairnessLocked(f)
	return nil
}

// setFairness is SetFairness without the check: for a key's Local made
// again (Keyed.SetFairness checked f then).
func (s *Local) setFairness(f Fairness) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setFairnessLocked(f)
}

// setFairnessLocked applies f. s.mu must be held.
func (s *Local) setFairnessLocked(f Fairness) {
	s.freeze()
	s.cfg.fair = Fairness{Reserves: slices.Clone(f.Reserves), Weights: maps.Clone(f.Weights)}
	s.fairMode()
	s.waiters.Fair(fair.Reserves(s.cfg.fair.Reserves, s.limit), s.cfg.fair.Weights, 0)
	for _, w := range s.queuedWaiters() {
		if w.q.Level >= f.Levels() {
			s.fail(w, invalid("level %d of %q, which now has %d levels", w.q.Level, s.name, f.Levels()))
		}
	}
	s.settle()
}

// fail unqueues w and fails it with err. s.mu must be held.
func (s *Local) fail(w *localWaiter, err error) {
	w.err = err
	s.waiters.Remove(&w.q)
	close(w.ready)
}

// queuedWaiters returns the waiters, in the order that Inspect lists.
func (s *Local) queuedWaiters() []*localWaiter {
	items := s.waiters.Items()
	all := make([]*localWaiter, len(items))
	for i, it := range items {
		all[i] = it.V
	}
	return all
}

// ext returns the permitExt of a permit granted at level.
func (s *Local) ext(level int) *permitExt {
	if s.lvl == nil {
		return &s.plain
	}
	return &s.lvl[level]
}

// released counts p's permits as given back at its level, and returns
// the level. s.mu must be held.
func (s *Local) released(p *Permit) int {
	if s.lvl == nil {
		return 0
	}
	level := 0
	for i := range s.lvl {
		if p.permitExt == &s.lvl[i] {
			level = i
		}
	}
	s.waiters.Released(level, p.weight)
	return level
}

// flowLevel returns the flow and level that a names; "" and 0 if a is nil.
func (a *acquireConfig) flowLevel() (string, int) {
	if a == nil {
		return "", 0
	}
	return a.flow, a.level
}
