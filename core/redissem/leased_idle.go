package redissem

import (
	"context"
	"time"
)

// An idle process (no caller, nothing held) gives its share back once it
// has gone unused for shareIdle, and leaves: by that give-back when it
// held a share, else after TTL/3 without demand. Its loop then stops.
// When the share went back so, when another process wanted it while it
// was kept unused, and on the first use of the semaphore in this process
// (nothing says yet that it is used often), the next release that leaves
// it unused gives it back at once (giveIdle: queued, see leased_batch.go,
// unless another process is starved; the take is single-use, see
// leased_single.go), until a caller comes within shareIdle of such a
// give-back, and more than shareWanted after another process last wanted
// it: then the share waits for shareIdle again. So a semaphore used once,
// or seldom, or whose units move between processes, costs one round trip
// per use (its take, which carries the give-back of an earlier use), and
// no wake-up of its loop to time an unused share.

// stopIfLeft ends the loop, freeing the slot that it holds, if the
// process is idle and has no entry in Redis (it left by its give-back, or
// never registered): there is nothing to renew, and the next demand starts
// a loop anew (begin).
func (l *leased) stopIfLeft() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.leftLocked() {
		return false
	}
	l.endLoopLocked()
	<-l.slot
	return true
}

// leftLocked reports whether the process is idle and has no entry in
// Redis. l.mu is held, and the slot.
func (l *leased) leftLocked() bool {
	return !l.st.registered && !l.closed && !l.down && l.demand == 0 && len(l.held) == 0 && l.share == 0
}

// endLoopLocked marks the loop as ended: the next demand begins one anew.
// l.mu is held.
func (l *leased) endLoopLocked() {
	l.unroute() // before begin can route a new loop
	l.running = false
	l.reported, l.reportedNeed = 0, 0 // the next demand is news
}

// unusedFor reports, when the share has been unused since a release, how
// much longer to wait before giving it back (> 0: it became unused again
// since the last look, so between idle and twice that in all), or
// that the time has come (0: a give-back is asked for); < 0 if it is in
// use again.
func (l *leased) unusedFor() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.demand > 0 || len(l.held) > 0 {
		l.unusedArmed, l.giveIdle = false, false // used again: keep it next time too
		return -1
	}
	if l.share == 0 || l.giveReq || l.closed {
		l.unusedArmed = false
		return -1
	}
	if l.freeSeq != l.freeSeen {
		l.freeSeen, l.giveIdle = l.freeSeq, false // used since the last look: look again later
		return l.idle
	}
	l.unusedArmed, l.giveIdle = false, true
	l.giveReq = true
	l.applyLocked()
	return 0
}

// stopLeftNow is the loop's side of stopLeft: it stops the loop as
// stopIfLeft does, unless a caller holds the slot (that caller's lean
// script then decides, and pokes the loop if it must).
func (l *leased) stopLeftNow() bool {
	select {
	case l.slot <- struct{}{}:
	default:
		return false
	}
	if l.stopIfLeft() {
		return true
	}
	<-l.slot
	return false
}

// idleTime is how long an unused share waits before it goes back:
// shareIdle, longer in tests.
func (l *leased) idleTime() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.idle
}

// stopLeft, after a release's give-back, tells the loop to stop if that
// give-back left (the process is idle and has no entry): see stopIfLeft.
func (l *leased) stopLeft() {
	l.mu.Lock()
	left := !l.registered && l.demand == 0 && len(l.held) == 0
	l.mu.Unlock()
	if left && !l.stopUnstarted() {
		select {
		case l.left <- struct{}{}:
		default:
		}
	}
}

// leave gives the (empty) share's entry back and stops the loop, unless
// demand came meanwhile; it reports whether the loop stopped.
func (l *leased) leave() bool {
	ctx, cancel := context.WithTimeout(context.Background(), l.s.b.cfg.fault.opTimeout)
	_, err := l.run(ctx, "leave", 0)
	cancel()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil || l.demand > 0 || len(l.held) > 0 {
		return false
	}
	l.endLoopLocked()
	return true
}
