package redissem

import (
	"context"
	"crypto/rand"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/internal/servertest"
	"github.com/distsem/distsem/internal/testwait"
)

// slowLeased is a process in the leased mode whose heartbeat never comes
// within a test: a lease of an hour (a beat every 20 minutes) and no fast
// rebalancing. Only pushes and the process's own calls move its share.
func slowLeased(t *testing.T, c redis.UniversalClient, prefix, name string, limit int64) *Leased {
	s := NewLeased(c, name, limit, WithKeyPrefix(prefix), WithDefaultLeaseTTL(time.Hour))
	s.l.rebalance = time.Hour
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// keepShares makes the processes keep a share that goes unused (for
// shareIdle) rather than give it back at the release, as processes that
// use their semaphore often do: their takes are not single-use, so Redis
// tells them when another process waits (see leased_single.go).
func keepShares(ls ...*Leased) {
	for _, s := range ls {
		s.l.mu.Lock()
		s.l.giveIdle = false
		s.l.mu.Unlock()
	}
}

// quiet reports whether l's caller is queued locally and l has no beat in
// flight nor asked for.
func quiet(l *leased) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.loc.State().WaitN == 1 && l.beatGen == l.doneGen && len(l.wake) == 0 && !l.deferred && !l.giveReq
}

// beats returns how many beats l has started and how many pushes it applied.
func beats(l *leased) (uint64, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.beatGen, l.pushes
}

// TestLeasedReleaseHandsOffByPush: limit 1, process A holds the permit and
// has no caller queued; process B queues. A's release gives the permit
// back in a script that hands it to B and publishes to B, which grants at
// once: B makes no beat between A's release and its grant (its heartbeat
// is an hour away), so only the push explains the grant. The give-back
// runs within A's Release: when it returns, Redis has handed the unit to
// B already. The recorded order keeps the limit: B's grant comes after
// A's release began.
func TestLeasedReleaseHandsOffByPush(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: servertest.RedisAddr(t)})
	t.Cleanup(func() { _ = c.Close() })
	prefix := "t" + rand.Text()[:10] + ":"
	a := slowLeased(t, c, prefix, "push", 1)
	b := slowLeased(t, c, prefix, "push", 1)
	keepShares(a, b)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	var seq atomic.Int64 // orders the events of the timeline
	pa, err := a.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	type grant struct {
		p   *core.Permit
		at  int64
		err error
	}
	got := make(chan grant, 1)
	go func() {
		p, err := b.Acquire(ctx)
		got <- grant{p, seq.Add(1), err}
	}()
	// B's beat queues it in Redis and tells A that B is starved.
	testwait.Until(t, time.Minute, "A not told that B waits", func() bool {
		a.l.mu.Lock()
		defer a.l.mu.Unlock()
		return a.l.contended
	})
	testwait.Until(t, time.Minute, "B's beats not done", func() bool { return quiet(b.l) })
	beatsB, pushesB := beats(b.l)
	released := seq.Add(1)
	if err := pa.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if share := redisShare(t, c, b.l); share != 1 {
		t.Fatalf("B's share in Redis %d when A's Release returned, want 1: the give-back did not run within the release", share)
	}
	g := <-got
	if g.err != nil {
		t.Fatalf("B's Acquire: %v", g.err)
	}
	if g.at < released {
		t.Fatalf("B granted (event %d) before A's release (event %d): 2 holders, limit 1", g.at, released)
	}
	beatsB2, pushesB2 := beats(b.l)
	if beatsB2 != beatsB {
		t.Fatalf("B beat %d times between A's release and its grant: the grant is not the push's", beatsB2-beatsB)
	}
	if pushesB2 <= pushesB {
		t.Fatalf("B applied no push (%d before, %d after)", pushesB, pushesB2)
	}
	// And back: A queues, B's release hands the permit to A.
	got2 := make(chan grant, 1)
	go func() {
		p, err := a.Acquire(ctx)
		got2 <- grant{p, seq.Add(1), err}
	}()
	testwait.Until(t, time.Minute, "B not told that A waits", func() bool {
		b.l.mu.Lock()
		defer b.l.mu.Unlock()
		return b.l.contended
	})
	testwait.Until(t, time.Minute, "A's beats not done", func() bool { return quiet(a.l) })
	beatsA, _ := beats(a.l)
	released = seq.Add(1)
	if err := g.p.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if share := redisShare(t, c, a.l); share != 1 {
		t.Fatalf("A's share in Redis %d when B's Release returned, want 1", share)
	}
	g2 := <-got2
	if g2.err != nil || g2.at < released {
		t.Fatalf("A's Acquire: %v (event %d, release %d)", g2.err, g2.at, released)
	}
	if beatsA2, _ := beats(a.l); beatsA2 != beatsA {
		t.Fatalf("A beat %d times before its grant", beatsA2-beatsA)
	}
	if err := g2.p.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// redisShare returns l's share as the shares hash holds it.
func redisShare(t *testing.T, c redis.UniversalClient, l *leased) int64 {
	t.Helper()
	v, err := c.HGet(context.Background(), l.keys[0], "p:"+l.pid).Result()
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseInt(strings.SplitN(v, ":", 2)[0], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
