package redissem

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// The subscription follows the server that runs the scripts.
//
// go-redis makes a subscription once and, after a connection error, makes it
// again on the same node; a Sentinel failover does not close it. So a
// subscription can sit on a demoted master, which never sees the new
// master's PUBLISH, or on a dead Cluster node. The backend makes a fresh one
// (and drops the old) when:
//   - a queued acquire finds that its own channel has no subscriber on the
//     server that ran it (the script's probe; standalone and Sentinel);
//   - a heartbeat delivers a grant that pub/sub did not, or finds one of
//     this process's waiters dropped from the queue;
//   - the subscription's connection fails.
//
// A fresh subscription dials the current master (a Sentinel failover client
// asks the sentinels). On Cluster it is one connection per master, with the
// shard channels of the semaphores in that master's slots, as the reloaded
// slot map says (redis_shard.go); a master that gives up a slot tells its
// subscribers (SUNSUBSCRIBE), which also makes a fresh subscription.

// resubEvery bounds how often the subscription is remade.
const resubEvery = 250 * time.Millisecond

// reloadEvery bounds how often a connection error reloads the Cluster slot
// map.
const reloadEvery = 250 * time.Millisecond

// resubscribe makes a fresh subscription in the background and then closes
// old (nil: whatever subscription is current), unless one was made less
// than resubEvery ago, one is being made, or old is no longer current.
// Grants published meanwhile are healed by an immediate heartbeat, and the
// releases of the last lease are run again (at most every replayEvery).
func (b *redisBackend) resubscribe(old *sub) {
	b.mu.Lock()
	cur := b.pubsub
	if b.closed || cur == nil || old != nil && old != cur || b.resubbing || time.Since(b.lastResub) < resubEvery {
		b.mu.Unlock()
		return
	}
	b.resubbing = true
	b.lastResub = time.Now()
	b.wg.Add(1)
	b.mu.Unlock()
	go func() {
		defer b.wg.Done()
		if h := b.hooks; h != nil && h.resubscribed != nil {
			defer h.resubscribed()
		}
		ctx, cancel := context.WithTimeout(context.Background(), b.cfg.fault.opTimeout)
		defer cancel()
		go func() {
			select {
			case <-b.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		ps, err := b.newPubSub(ctx)
		b.mu.Lock()
		b.resubbing = false
		if err != nil || b.closed || b.pubsub != cur {
			b.mu.Unlock()
			if ps != nil {
				_ = ps.close()
			}
			if err != nil && !b.isClosed() {
				b.report("", unavailable("resubscribe", b.channel, err))
			}
			return
		}
		b.pubsub = ps
		late := ps.start(b)
		cur.abandon()
		b.mu.Unlock()
		b.takeOver(ctx, cur, ps, late)
		b.replayReleases()
	}()
}

// testHooks are calls a test makes at chosen points of the backend
// (export_test.go). Production backends have none.
type testHooks struct {
	shardSnapshot func() // tryShardSub, once it read the channels in use
	resubscribed  func() // resubscribe's attempt, once it ended
}

// current reports whether ps is the subscription in use.
func (b *redisBackend) current(ps *sub) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.pubsub == ps && !b.closed
}

// newPubSub subscribes to this process's channel and waits for Redis to
// confirm it. On Cluster it subscribes every shard channel in use, on the
// masters that serve them (redis_shard.go).
func (b *redisBackend) newPubSub(ctx context.Context) (*sub, error) {
	if b.sharded {
		return b.newShardSub(ctx)
	}
	ps := b.client.Subscribe(ctx, b.channel)
	if _, err := ps.ReceiveTimeout(ctx, b.cfg.fault.opTimeout); err != nil {
		_ = ps.Close()
		return nil, err
	}
	return &sub{ps: []*redis.PubSub{ps}}, nil
}

// reloadSlots asks a Cluster client to reload its slot map, at most once
// per reloadEvery: go-redis reloads it only on MOVED or READONLY replies, or
// every minute, and a refused connection to a dead master gives neither.
func (b *redisBackend) reloadSlots() {
	cc, ok := b.client.(*redis.ClusterClient)
	if !ok {
		return
	}
	b.mu.Lock()
	due := time.Since(b.lastReload) >= reloadEvery
	if due {
		b.lastReload = time.Now()
	}
	b.mu.Unlock()
	if due {
		cc.ReloadState(context.Background())
	}
}

// migrating reports whether err is a Cluster reply that a retry resolves:
// a slot being moved (TRYAGAIN, MOVED, ASK, after go-redis's own
// redirects) or a cluster that is briefly down (CLUSTERDOWN).
func migrating(err error) (bool, bool) {
	var re redis.Error
	if !errors.As(err, &re) {
		return false, false
	}
	msg := err.Error()
	for _, p := range []string{"TRYAGAIN", "MOVED ", "ASK "} {
		if strings.HasPrefix(msg, p) {
			return true, false
		}
	}
	down := strings.HasPrefix(msg, "CLUSTERDOWN")
	return down, down
}

// After a failover the new master may miss the last releases made on the
// old one (asynchronous replication): their holders and waiters stay in its
// keys as phantoms that block grants for up to a lease. So the backend
// remembers the ids it released or took out of the queue within the last
// lease, and when its subscription moves (a new master, or a new node),
// runs their release again: the script is idempotent per id, so on a
// server that saw the release it only answers, and on one that did not it
// frees the phantom.

// released is one id this process released, and when.
type released struct {
	s  *Semaphore
	id string
	at time.Time
	tt time.Duration // lease TTL of the id
}

// replayEvery bounds how often the releases are run again: a signal that
// the subscription was on the wrong server can be a false alarm (a grant
// message slower than lateNoteUS), and each replay costs up to maxReleased
// scripts.
const replayEvery = time.Second

// maxReleased bounds the memory of recent releases.
const maxReleased = 4096

// noteReleased remembers that id was released.
func (b *redisBackend) noteReleased(s *Semaphore, id string, ttl time.Duration) {
	now := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.recent.push(released{s: s, id: id, at: now, tt: ttl}, now)
}

// releaseRing is the memory of recent releases, oldest first: a ring that
// grows by doubling up to maxReleased entries and is then reused, so that
// recording a release costs no allocation (appending to a re-sliced slice
// cost one every few releases, about 170 B per Release).
type releaseRing struct {
	buf  []released // a ring: len(buf) is its capacity
	head int        // the oldest entry
	n    int        // entries in use
}

// push adds r, first dropping the entries whose lease ended by now (from
// the oldest, as the older ones end first unless their TTLs differ) and,
// when full at maxReleased, the oldest one.
func (q *releaseRing) push(r released, now time.Time) {
	for q.n > 0 {
		old := &q.buf[q.head]
		if now.Sub(old.at) <= old.tt && q.n < maxReleased {
			break
		}
		*old = released{} // no longer pins its semaphore
		q.head = (q.head + 1) % len(q.buf)
		q.n--
	}
	if q.n == len(q.buf) {
		q.grow()
	}
	q.buf[(q.head+q.n)%len(q.buf)] = r
	q.n++
}

// grow doubles the ring (at least 16, at most maxReleased entries),
// moving its entries to the front in order.
func (q *releaseRing) grow() {
	buf := make([]released, min(max(2*len(q.buf), 16), maxReleased))
	for i := range q.n {
		buf[i] = q.buf[(q.head+i)%len(q.buf)]
	}
	q.buf, q.head = buf, 0
}

// all calls f on each entry, oldest first.
func (q *releaseRing) all(f func(*released)) {
	for i := range q.n {
		f(&q.buf[(q.head+i)%len(q.buf)])
	}
}

// replayReleases runs again, in the background, the releases of the last
// lease, and once more replayAgain later: a release that reached the old
// master after the first pass (a connection of the pool still open to it)
// was lost too.
func (b *redisBackend) replayReleases() {
	b.mu.Lock()
	if time.Since(b.lastReplay) < replayEvery {
		b.mu.Unlock()
		return
	}
	b.lastReplay = time.Now()
	b.mu.Unlock()
	b.goBackground(func() {
		b.replayPass()
		t := time.NewTimer(replayAgain)
		defer t.Stop()
		select {
		case <-b.stop:
			return
		case <-t.C:
		}
		b.replayPass()
	})
}

// replayAgain is the delay of the second replay pass.
const replayAgain = 300 * time.Millisecond

// replayPass runs the recorded releases of the last lease again, 8 at a
// time, and forgets them.
func (b *redisBackend) replayPass() {
	now := time.Now()
	b.mu.Lock()
	var todo []released
	b.recent.all(func(r *released) {
		if now.Sub(r.at) <= r.tt {
			todo = append(todo, *r)
		}
	})
	b.recent = releaseRing{} // its memory too: a replay is rare
	b.mu.Unlock()
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, r := range todo {
		select {
		case sem <- struct{}{}:
		case <-b.stop:
			return
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			ctx, cancel := context.WithTimeout(context.Background(), b.cfg.fault.opTimeout)
			defer cancel()
			_, _ = r.s.runScript(ctx, scriptRelease, false, r.s.limit, r.id, b.tombTTL(r.tt))
		}()
	}
}
