package redissem

import (
	"context"
	"crypto/rand"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/internal/servertest"
	"github.com/distsem/distsem/internal/testwait"
)

// loggedPair returns two processes (slowLeased) of one leased semaphore of
// limit, on a client that logs the share scripts it runs, and a ctx of a
// minute.
func loggedPair(t *testing.T, limit int64) (context.Context, *scriptLog, *redis.Client, *Leased, *Leased) {
	log := newScriptLog()
	c := redis.NewClient(&redis.Options{Addr: servertest.RedisAddr(t)})
	c.AddHook(log)
	t.Cleanup(func() { _ = c.Close() })
	prefix := "t" + rand.Text()[:10] + ":"
	a := slowLeased(t, c, prefix, "pair", limit)
	b := slowLeased(t, c, prefix, "pair", limit)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return ctx, log, c, a, b
}

// TestLeasedTryAcquireFailsAtOnceWhileOthersWait: limit 1, process A
// holds the permit and process B waits for it in Redis. A's TryAcquire
// fails with ErrNoPermit without running a script (the capacity A frees
// goes to B first) and leaves no demand behind. Once that word is older
// than a rebalance, TryAcquire asks Redis again: after B was served,
// released and gave its unused share back, A's TryAcquire takes the
// permit by a script.
func TestLeasedTryAcquireFailsAtOnceWhileOthersWait(t *testing.T) {
	ctx, log, c, a, b := loggedPair(t, 1)

	pa, err := a.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *core.Permit, 1)
	go func() {
		p, err := b.Acquire(ctx)
		if err != nil {
			t.Errorf("B's Acquire: %v", err)
		}
		got <- p
	}()
	testwait.Until(t, time.Minute, "A not told that B waits", func() bool { return a.l.noRoom() != "" })
	testwait.Until(t, time.Minute, "B's beats not done", func() bool { return quiet(b.l) })
	log.take()
	if _, err := a.TryAcquire(ctx); !errors.Is(err, core.ErrNoPermit) {
		t.Fatalf("A's TryAcquire while B waits: %v, want ErrNoPermit", err)
	}
	if ran := log.take(); len(ran) != 0 {
		t.Fatalf("A's failed TryAcquire ran %v, want no script", ran)
	}
	a.l.mu.Lock()
	demand := a.l.demand
	a.l.mu.Unlock()
	if demand != 1 {
		t.Fatalf("A's demand %d after the failed TryAcquire, want 1 (its holder)", demand)
	}

	if err := pa.Release(ctx); err != nil {
		t.Fatal(err)
	}
	pb := <-got
	if pb == nil {
		return
	}
	if err := pb.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// B gives its unit back, and leaves, once it went unused for its idle
	// time.
	testwait.Until(t, time.Minute, "B kept its unused share", func() bool {
		return errors.Is(c.HGet(ctx, b.l.keys[0], "p:"+b.l.pid).Err(), redis.Nil)
	})
	// A heard last that B waits and that nothing is free; age that word
	// past a rebalance.
	a.l.mu.Lock()
	a.l.toldAt, a.l.freeAt = time.Time{}, time.Time{}
	a.l.mu.Unlock()
	log.take()
	p, err := a.TryAcquire(ctx)
	if err != nil {
		t.Fatalf("A's TryAcquire once B released: %v", err)
	}
	if ran := log.take(); len(ran) == 0 || !slices.ContainsFunc(ran, func(s string) bool { return s == "take" || s == "share" }) {
		t.Fatalf("A's TryAcquire once B released ran %v, want a take or a beat", ran)
	}
	if err := p.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestLeasedTryAcquireFailsAtOnceWhileTheSharesHoldTheLimit: limit 2,
// processes A and B hold one unit each, and nobody waits. A learnt from
// its take that one unit was still free, so its first TryAcquire asks
// Redis (a script), which says that the shares hold the whole limit; the
// next fails at once, with no script. After B gave its unit back, and that
// word has aged past a rebalance, A's TryAcquire takes the unit.
func TestLeasedTryAcquireFailsAtOnceWhileTheSharesHoldTheLimit(t *testing.T) {
	ctx, log, c, a, b := loggedPair(t, 2)

	pa, err := a.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := b.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	log.take()
	if _, err := a.TryAcquire(ctx); !errors.Is(err, core.ErrNoPermit) {
		t.Fatalf("A's first TryAcquire: %v, want ErrNoPermit", err)
	}
	if ran := log.take(); len(ran) == 0 {
		t.Fatal("A's first TryAcquire ran no script, though its take had left a unit free")
	}
	if _, err := a.TryAcquire(ctx); !errors.Is(err, core.ErrNoPermit) {
		t.Fatalf("A's second TryAcquire: %v, want ErrNoPermit", err)
	}
	if ran := log.take(); len(ran) != 0 {
		t.Fatalf("A's second TryAcquire ran %v, want no script: Redis had just said that the shares hold the limit", ran)
	}

	if err := pb.Release(ctx); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, time.Minute, "B kept its unused share", func() bool {
		return errors.Is(c.HGet(ctx, b.l.keys[0], "p:"+b.l.pid).Err(), redis.Nil)
	})
	a.l.mu.Lock()
	a.l.freeAt = time.Time{}
	a.l.mu.Unlock()
	p, err := a.TryAcquire(ctx)
	if err != nil {
		t.Fatalf("A's TryAcquire once B gave its unit back: %v", err)
	}
	for _, q := range []*core.Permit{p, pa} {
		if err := q.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
