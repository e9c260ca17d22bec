package redissem

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// The leased mode's hand-off: when a process is starved (its head waiter
// needs more than its whole share), share_take.lua (or share.lua, where
// that script cannot decide) queues it in Redis, and share_give.lua (or
// share.lua) hands it freed units as they come, publishing
// "pid:share*2+c:version" on its channel (the default mode's subscription
// carries it); the process applies the share at once and grants from it.
// c tells it that another process is starved: it then gives back, in the
// release itself, the units it does not use (see release and beat), once
// its turn is over if the queue just served it (leased_turn.go).

// pushRoutes maps a leased process's pid to its *leased, for the notes
// published to it; routed counts the entries, so that the default mode
// pays one atomic load per message when no leased semaphore exists.
var (
	pushRoutes sync.Map
	routed     atomic.Int64
)

// route makes the notes to l reach it, from the start of its loop (which
// registers it in Redis) until the loop ends (unroute).
func (l *leased) route() {
	if _, loaded := pushRoutes.LoadOrStore(l.pid, l); !loaded {
		routed.Add(1)
	}
}

func (l *leased) unroute() {
	if _, ok := pushRoutes.LoadAndDelete(l.pid); ok {
		routed.Add(-1)
	}
}

// leasedPushes applies the notes addressed to leased processes and returns
// the others, for the default mode's waiters.
func leasedPushes(notes []grantNote) []grantNote {
	if routed.Load() == 0 {
		return notes
	}
	out := notes[:0]
	for _, n := range notes {
		if v, ok := pushRoutes.Load(n.id); ok {
			v.(*leased).pushed(n.token>>1, n.token&1 == 1, n.grantUS)
			continue
		}
		out = append(out, n)
	}
	return out
}

// resyncLeased makes every leased process of b that Redis holds beat now,
// after its subscription was down: a note published meanwhile is lost, and
// the beat's reply says what Redis handed it, and whether another process
// is starved. b.mu is not held (a leased process takes it under l.mu).
func (b *redisBackend) resyncLeased() {
	if routed.Load() == 0 {
		return
	}
	pushRoutes.Range(func(_, v any) bool {
		if l := v.(*leased); l.s.b == b {
			l.mu.Lock()
			registered := l.registered && !l.closed
			l.mu.Unlock()
			if registered {
				l.poke()
			}
		}
		return true
	})
}

// pushed applies a share that Redis handed to this process (version ver),
// and whether another process is starved.
func (l *leased) pushed(share int64, contended bool, ver int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || ver < l.ver || !l.registered && ver <= l.leftVer {
		// Stale: a reply or a later note said more, or it was sent to an
		// entry that this process left.
		return
	}
	// Before the reply that registers the process, the note is kept (its
	// version is newer) and applied with that reply.
	// A note of the version applied only tells whether others starve.
	if share > l.share {
		l.cap = max(l.cap, share) // handed to it: its to use
	}
	l.setShareLocked(share, contended)
	l.single = false // the script that sent it recorded whether this process is told
	l.ver = ver
	l.toldAt = time.Now()
	l.pushes++
	l.applyLocked()
	l.checkGiveLocked()
	if contended && l.giveQueued {
		l.poke() // wanted elsewhere: the loop gives it back now
	}
	if !contended && l.demand > l.share && l.share < l.limit {
		// The queue is served: the shares follow the targets again. This
		// process has callers that its share cannot serve at once, and
		// nothing else would make it beat before its heartbeat: its full
		// beat grows its share from free capacity, or says that the
		// shares are to move (hot).
		l.poke()
	}
}

// applyLocked makes the local share what Redis holds for this process,
// capped by its max-min target, and nothing while a give-back is in
// flight or the share is not valid. l.mu is held.
func (l *leased) applyLocked() {
	local := min(l.share, l.cap)
	if l.contended {
		local = l.share // shares move by hand-off, not by target
	}
	l.shrink = l.share > local
	if l.giving || l.giveReq || !l.registered {
		local = 0
	}
	l.loc.Set(l.limit, local)
}

// checkGiveLocked asks the loop to give back the share this process does
// not use (no caller queued here, fewer in use than its share) while
// another process is starved. l.mu is held.
func (l *leased) checkGiveLocked() {
	if !l.contended || l.closed {
		return
	}
	st := l.loc.State()
	if st.WaitN == 0 && st.InUse < l.share && !l.giveReq {
		l.giveReq = true
		if l.demand == 0 && len(l.held) == 0 {
			// Kept unused, and wanted elsewhere: give it back at once
			// next time (single-use).
			l.giveIdle, l.wantedAt = true, time.Now()
		}
		l.poke()
	}
}

// rearm makes t fire once, d from now.
func rearm(t *time.Timer, d time.Duration) {
	if !t.Stop() {
		select {
		case <-t.C:
		default:
		}
	}
	t.Reset(d)
}

// unclaim frees the slot and pokes the loop if a beat is due: the loop
// found the slot held, or a release asked for a give-back meanwhile. It
// reads both after it frees the slot: whoever asked before found the slot
// held, and whoever asks after finds it free (claim, leanNow).
func (l *leased) unclaim() {
	<-l.slot
	l.mu.Lock()
	want := l.beatWanted || l.giveReq
	l.beatWanted = false
	l.mu.Unlock()
	if want {
		l.poke()
	}
}

// leanNow runs a beat's lean script in the caller's goroutine, without a
// hop to the loop, and reports whether it ran it: for a release, the
// give-back of the share not in use (share_give.lua) that the release
// asked for; for an Acquire (take) that the share cannot serve, the ask
// for what its head waiter lacks, from free capacity or by a place in the
// fleet's queue (share_take.lua). What the script cannot decide, the loop
// does (share.lua), so the caller waits for one round trip at most. If a
// beat is in flight, a release's leanNow does nothing: that beat's
// goroutine sees a give-back asked for when it ends and pokes the loop; an
// Acquire's waits for that beat to end (or for its ctx, or Close) and
// then decides by what it said. In an outage the loop alone beats (a
// give-back pokes it). The round trip is bounded by ctx (a release's,
// without its cancellation if it is done already, as the default mode's
// release) and the operation timeout.
func (l *leased) leanNow(ctx context.Context, take bool) bool {
	if !l.s.b.brk.down().IsZero() {
		if !take {
			l.poke()
		}
		return false
	}
	if take {
		// An Acquire waits for a beat in flight, bounded by its ctx, and
		// then decides by what that beat said.
		select {
		case l.slot <- struct{}{}:
		case <-ctx.Done():
			return false
		case <-l.s.b.stop:
			return false
		}
	} else {
		select {
		case l.slot <- struct{}{}:
		default:
			return false
		}
	}
	l.mu.Lock()
	run := l.running && !l.closed
	if take {
		// Else the loop runs share.lua at once.
		run = run && ctx.Err() == nil && !l.giveReq && l.takesLocked(l.needLocked(l.loc.State()))
	} else {
		run = run && l.giveReq
	}
	l.mu.Unlock()
	if run {
		if ctx.Err() != nil {
			ctx = context.WithoutCancel(ctx)
		}
		l.leanDone(l.beat(ctx, true))
	}
	l.unclaim()
	return run
}

// leanDone tells the loop what a lean beat said (next, urgent: see beat).
// The caller holds the slot.
func (l *leased) leanDone(next time.Duration, urgent bool) {
	l.mu.Lock()
	if urgent {
		// The shares are to move faster than the loop beats (hot),
		// or share.lua is to decide: the loop's next beat does.
		l.beatWanted = true
	}
	if next > 0 {
		l.due = time.Now().Add(next)
	}
	// Queued: the loop beats when a lease may end, if its timer fires
	// later than that.
	early := !urgent && next < l.s.b.cfg.leaseTTL/3 && (l.timerAt.IsZero() || l.due.Before(l.timerAt))
	l.mu.Unlock()
	if early {
		l.signal(l.retime)
	}
}
