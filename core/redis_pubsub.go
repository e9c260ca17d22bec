package core

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// listen subscribes to this process's channel once, before the first wait,
// so that no grant can be published before anyone listens. It returns by
// ctx's end whatever Redis does: the subscription is made in the
// background, bounded by the operation timeout, and kept if it succeeds
// after the caller gave up.
func (b *redisBackend) listen(ctx context.Context) error {
	if ok, err := b.subscribed(); ok || err != nil {
		return err
	}
	select {
	case b.subSem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	if ok, err := b.subscribed(); ok || err != nil {
		<-b.subSem
		return err
	}
	if !b.brk.allow(time.Now()) {
		<-b.subSem
		return errBreakerOpen
	}
	done := make(chan error, 1)
	if !b.goBackground(func() { defer func() { <-b.subSem }(); done <- b.subscribe(ctx) }) {
		<-b.subSem
		return ErrClosed
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (b *redisBackend) subscribe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.cfg.fault.opTimeout)
	defer cancel()
	ps, addr, err := b.newPubSub(ctx, "")
	if err != nil {
		b.brk.record(outcomeFailed, time.Now())
		return err
	}
	b.brk.record(outcomeOK, time.Now())
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		_ = ps.Close()
		return ErrClosed
	}
	b.pubsub, b.subAddr = ps, addr
	b.lastResub = time.Now()
	b.wg.Add(1)
	go b.receive(ps)
	return nil
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

// subscribed reports whether the subscription is up, or ErrClosed.
func (b *redisBackend) subscribed() (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false, ErrClosed
	}
	return b.pubsub != nil, nil
}

// receive delivers the grants published on ps. It reads the subscription
// directly (no forwarding goroutine: one fewer wake-up per hand-off), and
// returns once ps is replaced or the backend closes. After a connection
// error the backend makes a fresh subscription (on Cluster, on another
// node), and go-redis resubscribes ps on its next read meanwhile; grants
// published meanwhile are healed by an immediate heartbeat.
func (b *redisBackend) receive(ps *redis.PubSub) {
	defer b.wg.Done()
	ctx := context.Background()
	backoff := 10 * time.Millisecond
	for {
		msg, err := ps.ReceiveMessage(ctx)
		if err != nil {
			if !b.current(ps) {
				return // replaced, or closed
			}
			b.report("", unavailable("receive grants", b.channel, err))
			b.reloadSlots()
			b.resubscribe(ps)
			select {
			case <-b.stop:
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, time.Second)
			b.resync()
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
// of this process's waiters that a lost message did not.
func (b *redisBackend) resync() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, t := range b.sems {
		t.nextBeat = time.Time{}
	}
	b.poke()
}

// resyncSem makes the loop run s's heartbeat now if this process has
// waiters on s: a lost script reply may have carried their grants.
func (b *redisBackend) resyncSem(s *Redis) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t := b.sems[s]; t != nil && len(t.waiting) > 0 {
		t.nextBeat = time.Time{}
		b.poke()
	}
}
