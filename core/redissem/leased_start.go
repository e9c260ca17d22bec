package redissem

import (
	"sync"
	"time"
)

// The loop's goroutine starts when it has something to do. Most uses of a
// semaphore whose units move between processes are a take and a give-back
// that leaves (leased_single.go): the loop would start for the use and
// stop at the give-back without a beat of its own. So begin only arms a
// timer for the loop's first beat (startLater); the loop's goroutine
// starts when that timer fires, or at once when something is sent to the
// loop (poke, an unused share, an earlier due). A give-back that leaves
// before then ends the loop that never started (stopUnstarted), and Close
// shuts down the loops that never started as their goroutines would
// (closeUnstarted).

// loopStart is the timer of a loop whose goroutine has not started.
type loopStart struct {
	mu sync.Mutex
	t  *time.Timer // nil once the goroutine started, or the loop ended
}

// startLater marks the loop as begun and arms its start in d. It reports
// false if the client is closed. l.mu is held.
func (l *leased) startLater(d time.Duration) bool {
	b := l.s.b
	l.start.mu.Lock()
	defer l.start.mu.Unlock()
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return false
	}
	if b.unstarted == nil {
		b.unstarted = make(map[*leased]struct{})
	}
	b.unstarted[l] = struct{}{}
	b.mu.Unlock()
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		l.start.mu.Lock()
		defer l.start.mu.Unlock()
		if l.start.t == t { // not started or ended meanwhile
			l.startLocked()
		}
	})
	l.start.t = t
	return true
}

// startNow starts the loop's goroutine if the loop has begun and it has
// not started. Safe with or without l.mu held (not with b.mu).
func (l *leased) startNow() {
	l.start.mu.Lock()
	defer l.start.mu.Unlock()
	if l.start.t != nil {
		l.startLocked()
	}
}

// startLocked starts the goroutine of a loop that has begun; l.start.mu is
// held and l.start.t is set. Once the client is closed it leaves the loop
// to Close.
func (l *leased) startLocked() {
	b := l.s.b
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.wg.Add(1)
	b.mu.Unlock()
	l.endUnstartedLocked()
	if h := b.hooks; h != nil && h.loopStarts != nil {
		h.loopStarts()
	}
	go func() {
		defer b.wg.Done()
		l.loop()
	}()
}

// endUnstartedLocked ends a loop whose goroutine has not started and
// reports whether it did. l.start.mu is held.
func (l *leased) endUnstartedLocked() bool {
	if l.start.t == nil {
		return false
	}
	l.start.t.Stop()
	l.start.t = nil
	b := l.s.b
	b.mu.Lock()
	delete(b.unstarted, l)
	b.mu.Unlock()
	return true
}

// stopUnstarted, after a release's give-back left, ends the loop if its
// goroutine has not started and the process is idle with no entry (as
// stopIfLeft), and reports whether it did. A caller holding the slot
// decides instead: it pokes the loop if it must, and the timer starts the
// loop otherwise.
func (l *leased) stopUnstarted() bool {
	select {
	case l.slot <- struct{}{}:
	default:
		return false
	}
	defer func() { <-l.slot }()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.leftLocked() {
		return false
	}
	l.start.mu.Lock()
	ended := l.endUnstartedLocked()
	l.start.mu.Unlock()
	if ended {
		l.endLoopLocked()
	}
	return ended
}

// closeUnstarted shuts down, at Close, the loops whose goroutines never
// started, as those goroutines would have (shutdown), and waits for them.
// b.closed is set: no loop begins or starts now.
func (b *redisBackend) closeUnstarted() {
	b.mu.Lock()
	ls := b.unstarted
	b.unstarted = nil
	b.mu.Unlock()
	var wg sync.WaitGroup
	for l := range ls {
		l.start.mu.Lock()
		ended := l.endUnstartedLocked()
		l.start.mu.Unlock()
		if ended {
			wg.Go(l.shutdown)
		}
	}
	wg.Wait()
}
