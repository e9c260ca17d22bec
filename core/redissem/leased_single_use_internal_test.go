package redissem

import (
	"context"
	"crypto/rand"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/internal/servertest"
	"github.com/distsem/distsem/internal/testwait"
)

// singleUseFleet returns a client, a leased semaphore of limit 1 whose
// loop beats only when asked (rebalance and lease TTL an hour), and a
// second process of the same semaphore, made by NewLeased.
func singleUseFleet(t *testing.T) (context.Context, *redis.Client, *leased, *Leased) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: servertest.RedisAddr(t)})
	t.Cleanup(func() { _ = c.Close() })
	prefix := "t" + rand.Text()[:10] + ":"
	cfg := buildConfig("NewLeased", takesNone, []Option{WithKeyPrefix(prefix), WithDefaultLeaseTTL(time.Hour)})
	b := newRedisBackend("NewLeased", c, cfg)
	t.Cleanup(func() { _ = b.close() })
	a := newLeasedSem(b.semaphore("s", 1, true)).l
	a.rebalance = time.Hour
	other := NewLeased(c, "s", 1, WithKeyPrefix(prefix), WithDefaultLeaseTTL(time.Hour))
	t.Cleanup(func() { _ = other.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return ctx, c, a, other
}

// singleUse acquires a permit of l, whose take, named what, must be
// single-use.
func singleUse(t *testing.T, ctx context.Context, l *leased, what string) *core.Permit {
	t.Helper()
	p, err := l.acquire(ctx, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	single := l.single
	l.mu.Unlock()
	if !single {
		t.Fatalf("%s was not single-use", what)
	}
	return p
}

// entryTold returns the told field of l's entry in Redis ("" if it has
// none).
func entryTold(t *testing.T, ctx context.Context, c *redis.Client, l *leased) string {
	t.Helper()
	e := entryInRedis(t, ctx, c, l)
	if e == nil {
		return ""
	}
	return e[len(e)-1]
}

// queuedInRedis waits until a process is queued in the fleet's queue of
// l's semaphore.
func queuedInRedis(t *testing.T, ctx context.Context, c *redis.Client, l *leased) {
	t.Helper()
	testwait.Until(t, time.Minute, "the other process did not queue in Redis", func() bool {
		q, err := c.HGet(ctx, l.keys[0], "q").Result()
		return err == nil && q != ""
	})
}

// acquireLater acquires a permit of o in a goroutine, and returns a
// channel closed once it is granted (or failed: the test fails). The test
// waits for the goroutine at its end, and releases the permit.
func acquireLater(t *testing.T, ctx context.Context, o *Leased) <-chan struct{} {
	t.Helper()
	got := make(chan struct{})
	var p *core.Permit
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(got)
		var err error
		if p, err = o.Acquire(ctx); err != nil {
			t.Error(err)
		}
	})
	t.Cleanup(func() {
		wg.Wait()
		if p != nil {
			_ = p.Release(context.Background())
		}
	})
	return got
}

// TestLeasedSingleUseTakeIsNotTold: the first use of a semaphore in a
// process is a lone caller's take, single-use: Redis records the process
// as told. Another process that queues behind it sends it no note, and
// the release's give-back hands the unit over.
func TestLeasedSingleUseTakeIsNotTold(t *testing.T) {
	ctx, c, a, other := singleUseFleet(t)
	p := singleUse(t, ctx, a, "the first use's take")
	if got := entryTold(t, ctx, c, a); got != "1" {
		t.Fatalf("told in the holder's entry: %q, want 1", got)
	}
	got := acquireLater(t, ctx, other)
	queuedInRedis(t, ctx, c, a)
	if err := p.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-got:
	case <-ctx.Done():
		t.Fatal("the queued process was not served after the release")
	}
	a.mu.Lock()
	pushes := a.pushes
	a.mu.Unlock()
	if pushes != 0 {
		t.Fatalf("the single-use holder was sent %d notes, want none", pushes)
	}
}

// TestLeasedSingleUseReusedTellsRedis: the unit that a process took
// single-use passes to a second caller of that process, queued there
// while another process queued in Redis and was not told. The process
// then runs share.lua, whose reply tells it that the other process is
// starved: the second caller's release gives the unit back, and the other
// process is served, though a third caller of the first process waits.
func TestLeasedSingleUseReusedTellsRedis(t *testing.T) {
	ctx, c, a, other := singleUseFleet(t)
	first, err := a.acquire(ctx, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := acquireLater(t, ctx, other)
	queuedInRedis(t, ctx, c, a)

	var wg sync.WaitGroup
	permits := make(chan *core.Permit, 2)
	cctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel() // the third caller's wait, if it still waits
		wg.Wait()
		close(permits)
		for p := range permits {
			_ = p.Release(ctx)
		}
	}()
	callers := func(n int64) {
		t.Helper()
		wg.Go(func() {
			p, err := a.acquire(cctx, false, nil)
			if err != nil {
				if cctx.Err() == nil {
					t.Error(err)
				}
				return
			}
			permits <- p
		})
		testwait.Until(t, time.Minute, "a caller did not queue locally", func() bool {
			return a.loc.State().WaitN == n
		})
	}
	callers(1)
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	second := <-permits
	testwait.Until(t, time.Minute, "the process was not told that the other process waits after its single-use unit served a second caller", func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.contended && !a.single
	})
	callers(1) // a third caller queues here
	if err := second.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-got:
	case <-ctx.Done():
		t.Fatal("the other process was not served")
	}
	select {
	case p := <-permits:
		permits <- p // released at the end
		t.Fatalf("the third caller was served (token %d) before the other process", p.Token())
	default:
	}
}

// TestLeasedTakeScriptRecordsSingleUseAsTold: limit 2. a's single-use take
// of 1 replies contended 0 and records a as told; b, whose head waiter
// needs 2, takes the free unit and queues, and a is sent no note (its
// entry keeps its version). In a hash of its own, a take that is not
// single-use and is served records the process as not told, though its
// entry said told before.
func TestLeasedTakeScriptRecordsSingleUseAsTold(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: servertest.RedisAddr(t)})
	t.Cleanup(func() { _ = c.Close() })
	take := func(f takeFleet, pid string, keep, need, known, epoch int64, single bool) []int64 {
		t.Helper()
		v, err := scriptShareTake.Run(t.Context(), c, []string{f.key}, pid, need, keep, keep, need, need, 10000,
			known, epoch, "owner-"+pid, "ch:"+pid, single).Int64Slice()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	told := func(f takeFleet, pid string) string {
		t.Helper()
		e := strings.Split(f.all()["p:"+pid], ":")
		return e[len(e)-1]
	}

	f := takeFleet{giveFleet{t: t, c: c, key: "t" + rand.Text()[:10] + "{single}:ls"}}
	a, b := f.beat("a", 0, 0), f.beat("b", 0, 0)
	r := take(f, "a", 0, 1, a[11], a[4], true)
	if r[0] != 1 || r[1] != 1 || r[12] != 0 {
		t.Fatalf("a's single-use take of 1: reply %v, want code 1, share 1, contended 0", r)
	}
	if got := told(f, "a"); got != "1" {
		t.Fatalf("a's entry after its single-use take: told %q, want 1", got)
	}
	_, _, aver := f.entry("a")
	r = take(f, "b", 0, 2, b[11], b[4], false)
	if r[1] != 1 || r[12] != 0 {
		t.Fatalf("b's take of 2 with 1 free: reply %v, want share 1, queued first", r)
	}
	if q := f.all()["q"]; q != "b" {
		t.Fatalf("the queue after b's take: %q, want b", q)
	}
	if _, _, ver := f.entry("a"); ver != aver {
		t.Fatalf("a's entry version moved from %d to %d: a was told, want no note to a single-use holder", aver, ver)
	}

	g := takeFleet{giveFleet{t: t, c: c, key: "t" + rand.Text()[:10] + "{single}:ls"}}
	a = g.beat("a", 0, 0)
	r = take(g, "a", 0, 1, a[11], a[4], true)
	r = take(g, "a", 1, 2, r[11], a[4], false)
	if r[0] != 1 || r[1] != 2 || r[12] != 0 {
		t.Fatalf("a's take of a second unit: reply %v, want code 1, share 2, contended 0", r)
	}
	if got := told(g, "a"); got != "0" {
		t.Fatalf("a's entry after a take that is not single-use: told %q, want 0", got)
	}
}

// TestLeasedShareWantedElsewhereGoesBackAtOnce: a process keeps its
// unused share; another process queues for it, and the push makes it give
// the share back. From then on the process gives an unused share back at
// the release: its next take is single-use, and its release queues the
// give-back. A caller that comes soon after that give-back takes the unit
// back, but while another process wanted it lately (shareWanted) the
// share still goes back at the next release.
func TestLeasedShareWantedElsewhereGoesBackAtOnce(t *testing.T) {
	ctx, c, a, other := singleUseFleet(t)
	a.mu.Lock()
	a.giveIdle, a.idle = false, time.Hour // keeps an unused share
	a.mu.Unlock()
	useOnce(t, ctx, a)
	if got := shareInRedis(t, ctx, c, a); got != 1 {
		t.Fatalf("share in Redis after the release: %d, want 1 (kept)", got)
	}

	po, err := other.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	giveIdle, wanted := a.giveIdle, !a.wantedAt.IsZero()
	a.mu.Unlock()
	if !giveIdle || !wanted {
		t.Fatalf("after another process took the kept share: give back at once %v, wanted %v; want both", giveIdle, wanted)
	}
	if err := po.Release(ctx); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, time.Minute, "the other process kept the unit", func() bool {
		return shareInRedis(t, ctx, c, other.l) <= 0
	})

	p := singleUse(t, ctx, a, "the take after the share was wanted elsewhere")
	if err := p.Release(ctx); err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	queued := a.giveQueued || a.giving || a.share == 0
	a.wantedAt = time.Now() // wanted lately, however slow the machine
	a.mu.Unlock()
	if !queued {
		t.Fatal("the release kept the unused share, want it given back")
	}
	useOnce(t, ctx, a) // soon after the give-back
	a.mu.Lock()
	giveIdle = a.giveIdle
	a.mu.Unlock()
	if !giveIdle {
		t.Fatal("a caller soon after the give-back made the share be kept, though another process wanted it lately")
	}
}
