package redissem

import (
	"context"
	"sync/atomic"
	"time"
)

// heartbeatBatch bounds the ids sent in one heartbeat script.
const heartbeatBatch = 512

// lateNoteUS is the age (µs) of a grant that a heartbeat reports after
// which its pub/sub message counts as lost.
const lateNoteUS = 100_000

// beatParallel bounds the heartbeats in flight at once.
const beatParallel = 16

// idleSweep is how often the loop wakes, at most, only to drop the
// semaphores that nothing uses any more: a process that uses thousands of
// semaphores in turn would otherwise wake (and scan them all) as often as
// one of them turns idle.
const idleSweep = time.Second

// loop is the one background goroutine of a backend. It wakes for the
// earliest of: a semaphore's next heartbeat (every TTL/3 of its shortest
// lease), or the earliest lease end of a semaphore this process waits on
// (the safety net that reaps the leases of dead processes and heals a lost
// notification). It never polls faster than that.
func (b *redisBackend) loop() {
	defer b.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		timer.Reset(b.beat())
		select {
		case <-b.stop:
			return
		case <-timer.C:
		case <-b.wake:
		}
	}
}

type beatJob struct {
	s       *Semaphore
	held    []*holder
	waiting []*redisWaiter
}

// beat runs the heartbeats that are due and returns how long to sleep.
func (b *redisBackend) beat() time.Duration {
	now := time.Now()
	var jobs []beatJob
	b.mu.Lock()
	for s, t := range b.sems {
		if t.idle() {
			// Kept until its next beat is due, so a semaphore acquired
			// and released in turn does not make its state anew (and
			// wake this loop) each time; a wake after that drops it
			// (one comes every idleSweep at least).
			if !t.beating && !now.Before(t.nextBeat) {
				delete(b.sems, s)
			}
			continue
		}
		reap := t.waiting.n > 0 && !t.reapAt.IsZero() && !now.Before(t.reapAt)
		if t.beating || now.Before(t.nextBeat) && !reap {
			continue
		}
		j := beatJob{s: s}
		ttl := time.Duration(1<<63 - 1)
		for p := range t.held {
			j.held = append(j.held, p)
			ttl = min(ttl, time.Duration(p.ttl)*time.Millisecond)
		}
		j.waiting = make([]*redisWaiter, 0, t.waiting.n)
		for w := t.waiting.head; w != nil; w = w.next {
			j.waiting = append(j.waiting, w)
			ttl = min(ttl, w.ttl)
		}
		t.nextBeat = now.Add(ttl / 3)
		t.reapAt = time.Time{}
		t.beating = true
		jobs = append(jobs, j)
		b.wg.Add(1)
	}
	b.mu.Unlock()

	// Each semaphore's heartbeat runs on its own (at most beatParallel at
	// once), so a slow node delays only the semaphores it serves; the loop
	// goes on scheduling, and a heartbeat that ends wakes it.
	for _, j := range jobs {
		go func() {
			defer b.wg.Done()
			b.beatSem <- struct{}{}
			b.heartbeat(j)
			<-b.beatSem
			b.mu.Lock()
			if t := b.sems[j.s]; t != nil {
				t.beating = false
			}
			b.mu.Unlock()
			b.poke()
		}()
	}

	next := time.Hour
	now = time.Now()
	down := b.brk.down()
	outage := !down.IsZero() && now.Sub(down) >= b.cfg.fault.outageGrace
	b.mu.Lock()
	if outage {
		b.failWaiters()
	} else if !down.IsZero() {
		next = down.Add(b.cfg.fault.outageGrace).Sub(now)
	}
	idle := false
	for _, t := range b.sems {
		if t.idle() && !t.beating {
			idle = true // dropped by a later wake, with the others
			continue
		}
		next = min(next, t.nextBeat.Sub(now))
		if t.waiting.n > 0 && !t.reapAt.IsZero() {
			next = min(next, t.reapAt.Sub(now))
		}
	}
	if idle {
		next = min(next, idleSweep)
	}
	sweep := b.sharded && b.shardSweepDue(now, &next)
	next = max(next, time.Millisecond)
	b.loopNext = now.Add(next)
	b.mu.Unlock()
	if sweep {
		b.goBackground(b.sweepIdleShards)
	}
	return next
}

// heartbeat renews j's leases and keeps its waiters queued, in batches.
func (b *redisBackend) heartbeat(j beatJob) {
	for len(j.held) > 0 || len(j.waiting) > 0 {
		nh := min(len(j.held), heartbeatBatch)
		nw := min(len(j.waiting), heartbeatBatch-nh)
		b.heartbeatOnce(j.s, j.held[:nh], j.waiting[:nw])
		j.held, j.waiting = j.held[nh:], j.waiting[nw:]
	}
}

func (b *redisBackend) heartbeatOnce(s *Semaphore, held []*holder, waiting []*redisWaiter) {
	// The owner record lasts twice the longest lease or waiter TTL here.
	var keep time.Duration
	args := make([]any, 3, 3+2*len(held)+len(waiting))
	for _, p := range held {
		ttl := atomic.LoadInt64(&p.ttl) // SetLeaseTTL may change it
		args = append(args, p.id, ttl)
		keep = max(keep, 2*time.Duration(ttl)*time.Millisecond)
	}
	for _, w := range waiting {
		args = append(args, w.id)
		keep = max(keep, 2*w.ttl)
	}
	args[0], args[1], args[2] = len(held), b.cfg.owner, keep.Milliseconds()
	sent := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), b.cfg.leaseTTL/3)
	r, err := s.runScript(ctx, scriptHeartbeat, false, s.limit, args...)
	cancel()
	if err == nil && b.cfg.owner != "" {
		s.ownerStored(sent, keep)
	}
	if err == nil && len(r.lost) > 0 {
		r.lost = s.reassertLost(held, r.lost)
	}

	lost := make(map[string]bool, len(r.lost))
	for _, id := range r.lost {
		lost[id] = true
	}
	now := time.Now()
	var gone []*holder
	b.mu.Lock()
	t := b.sems[s]
	if t == nil { // closed meanwhile
		b.mu.Unlock()
		return
	}
	for _, p := range held {
		end, ok := t.held[p]
		switch {
		case !ok:
			continue // released meanwhile
		case err == nil && !lost[p.id]:
			t.held[p] = sent.Add(time.Duration(p.ttl) * time.Millisecond)
			p.endUS = r.nowUS + p.ttl*1000
		case err == nil || now.After(end):
			delete(t.held, p)
			gone = append(gone, p)
		}
	}
	if err == nil && len(waiting) > 0 && r.value >= 0 {
		at := now.Add(time.Duration(r.value+1) * time.Millisecond)
		if t.reapAt.IsZero() || at.Before(t.reapAt) {
			t.reapAt = at
		}
	}
	b.mu.Unlock()

	if err != nil {
		b.report(s.label, unavailable("heartbeat", s.name, err))
	}
	// A grant older than this script (by more than a message in flight
	// takes), or a waiter dropped from the queue: pub/sub did not deliver,
	// so the subscription may be on the wrong node.
	for _, n := range r.notes {
		if n.token == noteEvicted || n.token > 0 && n.grantUS < r.nowUS-lateNoteUS {
			b.resubscribe(nil)
			break
		}
	}
	lose(gone, nil)
}

// failWaiters ends every queued wait of this process with the failure
// policy: the backend has been unreachable for the outage grace. b.mu must
// be held.
func (b *redisBackend) failWaiters() {
	for _, t := range b.sems {
		for t.waiting.head != nil {
			if w := t.waiting.head; b.dropWaiter(w) {
				w.ch <- grantNote{id: w.id, token: noteOutage}
			}
		}
	}
}
