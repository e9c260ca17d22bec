package redissem

import (
	"context"
	"time"
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
	// shareWanted is how long after another process wanted a share kept
	// unused here the shares of this semaphore go back at once when
	// unused, rather than being kept for shareIdle (leased_single.go).
	shareWanted = 100 * time.Millisecond
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
	// arm sets the timer to fire in d, or when due comes if that is
	// sooner, and records when (timerAt: a caller that moves due earlier
	// pokes the loop by retime only if the timer fires later).
	arm := func(d time.Duration) {
		l.mu.Lock()
		if u := time.Until(l.due); u > 0 && u < d {
			d = u
		}
		l.timerAt = time.Now().Add(d)
		l.mu.Unlock()
		rearm(timer, d)
	}
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
			arm(max(d, 0))
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
			l.timerAt = time.Time{} // fired: a due set now pokes the loop
			d := time.Until(l.due)
			l.mu.Unlock()
			if d > 0 {
				arm(d) // a caller's lean script beat meanwhile
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
		l.listenFirst()
		if !l.claim(poked) {
			// A caller runs a lean script (leanNow). That beat stands
			// for one that the timer asked for (it sets due, or asks
			// for a beat if share.lua is to decide); a poke is news,
			// and the caller pokes the loop when done.
			arm(shareRebalance)
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
		arm(next)
	}
}

// listenFirst subscribes the process to the hand-offs published to it
// before a beat can queue it: its callers listen first (wait), but the
// loop's first beat may come before any of them is subscribed, and a note
// sent meanwhile would be lost until a heartbeat. It does nothing without
// callers (listen does nothing once subscribed); a subscription that fails
// is left to the beats, which apply what Redis handed to the process.
func (l *leased) listenFirst() {
	l.mu.Lock()
	want := l.demand > 0
	l.mu.Unlock()
	if !want {
		return
	}
	b := l.s.b
	if h := b.hooks; h != nil && h.loopListens != nil {
		h.loopListens()
	}
	_ = b.listen(context.Background(), l.s)
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
