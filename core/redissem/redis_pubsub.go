package redissem

import (
	"context"
	"time"

	"github.com/distsem/distsem/core"

	"github.com/redis/go-redis/v9"
)

// listen subscribes to this process's channel once, before the first wait
// (on Cluster, to s's shard channel before the first wait on s), so that no
// grant can be published before anyone listens. It returns by
// ctx's end whatever Redis does: the subscription is made in the
// background, bounded by the operation timeout, and kept if it succeeds
// after the caller gave up. The caller waits for it at most the operation
// timeout (also when the client does not honour ctx deadlines, where a
// dial to a server that never answers lasts the client's DialTimeout);
// the error then wraps context.DeadlineExceeded, or the refused dial.
func (b *redisBackend) listen(ctx context.Context, s *Semaphore) error {
	if ok, err := b.subscribed(s); ok || err != nil {
		return err
	}
	select {
	case b.subSem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	if ok, err := b.subscribed(s); ok || err != nil {
		<-b.subSem
		return err
	}
	if !b.brk.allow(time.Now()) {
		<-b.subSem
		return errBreakerOpen
	}
	done := make(chan error, 1)
	start := time.Now()
	if !b.goBackground(func() { defer func() { <-b.subSem }(); done <- b.subscribe(ctx, s) }) {
		<-b.subSem
		return core.ErrClosed
	}
	t := time.NewTimer(b.cfg.fault.opTimeout)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return b.dials.explain(ctx, start, context.DeadlineExceeded)
	}
}

func (b *redisBackend) subscribe(ctx context.Context, s *Semaphore) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.cfg.fault.opTimeout)
	defer cancel()
	if b.sharded {
		b.sweepShards()
		err := b.addShards(ctx, s)
		if err == errReplaced && ctx.Err() != nil {
			// Replaced meanwhile, and out of time: the next wait adds the
			// channel to whatever subscription is current then.
			return ctx.Err()
		}
		if err != errReplaced {
			o := outcomeOK
			if err != nil && err != errMigrating {
				o = outcomeFailed
			}
			b.brk.record(o, time.Now())
			if err == errMigrating {
				return nil // the wait goes on without it (errMigrating)
			}
			return err
		}
	}
	ps, err := b.newPubSub(ctx)
	if err != nil {
		b.brk.record(outcomeFailed, time.Now())
		return err
	}
	b.brk.record(outcomeOK, time.Now())
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		_ = ps.close()
		return core.ErrClosed
	}
	// Another subscription may have been made meanwhile: ps, made last,
	// has every channel in use, and the old one goes as resubscribe drops
	// it (never left open), with a resync for what it may have missed.
	old := b.pubsub
	b.pubsub = ps
	b.lastResub = time.Now()
	late := ps.start(b)
	if old != nil {
		old.abandon()
	}
	b.mu.Unlock()
	b.takeOver(ctx, old, ps, late)
	return nil
}

// takeOver completes ps's start (see start) in place of old, which is nil
// or was abandoned: it closes old, adds to ps the shard channels it lacks
// (late), and, if ps replaced old, resyncs the waiters, so that a grant
// published on old meanwhile still reaches its waiter. b.mu must not be
// held.
func (b *redisBackend) takeOver(ctx context.Context, old, ps *sub, late []*Semaphore) {
	if old != nil {
		_ = old.close()
	}
	b.catchUp(ctx, ps, late)
	if old != nil {
		b.resync()
	}
}

// goBackground runs f in a goroutine that Close waits for, unless the
// backend is closed; it reports whether it did.
func (b *redisBackend) goBackground(f func()) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		f()
	}()
	return true
}

func (b *redisBackend) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

// subscribed reports whether the subscription is up (on Cluster, with s's
// shard channel, which it marks as in use), or ErrClosed.
func (b *redisBackend) subscribed(s *Semaphore) (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false, core.ErrClosed
	}
	if b.sharded {
		b.wantShard(s)
		return b.pubsub != nil && b.pubsub.has[s.notify] != nil, nil
	}
	return b.pubsub != nil, nil
}

// receive delivers the grants published on ps. It reads the subscription
// directly (no forwarding goroutine: one fewer wake-up per hand-off), and
// returns once ps is replaced or the backend closes. After a connection
// error the backend makes a fresh subscription (on Cluster, on another
// node), and go-redis resubscribes ps on its next read meanwhile; grants
// published meanwhile are healed by an immediate heartbeat. On Cluster, ps
// is one of sc's connections (one per master).
func (b *redisBackend) receive(sc *sub, ps *redis.PubSub) {
	defer b.wg.Done()
	ctx := context.Background()
	backoff := 10 * time.Millisecond
	for {
		m, err := ps.Receive(ctx)
		if b.sharded && clusterReplyOf(err) == replyMigrating {
			b.shardMigrating(sc) // a reply to addShard's SSUBSCRIBE
			continue
		}
		if err != nil {
			if !b.current(sc) {
				return // replaced, or closed
			}
			b.report("", unavailable("receive grants", b.channel, err))
			b.reloadSlots()
			b.resubscribe(sc)
			select {
			case <-b.stop:
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, time.Second)
			b.resync()
			continue
		}
		msg, ok := m.(*redis.Message)
		if !ok {
			if c, ok := m.(*redis.Subscription); ok && b.sharded {
				b.shardEvent(sc, ps, c)
			}
			continue
		}
		backoff = 10 * time.Millisecond
		if msg.Payload == "" {
			continue // an acquire's probe that this subscription hears
		}
		notes, err := parseNotes(msg.Payload)
		if err != nil {
			b.report("", err)
		}
		b.deliver(notes)
	}
}

// resync makes the loop run every heartbeat now, which reports the grants
// of this process's waiters that a lost message did not, and every leased
// process of the backend beat now (resyncLeased).
func (b *redisBackend) resync() {
	b.mu.Lock()
	for _, t := range b.sems {
		t.nextBeat = time.Time{}
	}
	b.poke()
	b.mu.Unlock()
	b.resyncLeased()
}

// resyncSem makes the loop run s's heartbeat now if this process has
// waiters on s: a lost script reply may have carried their grants.
func (b *redisBackend) resyncSem(s *Semaphore) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t := b.sems[s]; t != nil && t.waiting.n > 0 {
		t.nextBeat = time.Time{}
		b.poke()
	}
}
