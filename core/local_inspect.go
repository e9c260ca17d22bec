package core

import (
	"cmp"
	"context"
	"slices"
	"time"
)

// localHolders records the permits of a Local granted since its first
// Inspect and still held, by token (unique within a Local); nil until
// then, when recording costs nothing. Guarded by Local.mu.
type localHolders map[int64]localHeld

type localHeld struct {
	weight int64
	note   string
}

// add records a grant, if s was inspected. s.mu must be held.
func (h localHolders) add(weight, token int64, note string) {
	if h != nil {
		h[token] = localHeld{weight: weight, note: note}
	}
}

// granted records the grant of w's permit, made under s.mu
// (notifyWaiters).
func (s *Local) granted(w *localWaiter) {
	if w.p.weight != 1 {
		s.heavy.Add(w.p.weight - 1)
	}
	if w.meta != nil {
		s.held.add(w.p.weight, w.p.token, w.meta.note)
	} else {
		s.held.add(w.p.weight, w.p.token, "")
	}
}

// ungrant undoes granted for a grant given back because its waiter's ctx
// ended. s.mu must be held.
func (s *Local) ungrant(p *Permit) {
	if p.weight != 1 {
		s.heavy.Add(1 - p.weight)
	}
	delete(s.held, p.token)
	s.released(p)
}

var _ Inspector = (*Local)(nil)

// Inspect lists the holders, oldest grant first, and the waiters, head
// first, at most limit of each; see Inspector. Every holder and waiter has
// the owner of WithOwner; a Local permit has no ID, grant time or lease,
// and a waiter no ID.
//
// A Local tracks its holders only once it is inspected: the first Inspect
// turns tracking on, for the rest of the Local's life. Holders granted
// before the first Inspect are not listed, only counted in OmittedHolders
// (with those beyond limit) until they are released. Waiters are always
// listed, but one that queued before the first Inspect without a note
// lists no Since. Until then Acquire and Release cost what they cost
// without Inspect (with nobody queued, no lock); afterwards every grant
// and release takes the Local's lock and updates a map, as a
// mutex-based semaphore does, and each queued Acquire reads the clock.
// The snapshot is read under that lock, at one instant (but for a permit
// granted or released during the first Inspect, which may be counted as a
// holder or not).
func (s *Local) Inspect(_ context.Context, limit int) (Snapshot, error) {
	if limit < 1 || limit > MaxInspectLimit {
		return Snapshot{}, invalid("inspect limit %d must be in [1, %d]", limit, MaxInspectLimit)
	}
	snap := Snapshot{At: time.Now()}
	all, holders := s.read(&snap, limit)
	snap.OmittedWaiters = snap.Waiting - int64(len(snap.Waiters))
	slices.SortFunc(all, func(a, b Holder) int { return cmp.Compare(a.Token, b.Token) })
	if len(all) > limit {
		all = all[:limit]
	}
	snap.Holders = all
	snap.OmittedHolders = max(holders-int64(len(all)), 0)
	return snap, nil
}

// read fills snap's counts and first limit waiters under mu, and returns
// every tracked holder and the number of holders, listed or not.
func (s *Local) read(snap *Snapshot, limit int) ([]Holder, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held == nil {
		s.freeze() // and never thawed again: every grant takes mu
		s.held = make(localHolders)
	}
	snap.Limit, snap.InUse, snap.Waiting = s.limit, s.limit-s.free, int64(s.waiters.Len())
	for _, w := range s.queuedWaiters() {
		if len(snap.Waiters) == limit {
			break
		}
		v := Waiter{Position: int64(len(snap.Waiters)), Weight: w.p.weight, Owner: s.cfg.owner}
		if w.meta != nil {
			v.Since, v.Note = w.meta.since, w.meta.note
		}
		v.Flow, v.Level = w.q.Flow(), w.q.Level
		snap.Waiters = append(snap.Waiters, v)
	}
	all := make([]Holder, 0, len(s.held))
	for tok, h := range s.held {
		all = append(all, Holder{Weight: h.weight, Token: tok, Owner: s.cfg.owner, Note: h.note})
	}
	return all, snap.InUse - s.heavy.Load()
}
