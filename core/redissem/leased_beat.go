package redissem

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core/backend"
)

// beatState is what the holder of the slot knows of this process's share.
type beatState struct {
	registered bool      // Redis gave this process an epoch that it still holds
	epoch      int64     // the epoch of the share, from Redis
	lastOK     time.Time // when the last successful beat was sent
}

// beat reports the demand and applies the share Redis answers; it returns
// how long to sleep, and whether the next beat is urgent: share.lua is to
// decide, the shares are to move (hot), or the beat failed. A beat asked
// for by a give-back (giveReq) grants nothing locally until the reply,
// and keeps only the units in use: the others go back to Redis, which
// hands them to the starved processes (share_give.lua, or share.lua where
// that script cannot decide). A beat for a head waiter that the share
// cannot serve first asks for what it lacks (share_take.lua: a take of
// free capacity, or a place in the fleet's queue). The caller holds the
// slot; ctx bounds the round trip (ended: not a backend failure). With
// leanOnly (run by a release or an Acquire, not by the loop) it runs a
// lean script alone, and leaves to the loop what that script cannot
// decide, returning 0.
func (l *leased) beat(ctx context.Context, leanOnly bool) (time.Duration, bool) {
	p := l.plan()
	var r shareReply
	var err error
	if p.lean != nil {
		r, err = l.runLean(ctx, l.s.b.cfg.leaseTTL/3, p.lean, p.a, p.epoch)
	}
	return l.finish(ctx, p, leanOnly, r, err)
}

// beatPlan is what a beat reports, read under l.mu when it starts (plan),
// and the lean script that it runs first (nil: none).
type beatPlan struct {
	gen   uint64
	give  bool
	keep  int64
	sent  time.Time
	a     shareArgs
	lean  *redis.Script
	epoch int64 // of the entry (0: none, a take registers the process)
}

// plan starts a beat: it reads the demand, counts the beat and chooses
// its lean script. A give-back asked for (giveReq) is taken over by this
// beat, and nothing is granted here until it finishes. The caller holds
// the slot.
func (l *leased) plan() beatPlan {
	st := &l.st
	l.mu.Lock()
	demand := max(l.peak, l.demand)
	l.peak = l.demand
	l.beatGen++
	l.deferred = false
	gen := l.beatGen
	give, skipLean := l.giveReq, l.leanFull
	l.giveReq, l.giving, l.leanFull, l.giveQueued = false, give, false, false
	if give {
		l.applyLocked() // grant nothing here until the reply
	}
	known := l.ver
	ls := l.loc.State()
	inUse, waiting := ls.InUse, ls.WaitN
	demand = max(demand, inUse+ls.WaitW)
	need := l.needLocked(ls)
	take := !give && l.takesLocked(need)
	l.reported, l.reportedNeed = demand, need
	keep := max(inUse, ls.Share)
	idle := l.demand == 0 && inUse == 0 && need == 0
	single := take && l.singleUseLocked(demand, need)
	sent := time.Now()
	l.lastBeat = sent
	l.mu.Unlock()
	p := beatPlan{gen: gen, give: give, keep: keep, sent: sent,
		a: shareArgs{demand: demand, keep: keep, inUse: inUse, waiting: waiting, need: need, known: known,
			leave: give && idle, single: single}}
	if st.registered {
		p.epoch = st.epoch
	}
	switch {
	case skipLean:
	case give && st.registered:
		p.lean = scriptShareGive
	case take:
		p.lean = scriptShareTake
	}
	return p
}

// finish ends the beat that p started, given the reply (or error) of its
// lean script: see beat.
func (l *leased) finish(ctx context.Context, p beatPlan, leanOnly bool, r shareReply, err error) (time.Duration, bool) {
	b := l.s.b
	ttl := b.cfg.leaseTTL
	st := &l.st
	gen, give, keep, sent, a, lean := p.gen, p.give, p.keep, p.sent, p.a, p.lean
	if leanOnly && (lean == nil || err == nil && r.code == 0) {
		// share.lua is to decide: the loop runs it (see leanNow).
		l.mu.Lock()
		l.giving, l.giveReq, l.leanFull = false, give, lean != nil
		l.applyLocked()
		l.mu.Unlock()
		return 0, true // no beat done: a TryAcquire waits for the loop's
	}
	full := err == nil && r.code == 0 // share.lua decides
	if full {
		r, err = l.runWithin(ctx, ttl/3, "beat", a)
	}
	defer l.beaten(gen)
	if err != nil {
		if ctx.Err() == nil {
			b.report(l.s.label, unavailable("renew share", l.s.name, err))
		}
		down := !b.brk.down().IsZero() && time.Since(b.brk.down()) >= b.cfg.fault.outageGrace
		lose := st.registered && time.Since(st.lastOK) >= ttl
		l.mu.Lock()
		if give {
			// The script may have run and handed the units above keep
			// to others: use none of them until a reply says more.
			l.share = min(l.share, keep)
		}
		l.giving = false
		if lose {
			// The lease may have ended in Redis: grant nothing more and
			// tell the holders.
			st.registered = false
			l.registered, l.share, l.turnEnd = false, 0, 0
		}
		l.applyLocked()
		l.mu.Unlock()
		l.setDown(down && !st.registered, err)
		if lose {
			l.loseAll()
		}
		return min(ttl/3, 100*time.Millisecond), true
	}
	if r.code == shareLeft {
		// Idle, it gave its whole share back and left: the next demand
		// registers it anew (the loop stops if none came meanwhile).
		*st = beatState{}
		l.mu.Lock()
		l.leftVer = max(l.leftVer, l.ver, r.ver) // the notes to the entry it left are stale
		l.registered, l.share, l.ver, l.giving, l.contended, l.hot = false, 0, 0, false, false, false
		l.turnEnd, l.single = 0, false
		l.applyLocked()
		again := l.demand > 0
		l.mu.Unlock()
		if again {
			l.poke() // callers came meanwhile: the next beat registers the process
		}
		return ttl / 3, false
	}
	anew := (r.code == shareNew || r.epoch != st.epoch) && st.registered
	if r.code == shareNew || r.epoch != st.epoch {
		if st.registered {
			// Redis no longer had this process's entry (its lease ended,
			// or a failover lost it) and gave a new epoch: the share that
			// covered the permits held was gone.
			l.loseAll()
		}
		l.loc.RaiseTokens(r.epoch << 32)
		st.epoch = r.epoch
	}
	st.registered, st.lastOK = true, sent
	l.mu.Lock()
	l.registered, l.leftVer = true, 0
	if anew {
		l.ver = 0 // registered anew: the versions may have started anew
	}
	if r.ver >= l.ver {
		l.single = lean == scriptShareTake && !full && a.single && r.share >= a.need
		l.setShareLocked(r.share, r.contended)
		l.ver, l.cap = r.ver, r.target
		l.toldAt = time.Now()
		l.free, l.freeAt = r.free, l.toldAt
	}
	l.limit, l.down = r.limit, false
	l.giving = false
	if l.giveReq && !l.contended && (l.demand > 0 || len(l.held) > 0) {
		// Nobody is starved any more, and the share is used here. (The
		// unused share of a process with no caller goes back all the
		// same: an idle give-back, which a release may have queued while
		// this beat was in flight.)
		l.giveReq, l.giveQueued = false, false
	}
	if l.giveReq {
		l.poke() // released meanwhile: give that back too
	}
	l.applyLocked()
	l.checkGiveLocked()
	if head := l.loc.State().Head; head > l.share && head != l.reportedNeed {
		l.poke() // a caller queued meanwhile that the share cannot serve
	}
	switch {
	case full:
		// share.lua decided, and said whether the fleet is hot.
		l.hot = r.hot
	case r.contended || l.queuedLocked():
		// Someone is starved: the shares move by hand-off, not to their
		// targets, as share.lua would say.
		l.hot = false
	}
	// Else a lean script does not know, and keeps what the last full beat
	// said.
	hot, shrink := l.hot || r.hot, l.shrink
	l.mu.Unlock()
	next := ttl / 3
	if hot || shrink {
		next = min(next, l.rebalance)
	}
	if r.soon > 0 {
		// Starved: beat just after the earliest lease that may free
		// capacity ends, in case its process died.
		next = min(next, r.soon+time.Millisecond)
	}
	return next, hot || shrink
}

// takesLocked reports whether a head caller that needs need asks for it by
// share_take.lua (a take of free capacity, or a place in the fleet's
// queue): the share cannot serve it, and Redis does not hold this process
// queued already (queuedLocked). l.mu is held.
func (l *leased) takesLocked(need int64) bool {
	return need > l.share && !l.queuedLocked()
}

// needLocked returns the weight of the head caller, queued here (ls) or,
// if none is, on its way into the queue. l.mu is held.
func (l *leased) needLocked(ls backend.ShareState) int64 {
	need := ls.Head
	if arriving := l.demand - ls.InUse - ls.WaitW; need == 0 && arriving > 0 {
		// One of the callers on their way into the local queue will be its
		// head. Their order is not known: take the lightest (a heavier one
		// asks for itself once queued here), never their sum, which would
		// make a process whose callers come in a burst look starved for
		// many units at once.
		lightest := int64(0)
		for w := range l.arriving {
			if lightest == 0 || w < lightest {
				lightest = w
			}
		}
		if lightest == 0 {
			lightest = 1 // none counted: queued here this instant, the head next time
		}
		need = min(lightest, arriving, ls.Limit)
	}
	return need
}

// beaten wakes the callers waiting for a beat (TryAcquire).
func (l *leased) beaten(gen uint64) {
	l.mu.Lock()
	l.doneGen = gen
	close(l.beatDone)
	l.beatDone = make(chan struct{})
	l.mu.Unlock()
}
