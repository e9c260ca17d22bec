package redissem

import (
	"context"
	"fmt"
	"time"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/backend"
)

// hold wraps the local permit in (fresh: its demand is not counted yet).
func (l *leased) hold(ctx context.Context, inner *core.Permit, fresh bool) (*core.Permit, error) {
	p := &leasedPermit{l: l, inner: inner, weight: inner.Weight(), lost: make(chan struct{}), ctx: ctx}
	p.p = backend.NewPermit(p, backend.Grant{Weight: p.weight, Token: inner.Token(), Lost: p.lost})
	l.mu.Lock()
	if l.closed {
		if !fresh {
			l.demand -= p.weight
		}
		l.mu.Unlock()
		_ = inner.Release(ctx)
		return nil, core.ErrClosed
	}
	if fresh {
		l.demand += p.weight
		l.peak = max(l.peak, l.demand)
	}
	l.held[p] = false
	l.mu.Unlock()
	return p.p, nil
}

// leasedPermit is this process's side of a permit granted from its share.
type leasedPermit struct {
	l      *leased
	p      *core.Permit // the permit handed out, made around it
	inner  *core.Permit // the share's own permit
	weight int64
	lost   chan struct{}
	ctx    context.Context // the acquiring call's, for EventLost (reportLost)
}

func (p *leasedPermit) ReleasePermit(ctx context.Context, _ *core.Permit) error {
	return p.l.release(ctx, p)
}

// release gives p back to the local share at in-process cost. When Redis
// holds more share for this process than it now needs, the loop is poked
// to give the difference back at once. While another process is starved,
// the freed units go to the next caller queued here only during this
// process's turn (leased_turn.go); otherwise they are not granted here:
// the release itself gives them back to Redis (one script, in the
// caller's goroutine: leanNow), which hands them to the process that has
// waited longest, this one included. A release that leaves the share
// unused gives it back too, and the process leaves, when the share went
// back unused after its last idle time, when another process wanted it
// lately, on the semaphore's first use here (see leased_idle.go), or when
// it came by a single-use take (see leased_single.go); while nobody is
// starved that give-back is queued (leased_batch.go), and the release
// returns without a round trip.
func (l *leased) release(ctx context.Context, p *leasedPermit) error {
	l.mu.Lock()
	lost, ok := l.held[p]
	delete(l.held, p)
	l.demand -= p.weight
	unused := l.demand == 0 && len(l.held) == 0 && l.share > 0
	if l.single && !unused {
		l.unsingleLocked() // another caller here uses the share
	}
	giveBack := l.giveIdle || l.single // an unused share goes back at once
	give := l.registered && !l.closed && !lost && ok &&
		(l.contended && !l.keepForTurnLocked(p.weight) || unused && giveBack)
	if give && !l.giveReq {
		l.giveReq = true
		l.applyLocked()
	}
	idleGive := unused && give && giveBack && !l.contended && l.s.b.brk.down().IsZero()
	l.giveQueued = idleGive
	switch {
	case unused && give && giveBack:
		l.gaveAt = time.Now()
	case unused:
		// Unused from now: given back unless used again soon (loop).
		l.freeSeq++
		if !l.unusedArmed {
			l.unusedArmed = true
			l.signal(l.unused)
		}
	}
	shrink := l.shrink
	l.mu.Unlock()
	_ = p.inner.Release(ctx)
	switch {
	case idleGive && l.s.b.deferGive(l):
	case give:
		l.mu.Lock()
		l.giveQueued = false
		l.mu.Unlock()
		l.leanNow(ctx, false)
		l.stopLeft()
	case shrink:
		l.poke()
	}
	if lost || !ok {
		return fmt.Errorf("%w: %q token %d (its share was lost)", core.ErrNotHeld, l.s.name, p.p.Token())
	}
	return nil
}
