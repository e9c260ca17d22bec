package redissem

import (
	"context"
	"time"
)

// The backend remembers, in one bounded store (redisBackend.redo), the ids
// whose release it may have to run again. The release script is
// idempotent per id, so running it again is safe:
//   - an orphan is a waiter id whose background leave gave up: its queue
//     entry may still live in Redis (for up to 2/3 of its TTL after its last
//     heartbeat), and a grant to it would sit unused until its lease ends.
//     A grant note naming it makes the backend release it (deliver).
//   - a released id was released by this process within its lease. After a
//     failover the new master may have missed the release (asynchronous
//     replication), so when the subscription moves, every id in the store
//     is released again (replayReleases, redis_follow.go); orphans too.

// maxRedo bounds the ids kept in the store.
const maxRedo = 4096

// redo is one id of the store.
type redo struct {
	s      *Semaphore
	id     string
	ttl    time.Duration // the id's lease TTL
	until  time.Time     // forgotten after: any lease of the id has ended
	orphan bool
}

// redoRing is the store, oldest first: a ring that grows by doubling up to
// maxRedo entries and is then reused, so that recording a release costs no
// allocation (appending to a re-sliced slice cost one every few releases,
// about 170 B per Release). It is guarded by b.mu.
type redoRing struct {
	buf     []redo // a ring: len(buf) is its capacity
	head    int    // the oldest entry
	n       int    // entries in use
	orphans int    // entries with orphan set: deliver looks ids up only if some
}

// push adds r, first dropping the entries that ended by now (from the
// oldest, as the older ones end first unless their TTLs differ) and, when
// full at maxRedo, the oldest released id: a live orphan is moved to the
// newest end instead, unless every entry is one, so that a busy process's
// releases do not push out an orphan whose grant has yet to come.
func (q *redoRing) push(r redo, now time.Time) {
	for q.n > 0 {
		old := &q.buf[q.head]
		live := now.Before(old.until)
		if live && q.n < maxRedo {
			break
		}
		keep := *old
		q.forget(old)
		q.head = (q.head + 1) % len(q.buf)
		q.n--
		if live && keep.orphan && q.orphans < q.n {
			q.buf[(q.head+q.n)%len(q.buf)] = keep
			q.n++
			q.orphans++
		}
	}
	if q.n == len(q.buf) {
		q.grow()
	}
	q.buf[(q.head+q.n)%len(q.buf)] = r
	q.n++
	if r.orphan {
		q.orphans++
	}
}

// forget clears r, which no longer pins its semaphore and ends at once.
func (q *redoRing) forget(r *redo) {
	if r.orphan {
		q.orphans--
	}
	*r = redo{}
}

// grow doubles the ring (at least 16, at most maxRedo entries), moving its
// entries to the front in order.
func (q *redoRing) grow() {
	buf := make([]redo, min(max(2*len(q.buf), 16), maxRedo))
	for i := range q.n {
		buf[i] = q.buf[(q.head+i)%len(q.buf)]
	}
	q.buf, q.head = buf, 0
}

// live calls f on each entry that has not ended by now, oldest first.
func (q *redoRing) live(now time.Time, f func(*redo)) {
	for i := range q.n {
		if r := &q.buf[(q.head+i)%len(q.buf)]; now.Before(r.until) {
			f(r)
		}
	}
}

// adoptOrphan returns the live orphan that grant note n names, and forgets
// it: its grant is to be released. Without orphans it costs nothing.
func (q *redoRing) adoptOrphan(n grantNote) (redo, bool) {
	if q.orphans == 0 || n.token <= 0 {
		return redo{}, false
	}
	var found redo
	q.live(time.Now(), func(r *redo) {
		if r.orphan && r.id == n.id && found.s == nil {
			found = *r
			q.forget(r)
		}
	})
	return found, found.s != nil
}

// noteReleased remembers that id, of lease TTL ttl, was released.
func (b *redisBackend) noteReleased(s *Semaphore, id string, ttl time.Duration) {
	now := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.redo.push(redo{s: s, id: id, ttl: ttl, until: now.Add(ttl)}, now)
}

// orphaned remembers that the background clean-up of id gave up, until 2/3
// of ttl (the queue entry's life) and then the lease ttl have passed.
func (b *redisBackend) orphaned(s *Semaphore, id string, ttl time.Duration) {
	now := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.redo.push(redo{s: s, id: id, ttl: ttl, until: now.Add(2*ttl/3 + ttl), orphan: true}, now)
}

// releaseOrphan runs the idempotent release for orphan o, granted after its
// waiter's clean-up gave up, in the background: nobody in this process holds
// it (its Acquire returned an error), so the permit goes to the next waiter
// now rather than when its lease ends. The grant note shows Redis answers
// again; the retries last for the lease, which outlasts a breaker's
// cool-down. If they give up too, the id is remembered again.
func (b *redisBackend) releaseOrphan(o redo) {
	b.goBackground(func() {
		ctx, cancel := bound(context.Background(), o.ttl)
		defer cancel()
		_, _ = o.s.releaseID(ctx, o.id, o.ttl, false)
	})
}
