package redissem

import (
	"context"
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
// Grants published meanwhile are healed by an immediate heartbeat, the
// releases of the last lease are run again (at most every replayEvery), and
// the permits this process holds are re-asserted (redis_reassert.go), new
// grants in this process waiting meanwhile.
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
		if b.holding() {
			// The primary may have changed: new grants wait for this
			// process's holders to be re-asserted (redis_reassert.go).
			open := b.regate.shut()
			if h := b.hooks; h != nil && h.regate != nil {
				open = h.regate(open)
			}
			defer open()
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
		b.reassertAll()
	}()
}

// testHooks are calls a test makes at chosen points of the backend
// (export_test.go). Production backends have none.
type testHooks struct {
	shardSnapshot func() // tryShardSub, once it read the channels in use
	resubscribed  func() // resubscribe's attempt, once it ended
	// regate is given, once a switch shut the gate, the function that
	// opens it, and returns the one that resubscribe calls instead when
	// the re-assertion ended (a test may open it sooner or later).
	regate func(open func()) func()
	// loopListens: a leased loop with callers is about to make sure it is
	// subscribed before its beat (listenFirst).
	loopListens func()
	// loopStarts: the goroutine of a leased loop starts (leased_start.go).
	loopStarts func()
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

// replayEvery bounds how often the releases are run again: a signal that
// the subscription was on the wrong server can be a false alarm (a grant
// message slower than lateNoteUS), and each replay costs up to maxRedo
// scripts.
const replayEvery = time.Second

// replayReleases runs again, in the background, the releases of the ids in
// the store (redis_redo.go): after a failover the new master may miss the
// last releases made on the old one, whose holders and waiters then stay
// in its keys as phantoms that block grants for up to a lease. It runs
// them once more replayAgain later: a release that reached the old
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

// replayPass runs the releases of the store's live ids again, 8 at a time,
// and forgets the ids but the orphans: a grant to one of them may still
// come.
func (b *redisBackend) replayPass() {
	now := time.Now()
	b.mu.Lock()
	var todo []redo
	var keep redoRing // the old ring's memory goes too: a replay is rare
	b.redo.live(now, func(r *redo) {
		todo = append(todo, *r)
		if r.orphan {
			keep.push(*r, now)
		}
	})
	b.redo = keep
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
			_, _ = r.s.runScript(ctx, scriptRelease, false, r.s.limit, r.id, b.tombTTL(r.ttl))
		}()
	}
}
