package redissem

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core/backend"
)

const (
	// shareRebalance is how often every process beats while the shares
	// are to move to their max-min targets (Redis says "hot": nobody is
	// starved, and a process with callers queued is below its target or
	// the leftover units rotate), so that they move within a few of
	// these; at most TTL/3.
	shareRebalance = 25 * time.Millisecond
	// shareRotation is how long the units left over by integer shares stay
	// with the same processes before they move on to the next ones.
	shareRotation = 200 * time.Millisecond
	// shareMinGap spaces the beats that pokes ask for.
	shareMinGap = 2 * time.Millisecond
	// shareIdle is how long (once or twice) a process keeps a share that
	// nothing uses (no holder, no caller) before it gives it back, for
	// another process to take in one round trip.
	shareIdle = 5 * time.Millisecond
)

// loop runs while the process has demand or holds a share: it beats at
// once, then every TTL/3 (every shareRebalance while the fleet is hot, and
// when poked), and stops, leaving its entry in Redis, once the process has
// had no demand and no share for a whole TTL/3. At Close it leaves, marks
// the held permits lost and fails the local waiters with ErrClosed.
func (l *leased) loop() {
	b := l.s.b
	ttl := b.cfg.leaseTTL
	l.mu.Lock()
	first := time.Until(l.due) // begin set it: the caller's take registers
	l.mu.Unlock()
	timer := time.NewTimer(max(first, 0))
	defer timer.Stop()
	unusedT := time.NewTimer(time.Hour)
	unusedT.Stop()
	defer unusedT.Stop()
	idleSince := time.Time{}
	for {
		poked := false
		select {
		case <-b.stop:
			l.shutdown()
			return
		case <-l.unused:
			unusedT.Reset(l.idleTime())
			continue
		case <-l.left:
			if l.stopLeftNow() {
				return
			}
			continue
		case <-l.retime:
			// A caller's lean script queued this process: beat when the
			// earliest lease that may free capacity ends.
			l.mu.Lock()
			d := time.Until(l.due)
			l.mu.Unlock()
			rearm(timer, max(d, 0))
			continue
		case <-unusedT.C:
			if d := l.unusedFor(); d > 0 {
				unusedT.Reset(d)
				continue
			} else if d < 0 {
				continue
			}
		case <-timer.C:
			l.mu.Lock()
			d := time.Until(l.due)
			l.mu.Unlock()
			if d > 0 {
				rearm(timer, d) // a caller's lean script beat meanwhile
				continue
			}
		case <-l.wake:
			poked = true
			l.mu.Lock()
			give, last, full := l.giveReq, l.lastBeat, l.leanFull
			l.mu.Unlock()
			// (A lean script that could not decide asks share.lua at once.)
			if d := time.Until(last.Add(shareMinGap)); d > 0 && !give && !full {
				l.mu.Lock()
				l.deferred = true // a beat is due (beat clears it)
				l.mu.Unlock()
				select {
				case <-b.stop:
					l.shutdown()
					return
				case <-time.After(d):
				}
			}
		}
		if !l.claim(poked) {
			// A caller runs a lean script (leanNow). That beat stands
			// for one that the timer asked for (it sets due, or asks
			// for a beat if share.lua is to decide); a poke is news,
			// and the caller pokes the loop when done.
			rearm(timer, shareRebalance)
			continue
		}
		if l.stopIfLeft() {
			return
		}
		next, _ := l.beat(context.Background(), false)
		if l.stopIfLeft() {
			return
		}
		l.mu.Lock()
		idle := l.demand == 0 && len(l.held) == 0 && l.share == 0 && !l.down
		l.mu.Unlock()
		switch {
		case !idle:
			idleSince = time.Time{}
		case idleSince.IsZero():
			idleSince = time.Now()
		case time.Since(idleSince) >= ttl/3:
			if l.leave() {
				l.st = beatState{} // a loop started later registers anew
				<-l.slot
				return
			}
			idleSince = time.Time{}
			l.st = beatState{}
		}
		l.mu.Lock()
		l.due = time.Now().Add(next) // this beat's word supersedes a caller's older one
		l.mu.Unlock()
		l.unclaim()
		rearm(timer, next)
	}
}

// claim takes the slot for a beat of the loop, and reports whether it
// did. If a caller holds it, a poke (news) asks that caller for a beat
// after its own (beatWanted). unclaim reads beatWanted after it frees the
// slot, so either the caller sees it, or the second try finds the slot
// free.
func (l *leased) claim(poked bool) bool {
	select {
	case l.slot <- struct{}{}:
		return true
	default:
	}
	if !poked {
		return false
	}
	l.mu.Lock()
	l.beatWanted = true
	l.mu.Unlock()
	select {
	case l.slot <- struct{}{}:
		l.mu.Lock()
		l.beatWanted = false
		l.mu.Unlock()
		return true
	default:
		return false
	}
}

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
	b := l.s.b
	ttl := b.cfg.leaseTTL
	st := &l.st
	l.mu.Lock()
	demand := max(l.peak, l.demand)
	l.peak = l.demand
	l.beatGen++
	l.deferred = false
	gen := l.beatGen
	give, skipLean := l.giveReq, l.leanFull
	l.giveReq, l.giving, l.leanFull = false, give, false
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
	sent := time.Now()
	l.lastBeat = sent
	l.mu.Unlock()
	a := shareArgs{demand: demand, keep: keep, inUse: inUse, waiting: waiting, need: need, known: known,
		leave: give && idle}
	var r shareReply
	var err error
	var lean *redis.Script
	epoch := int64(0) // none: a take registers the process
	if st.registered {
		epoch = st.epoch
	}
	switch {
	case skipLean:
	case give && st.registered:
		lean = scriptShareGive
	case take:
		lean = scriptShareTake
	}
	if lean != nil {
		r, err = l.runLean(ctx, ttl/3, lean, a, epoch)
	}
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
		l.turnEnd = 0
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
		l.setShareLocked(r.share, r.contended)
		l.ver, l.cap = r.ver, r.target
		l.toldAt = time.Now()
		l.free, l.freeAt = r.free, l.toldAt
	}
	l.limit, l.down = r.limit, false
	l.giving = false
	if l.giveReq && !l.contended {
		l.giveReq = false // nobody is starved any more
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
