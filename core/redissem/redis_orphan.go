package redissem

import (
	"context"
	"time"
)

// maxOrphans bounds the memory of abandoned waiter ids (redisBackend.orphans).
const maxOrphans = 4096

// orphan is a waiter id whose background leave gave up: its queue entry may
// still live in Redis (for up to 2/3 of ttl after its last heartbeat), and
// a grant to it would otherwise sit unused until its lease ends.
type orphan struct {
	s     *Semaphore
	ttl   time.Duration
	until time.Time // forgotten after: the entry has expired, and any grant's lease
}

// orphaned remembers that the background clean-up of id gave up, until 2/3
// of ttl (the queue entry's life) and then the lease ttl have passed. At
// most maxOrphans are kept: expired ones are dropped first, and if all are
// live the new one is not kept (its grant then ends with its lease, as
// before).
func (b *redisBackend) orphaned(s *Semaphore, id string, ttl time.Duration) {
	now := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	if b.orphans == nil {
		b.orphans = make(map[string]orphan)
	}
	if len(b.orphans) >= maxOrphans {
		for id, o := range b.orphans {
			if now.After(o.until) {
				delete(b.orphans, id)
			}
		}
		if len(b.orphans) >= maxOrphans {
			return
		}
	}
	b.orphans[id] = orphan{s: s, ttl: ttl, until: now.Add(2*ttl/3 + ttl)}
}

// adoptOrphan reports the orphan that grant note n names, and forgets it.
// b.mu must be held.
func (b *redisBackend) adoptOrphan(n grantNote) (orphan, bool) {
	o, ok := b.orphans[n.id]
	if !ok || n.token <= 0 {
		return orphan{}, false
	}
	delete(b.orphans, n.id)
	return o, !time.Now().After(o.until)
}

// releaseOrphan runs the idempotent release for orphan id, granted after its
// waiter's clean-up gave up, in the background: nobody in this process holds
// it (its Acquire returned an error), so the permit goes to the next waiter
// now rather than when its lease ends. The grant note shows Redis answers
// again; the retries last for the lease, which outlasts a breaker's
// cool-down. If they give up too, the id is remembered again.
func (b *redisBackend) releaseOrphan(id string, o orphan) {
	b.goBackground(func() {
		ctx, cancel := bound(context.Background(), o.ttl)
		defer cancel()
		_, _ = o.s.releaseID(ctx, id, o.ttl, false)
	})
}
