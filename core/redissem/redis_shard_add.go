package redissem

import (
	"context"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
)

// Changes to the Cluster shard subscription (redis_shard.go): a channel
// added for a semaphore's first wait, a master's SUNSUBSCRIBE, and the
// sweep of channels no longer in use.

// addShards subscribes s's shard channel, on the current subscription (made
// if there is none), within ctx.
func (b *redisBackend) addShards(ctx context.Context, s *Semaphore) error {
	backoff := 10 * time.Millisecond
	for {
		b.mu.Lock()
		sc := b.pubsub
		done := sc != nil && sc.has[s.notify] != nil
		b.mu.Unlock()
		if done {
			return nil
		}
		if sc == nil {
			return errReplaced // subscribe makes it
		}
		err := b.addShard(ctx, sc, s.notify, s.keys[0])
		switch {
		case err == errReplaced && ctx.Err() == nil:
			continue
		case !isMigration(err):
			return err
		}
		// The slot moves, or moved (a stale slot map, reloading): try again
		// within ctx; out of time, the wait goes on without it.
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return errMigrating
		case <-b.stop:
			t.Stop()
			return errMigrating
		case <-t.C:
		}
		backoff = min(2*backoff, 200*time.Millisecond)
	}
}

// addShard subscribes ch on sc, on the master of ch's slot (a new
// connection if sc has none there), and waits for the confirmation, which
// the receive loop of that connection reports (shardEvent), within ctx.
// Two calls may add the same channel at once (a first wait and catchUp):
// the first confirmation ends both.
func (b *redisBackend) addShard(ctx context.Context, sc *sub, ch, key string) error {
	n, err := b.client.(*redis.ClusterClient).MasterForKey(ctx, ch)
	if err != nil {
		b.reloadSlots()
		return err
	}
	a := n.Options().Addr
	b.mu.Lock()
	if b.closed || b.pubsub != sc {
		b.mu.Unlock()
		return errReplaced
	}
	ps := sc.byAddr[a]
	ready := make(chan error, 1)
	if ps != nil {
		sc.pending[ch] = append(sc.pending[ch], ready)
	}
	b.mu.Unlock()
	if ps == nil {
		ps, got, err := b.shardPubSub(ctx, n, []string{ch})
		if err == nil && len(got) == 0 {
			return errMigrating
		}
		if err == nil {
			if err = isMaster(ctx, n, key); err != nil {
				_ = ps.Close()
			}
		}
		if err != nil {
			b.reloadSlots()
			return err
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.closed || b.pubsub != sc || sc.byAddr[a] != nil {
			_ = ps.Close()
			return errReplaced
		}
		sc.ps = append(sc.ps, ps)
		sc.byAddr[a] = ps
		sc.has[ch] = ps
		b.wg.Add(1)
		go b.receive(sc, ps)
		return nil
	}
	if err := ps.SSubscribe(ctx, ch); err != nil {
		return err
	}
	select {
	case err := <-ready:
		if err != nil {
			return err
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.pubsub != sc || sc.has[ch] == nil {
			return errReplaced
		}
		return nil
	case <-ctx.Done():
		// A MOVED reply (a stale slot map) ends the receive loop's read
		// with an error, which remakes the subscription; ASK or TRYAGAIN
		// (a slot in migration) ends this wait with errMigrating.
		b.mu.Lock()
		if waits := slices.DeleteFunc(sc.pending[ch], func(c chan error) bool { return c == ready }); len(waits) > 0 {
			sc.pending[ch] = waits
		} else {
			delete(sc.pending, ch)
		}
		b.mu.Unlock()
		return ctx.Err()
	}
}

// shardMigrating ends the addShard calls waiting on sc with errMigrating:
// one of their slots is in migration, and the reply does not say which.
func (b *redisBackend) shardMigrating(sc *sub) {
	b.mu.Lock()
	defer b.mu.Unlock()
	sc.wake(errMigrating)
}

// shardEvent handles a subscription message on one of sc's connections: a
// confirmation that addShard waits for, or a master that gave up the slot
// of a channel in use (the slot moved): then the subscription is remade
// on the new slot map.
func (b *redisBackend) shardEvent(sc *sub, ps *redis.PubSub, m *redis.Subscription) {
	b.mu.Lock()
	moved := false
	switch m.Kind {
	case "ssubscribe":
		if waits := sc.pending[m.Channel]; len(waits) > 0 {
			delete(sc.pending, m.Channel)
			sc.has[m.Channel] = ps
			for _, ready := range waits {
				ready <- nil
			}
		}
	case "sunsubscribe":
		if len(sc.pending[m.Channel]) == 0 && b.want[m.Channel] != nil {
			delete(sc.has, m.Channel)
			moved = b.pubsub == sc && !sc.moving
			sc.moving = true
		}
	}
	b.mu.Unlock()
	if !moved {
		return
	}
	// resubscribe does nothing while one is made, or if one was made less
	// than resubEvery ago: ask again until sc is replaced.
	b.reloadSlots()
	b.goBackground(func() {
		t := time.NewTicker(resubEvery)
		defer t.Stop()
		for b.current(sc) {
			b.resubscribe(sc)
			select {
			case <-b.stop:
				return
			case <-t.C:
			}
		}
	})
}
