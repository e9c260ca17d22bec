package redissem

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// The sweep of Cluster shard channels no longer in use (redis_shard.go).
//
// A channel is idle once no wait has needed it for a lease TTL and its
// semaphore has no permit or waiter tracked here. The renewal loop
// (redis_heartbeat.go) sweeps idle channels when the first one is due, at
// most once per lease TTL, and a new subscription sweeps first too. So a
// process that stops using a semaphore (a keyed semaphore's key) drops its
// SSUBSCRIBE within about two lease TTLs of its last use (one to become
// idle, up to one more since the last sweep, plus TTL/3 for the loop to see
// its last permit or waiter go), even if it subscribes nothing new. The set
// of channels is thus bounded by the semaphores waited on within the last
// two lease TTLs or so, and each one pins its *Redis (a keyed entry) only
// that long. Before, the sweep ran only when a new channel was subscribed,
// so a process that went quiet kept every channel of its last burst.

// shardDrop is a shard channel to unsubscribe, on its connection.
type shardDrop struct {
	ps *redis.PubSub
	ch string
}

// sweepShards unsubscribes the idle shard channels, at most once per lease
// TTL. Its caller holds b.subSem (subscribe), which serialises it with the
// SSUBSCRIBE of a channel that is wanted again.
func (b *redisBackend) sweepShards() {
	now := time.Now()
	b.mu.Lock()
	if now.Sub(b.lastSweep) < b.cfg.leaseTTL {
		b.mu.Unlock()
		return
	}
	b.lastSweep = now
	drops := b.idleShards(now)
	b.mu.Unlock()
	b.unsubscribeShards(drops)
}

// sweepIdleShards is the renewal loop's sweep, which shardSweepDue
// scheduled: it takes b.subSem as subscribe does (unless the backend
// closes first), then unsubscribes the idle shard channels.
func (b *redisBackend) sweepIdleShards() {
	select {
	case b.subSem <- struct{}{}:
	case <-b.stop:
		return
	}
	defer func() { <-b.subSem }()
	b.mu.Lock()
	drops := b.idleShards(time.Now())
	b.mu.Unlock()
	b.unsubscribeShards(drops)
}

// shardSweepDue reports whether the loop should sweep now, and then counts
// the sweep as made and lowers *next to the lease TTL (the next sweep, for
// the channels not idle yet); otherwise it lowers *next to the time until
// the first channel is due, if any. b.mu must be held.
func (b *redisBackend) shardSweepDue(now time.Time, next *time.Duration) bool {
	var at time.Time
	for _, w := range b.want {
		if b.sems[w.s] != nil {
			continue // in use: the loop sees it go
		}
		if due := w.last.Add(b.cfg.leaseTTL); at.IsZero() || due.Before(at) {
			at = due
		}
	}
	if at.IsZero() {
		return false
	}
	if rate := b.lastSweep.Add(b.cfg.leaseTTL); rate.After(at) {
		at = rate
	}
	if at.After(now) {
		*next = min(*next, at.Sub(now))
		return false
	}
	b.lastSweep = now
	*next = min(*next, b.cfg.leaseTTL) // for the channels not idle yet
	return true
}

// idleShards forgets the idle shard channels and returns those subscribed.
// A semaphore with a waiter whose acquire is still in flight (not yet
// tracked as queued: a long retry) keeps its channel too. b.mu must be
// held.
func (b *redisBackend) idleShards(now time.Time) []shardDrop {
	sc := b.pubsub
	var drops []shardDrop
	var asking map[*Semaphore]bool
	for ch, w := range b.want {
		if now.Sub(w.last) < b.cfg.leaseTTL || b.sems[w.s] != nil {
			continue
		}
		if asking == nil {
			asking = make(map[*Semaphore]bool)
			for _, wt := range b.waiters {
				asking[wt.s] = true
			}
		}
		if asking[w.s] {
			continue
		}
		delete(b.want, ch)
		if sc != nil && sc.has[ch] != nil {
			drops = append(drops, shardDrop{sc.has[ch], ch})
			delete(sc.has, ch)
		}
	}
	return drops
}

// retrack tracks again the channels that sc subscribed but that are no
// longer in use (b.want): a sweep forgot them after tryShardSub read
// b.want and before sc replaced the subscription (a resubscribe does not
// hold b.subSem, so the sweep ran meanwhile), and unsubscribed them on the
// old subscription only. Untracked, no later sweep would see them, and they
// would stay subscribed until Close. Tracked again as they were (idle), the
// next sweep drops them. It then forgets sc.snap, which pins the
// semaphores. b.mu must be held.
func (b *redisBackend) retrack(sc *sub) {
	for ch := range sc.has {
		if b.want[ch] != nil {
			continue
		}
		w, ok := sc.snap[ch]
		if !ok {
			continue // not read by tryShardSub (cannot be: start runs first)
		}
		b.want[ch] = &w
		b.poke() // the loop schedules its sweep
	}
	sc.snap = nil
}

// unsubscribeShards sends SUNSUBSCRIBE for drops, one per channel (their
// slots differ), all within one operation timeout.
func (b *redisBackend) unsubscribeShards(drops []shardDrop) {
	if len(drops) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.cfg.fault.opTimeout)
	defer cancel()
	for _, d := range drops {
		_ = d.ps.SUnsubscribe(ctx, d.ch)
	}
}
