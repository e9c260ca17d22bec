package seedsem

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

func newSem(t *testing.T, limit int64) (*Sem, *redis.Client) {
	t.Helper()
	m := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: m.Addr(), PoolSize: 32})
	t.Cleanup(func() { c.Close() })
	return New(c, "t", limit, Options{BlockTimeout: 50 * time.Millisecond, ID: "p"}), c
}

func TestTryAcquireLimitAndCleanup(t *testing.T) {
	ctx := context.Background()
	s, c := newSem(t, 2)
	r1, err := s.TryAcquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.TryAcquire(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TryAcquire(ctx); !errors.Is(err, ErrNoPermit) {
		t.Fatalf("third try: %v, want ErrNoPermit", err)
	}
	// The loser left nothing behind (the article's script would leave it).
	for _, k := range []string{s.semKey, s.timeKey} {
		if n := c.ZCard(ctx, k).Val(); n != 2 {
			t.Errorf("ZCARD %s = %d, want 2", k, n)
		}
	}
	if err := r1(ctx); err != nil {
		t.Fatal(err)
	}
	if n := c.LLen(ctx, s.waitKey).Val(); n != 1 {
		t.Errorf("release pushed %d wake-ups, want 1", n)
	}
	if _, err := s.TryAcquire(ctx); err != nil {
		t.Fatalf("after a release: %v", err)
	}
}

func TestWokenWaiterChecksAgain(t *testing.T) {
	ctx := context.Background()
	s, c := newSem(t, 2)
	for range 2 {
		if _, err := s.TryAcquire(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// Stale wake-ups, as left by releases nobody waited for. The article
	// would count each pop as a grant.
	c.LPush(ctx, s.waitKey, "n", "n", "n", "n", "n")
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := s.Acquire(wctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire with both permits held: %v, want deadline", err)
	}
	if n := c.LLen(ctx, s.waitKey).Val(); n != 0 {
		t.Errorf("%d stale wake-ups left; the waiter should have consumed them all", n)
	}
	if n := c.ZCard(ctx, s.semKey).Val(); n != 2 {
		t.Errorf("%d members, want the 2 holders", n)
	}
}

func TestAcquireWaitsForRelease(t *testing.T) {
	ctx := context.Background()
	s, _ := newSem(t, 1)
	rel, err := s.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		r, err := s.Acquire(ctx)
		if err == nil {
			err = r(ctx)
		}
		got <- err
	}()
	if err := rel(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}

func TestNeverAboveLimit(t *testing.T) {
	ctx := context.Background()
	s, _ := newSem(t, 3)
	var cur, peak atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			for range 40 {
				rel, err := s.Acquire(ctx)
				if err != nil {
					errs <- err
					return
				}
				n := cur.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				cur.Add(-1)
				if err := rel(ctx); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if p := peak.Load(); p > 3 {
		t.Fatalf("%d holders at once, limit 3", p)
	}
}
