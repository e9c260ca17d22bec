package redissem

import (
	"context"
	"crypto/rand"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/internal/servertest"
	"github.com/distsem/distsem/internal/testwait"
)

// queuedGives returns a logged client and two leased semaphores of limit 1
// on one backend (as the keys of one NewLeasedKeyed), whose queued
// give-backs wait an hour for a take to carry them, and whose shares go
// back at the release that leaves them unused (a first use: giveIdle).
// The scripts are loaded, so that none in a pipeline is sent again alone
// (NOSCRIPT).
func queuedGives(t *testing.T) (context.Context, *scriptLog, *redis.Client, *leased, *leased) {
	log := newScriptLog()
	c := redis.NewClient(&redis.Options{Addr: servertest.RedisAddr(t)})
	c.AddHook(log)
	t.Cleanup(func() { _ = c.Close() })
	cfg := buildConfig("NewLeasedKeyed", takesKeyed, []Option{WithKeyPrefix("t" + rand.Text()[:10] + ":"), WithDefaultLeaseTTL(time.Hour)})
	b := newRedisBackend("NewLeasedKeyed", c, cfg)
	b.gives.delay = time.Hour
	t.Cleanup(func() { _ = b.close() })
	sem := func(name string) *leased {
		l := newLeasedSem(b.semaphore(name, 1, false)).l
		l.rebalance = time.Hour
		return l
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	for _, sc := range []*redis.Script{scriptShareGive, scriptShareTake} {
		if err := sc.Load(ctx, c).Err(); err != nil {
			t.Fatal(err)
		}
	}
	return ctx, log, c, sem("a"), sem("b")
}

// entryInRedis returns the fields of l's entry in Redis
// ("share:demand:inuse:waiting:need:exp:epoch:qat:ver:told"), or nil if it
// has none.
func entryInRedis(t *testing.T, ctx context.Context, c *redis.Client, l *leased) []string {
	t.Helper()
	v, err := c.HGet(ctx, l.keys[0], "p:"+l.pid).Result()
	if errors.Is(err, redis.Nil) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(v, ":")
}

// shareInRedis returns the share that l's entry holds in Redis, or -1 if
// it has no entry.
func shareInRedis(t *testing.T, ctx context.Context, c *redis.Client, l *leased) int64 {
	t.Helper()
	e := entryInRedis(t, ctx, c, l)
	if e == nil {
		return -1
	}
	n, err := strconv.ParseInt(e[0], 10, 64)
	if err != nil {
		t.Fatalf("entry %q: %v", e, err)
	}
	return n
}

// useOnce acquires a permit of l and releases it.
func useOnce(t *testing.T, ctx context.Context, l *leased) {
	t.Helper()
	p, err := l.acquire(ctx, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestLeasedIdleGiveBackRidesWithTheNextTake: a release that leaves its
// share unused while nobody is starved returns without a round trip; its
// give-back waits in the client's queue, the unit still held in Redis.
// The next take of another semaphore of the client carries it: one
// pipeline of the give-back and the take. The first process then has no
// entry, and its loop stops.
func TestLeasedIdleGiveBackRidesWithTheNextTake(t *testing.T) {
	ctx, log, c, a, b := queuedGives(t)
	p := takeOnce(t, log, func() (*core.Permit, error) { return a.acquire(ctx, false, nil) })
	if err := p.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if ran := log.take(); len(ran) != 0 {
		t.Fatalf("Release ran %v, want nothing", ran)
	}
	if got := shareInRedis(t, ctx, c, a); got != 1 {
		t.Fatalf("share in Redis after Release: %d, want 1 (the give-back queued)", got)
	}
	if _, err := a.loc.TryAcquire(ctx); err == nil {
		t.Fatal("the local share granted while its give-back was queued")
	}

	pb, err := b.acquire(ctx, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pb.Release(ctx) }()
	if ran := log.take(); len(ran) != 1 || ran[0] != "give+take" {
		t.Fatalf("the other semaphore's Acquire ran %v, want [give+take]: one pipeline", ran)
	}
	loopStops(t, a, "the first semaphore's loop did not stop after its give-back")
	if got := shareInRedis(t, ctx, c, a); got != -1 {
		t.Fatalf("the first process's entry after its give-back: share %d, want none", got)
	}
}

// TestLeasedQueuedGiveBackYieldsToTheNextCaller: a caller that comes while
// the give-back is queued cancels it and is served from the share, with
// no script of its own; since it came soon after, the share is kept idle
// next time. The first use's take was single-use, so the second caller
// makes the loop run share.lua once, which records the process as not
// told (leased_single.go).
func TestLeasedQueuedGiveBackYieldsToTheNextCaller(t *testing.T) {
	ctx, log, c, a, _ := queuedGives(t)
	a.mu.Lock()
	a.idle = time.Hour // the share kept idle stays
	a.mu.Unlock()
	for round := range 3 {
		p, err := a.acquire(ctx, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if round == 0 {
			if got := log.take(); strings.Join(got, " ") != "take" {
				t.Fatalf("round 0: Acquire and Release ran %v, want [take]", got)
			}
		}
		if got := shareInRedis(t, ctx, c, a); got != 1 {
			t.Fatalf("round %d: share in Redis: %d, want 1", round, got)
		}
	}
	testwait.Until(t, time.Minute, "Redis still records the process as told after its single-use share served a second caller", func() bool {
		return entryTold(t, ctx, c, a) == "0"
	})
	if ran := log.take(); strings.Join(ran, " ") != "share" {
		t.Fatalf("rounds 1 and 2 ran %v, want [share] (the loop's, once)", ran)
	}
	a.mu.Lock()
	queued, idle, single := a.giveQueued, a.giveIdle, a.single
	a.mu.Unlock()
	if queued || idle || single {
		t.Fatalf("after callers came soon after the give-back: queued %v, give when idle %v, single-use %v, want none", queued, idle, single)
	}
}

// TestLeasedQueuedGiveBackGoesWhenAnotherProcessWaits: another process
// queues for the unit whose give-back waits in the queue; the push that
// tells the holder sends the give-back at once, which hands the unit over.
// The holder's take was not single-use (it keeps unused shares), so Redis
// tells it; the give-back was queued as the release found the share
// unused after another process had wanted it (giveIdle).
func TestLeasedQueuedGiveBackGoesWhenAnotherProcessWaits(t *testing.T) {
	ctx, _, c, a, _ := queuedGives(t)
	a.mu.Lock()
	a.giveIdle = false
	a.mu.Unlock()
	p, err := a.acquire(ctx, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	a.giveIdle = true
	a.mu.Unlock()
	if err := p.Release(ctx); err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	queued, single := a.giveQueued, a.single
	a.mu.Unlock()
	if !queued || single {
		t.Fatalf("after the release: give-back queued %v, single-use %v, want queued and not single-use", queued, single)
	}
	other := NewLeased(c, a.s.name, 1, WithKeyPrefix(a.s.b.cfg.prefix), WithDefaultLeaseTTL(time.Hour))
	t.Cleanup(func() { _ = other.Close() })
	po, err := other.Acquire(ctx) // within the test's minute, not the hour of the queue
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = po.Release(ctx) }()
	if got := shareInRedis(t, ctx, c, a); got > 0 {
		t.Fatalf("the first process's share once the other holds the unit: %d, want none", got)
	}
}

// TestLeasedCloseWithAGiveBackQueued: Close returns with a give-back
// queued, and the process's entry leaves Redis.
func TestLeasedCloseWithAGiveBackQueued(t *testing.T) {
	ctx, _, c, a, _ := queuedGives(t)
	useOnce(t, ctx, a)
	a.mu.Lock()
	queued := a.giveQueued
	a.mu.Unlock()
	if !queued {
		t.Fatal("the release did not queue its give-back")
	}
	if err := a.s.b.close(); err != nil {
		t.Fatal(err)
	}
	if got := shareInRedis(t, ctx, c, a); got != -1 {
		t.Fatalf("entry after Close: share %d, want none", got)
	}
}

// TestLeasedQueuedGiveBackAfterScriptFlush: Redis lost its scripts (a
// SCRIPT FLUSH, a restart or a failover to a replica that never had
// them): the pipeline of a queued give-back and a take gets NOSCRIPT for
// both, and each is sent again alone, which loads it. The take grants and
// the give-back leaves the first process's entry.
func TestLeasedQueuedGiveBackAfterScriptFlush(t *testing.T) {
	ctx, log, c, a, b := queuedGives(t)
	useOnce(t, ctx, a)
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	log.take()
	pb, err := b.acquire(ctx, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pb.Release(ctx) }()
	if ran := log.take(); len(ran) == 0 || ran[0] != "give+take" {
		t.Fatalf("the other semaphore's Acquire ran %v, want a pipeline give+take first", ran)
	}
	testwait.Until(t, time.Minute, "the first process's entry stayed after its give-back", func() bool {
		return shareInRedis(t, ctx, c, a) == -1
	})
}
