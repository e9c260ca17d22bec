package core

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"
)

// localHolders records the permits of a Local that are held, for Inspect:
// a map by token under a mutex of its own, so that recording a grant never
// waits for the queue's lock.
type localHolders struct {
	mu sync.Mutex
	m  map[int64]localHeld // by token: unique within a Local
}

type localHeld struct {
	weight int64
	note   string
}

func (h *localHolders) add(p *Permit, note string) {
	h.mu.Lock()
	if h.m == nil {
		h.m = make(map[int64]localHeld)
	}
	h.m[p.token] = localHeld{weight: p.weight, note: note}
	h.mu.Unlock()
}

func (h *localHolders) remove(p *Permit) {
	h.mu.Lock()
	delete(h.m, p.token)
	h.mu.Unlock()
}

var _ Inspector = (*Local)(nil)

// Inspect lists the holders, oldest grant first, and the waiters, head
// first, at most limit of each; see Inspector. Every holder and waiter has
// the owner of WithOwner; a Local permit has no ID, grant time or lease,
// and a waiter no ID. The snapshot is taken without stopping grants: a
// permit granted or released meanwhile may be missing or still listed.
func (s *Local) Inspect(_ context.Context, limit int) (Snapshot, error) {
	if err := CheckInspectLimit(limit); err != nil {
		return Snapshot{}, err
	}
	snap := Snapshot{At: time.Now()}
	s.mu.Lock()
	snap.Limit, snap.InUse, snap.Waiting = s.limit, s.limit-s.freeNow(), int64(s.waiters.n)
	for w := s.waiters.head; w != nil && len(snap.Waiters) < limit; w = w.next {
		snap.Waiters = append(snap.Waiters, Waiter{Position: int64(len(snap.Waiters)), Weight: w.n, Since: w.since, Owner: s.cfg.owner, Note: w.note})
	}
	s.mu.Unlock()
	snap.OmittedWaiters = snap.Waiting - int64(len(snap.Waiters))

	s.held.mu.Lock()
	all := make([]Holder, 0, len(s.held.m))
	for tok, h := range s.held.m {
		all = append(all, Holder{Weight: h.weight, Token: tok, Owner: s.cfg.owner, Note: h.note})
	}
	s.held.mu.Unlock()
	slices.SortFunc(all, func(a, b Holder) int { return cmp.Compare(a.Token, b.Token) })
	if len(all) > limit {
		snap.OmittedHolders = int64(len(all) - limit)
		all = all[:limit]
	}
	snap.Holders = all
	return snap, nil
}
