package core_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/coretest"
)

// sem is what the conformance suite needs of a backend.
type sem interface {
	core.Semaphore
	Stats(context.Context) (core.Stats, error)
	SetLimit(context.Context, int64) error
	Close() error
}

type backend struct {
	name string
	new  func(t *testing.T, limit int64, opts ...core.Option) sem
}

var prefixSeq atomic.Int64

// uniquePrefix keeps tests that share one real server apart.
func uniquePrefix(t *testing.T) string {
	return fmt.Sprintf("t%d-%d:", time.Now().UnixNano(), prefixSeq.Add(1))
}

func realClient(t *testing.T) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: coretest.RedisAddr(t), PoolSize: 20})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func miniClient(t *testing.T) (*redis.Client, *miniredis.Miniredis) {
	t.Helper()
	m := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	return c, m
}

func closeAtCleanup(t *testing.T, s sem) sem {
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// backends lists every backend the suite runs against: in-process,
// Redis through miniredis, and a real redis-server.
func backends() []backend {
	return append([]backend{
		{"local", func(t *testing.T, limit int64, opts ...core.Option) sem {
			return closeAtCleanup(t, core.NewLocal(limit, opts...))
		}},
		{"miniredis", func(t *testing.T, limit int64, opts ...core.Option) sem {
			c, _ := miniClient(t)
			return closeAtCleanup(t, core.NewRedis(c, "conf", limit, opts...))
		}},
		{"redis", func(t *testing.T, limit int64, opts ...core.Option) sem {
			return realSem(t, realClient(t), limit, opts)
		}},
		{"cluster", func(t *testing.T, limit int64, opts ...core.Option) sem {
			c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: coretest.RedisClusterAddrs(t)})
			t.Cleanup(func() { _ = c.Close() })
			return realSem(t, c, limit, opts)
		}},
		{"sentinel", func(t *testing.T, limit int64, opts ...core.Option) sem {
			addrs, master := coretest.RedisSentinel(t)
			c := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: master, SentinelAddrs: addrs})
			t.Cleanup(func() { _ = c.Close() })
			return realSem(t, c, limit, opts)
		}},
	}, quorumBackends()...)
}

func realSem(t *testing.T, c redis.UniversalClient, limit int64, opts []core.Option) sem {
	opts = append([]core.Option{core.WithKeyPrefix(uniquePrefix(t))}, opts...)
	return closeAtCleanup(t, core.NewRedis(c, "conf", limit, opts...))
}

func forEach(t *testing.T, f func(t *testing.T, b backend)) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			f(t, b)
		})
	}
}

func ok(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func stats(t *testing.T, s sem) core.Stats {
	t.Helper()
	st, err := s.Stats(context.Background())
	ok(t, err)
	return st
}

func acquire(t *testing.T, s sem, opts ...core.AcquireOption) *core.Permit {
	t.Helper()
	p, err := s.Acquire(context.Background(), opts...)
	ok(t, err)
	return p
}

func tryAcquire(t *testing.T, s sem) *core.Permit {
	t.Helper()
	p, err := s.TryAcquire(context.Background())
	ok(t, err)
	return p
}

// waitQueued blocks until n callers are queued. It polls Stats, which is
// an observation of state, not a sleep; it gives up after a minute.
func waitQueued(t *testing.T, s sem, n int64) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		st := stats(t, s)
		if st.Waiting == n {
			return
		}
		if st.Waiting > n || time.Now().After(deadline) {
			t.Fatalf("waiting = %d, want %d", st.Waiting, n)
		}
	}
}

// wantStats waits until s shows inUse permits held and waiting callers
// queued, and fails if that does not happen within 10s. It polls, because
// a cancelled or closed waiter's clean-up reaches Redis in the background:
// the caller does not wait for it.
func wantStats(t *testing.T, s sem, inUse, waiting int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := stats(t, s)
		if st.InUse == inUse && st.Waiting == waiting {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("stats = %+v, want in use %d, waiting %d", st, inUse, waiting)
		}
	}
}

func TestTryAcquireAndTokens(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := b.new(t, 2)
		p1 := tryAcquire(t, s)
		p2 := tryAcquire(t, s)
		if _, err := s.TryAcquire(ctx); !errors.Is(err, core.ErrNoPermit) {
			t.Fatalf("third TryAcquire: err = %v, want ErrNoPermit", err)
		}
		if p2.Token() <= p1.Token() {
			t.Fatalf("tokens %d then %d: want strictly increasing", p1.Token(), p2.Token())
		}
		ok(t, p1.Release(ctx))
		p3 := tryAcquire(t, s)
		if p3.Token() <= p2.Token() {
			t.Fatalf("token after release %d, want > %d", p3.Token(), p2.Token())
		}
		ok(t, p2.Release(ctx))
		ok(t, p3.Release(ctx))
		wantStats(t, s, 0, 0)
	})
}

func TestFIFO(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := b.new(t, 1)
		holder := acquire(t, s)
		const n = 8
		order := make(chan int, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p, err := s.Acquire(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				order <- i
				_ = p.Release(ctx)
			}()
			waitQueued(t, s, int64(i+1))
		}
		ok(t, holder.Release(ctx))
		wg.Wait()
		close(order)
		want := 0
		for got := range order {
			if got != want {
				t.Fatalf("grant %d went to waiter %d: not FIFO", want, got)
			}
			want++
		}
		wantStats(t, s, 0, 0)
	})
}

func TestWeightedHeadBlocksSmaller(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := b.new(t, 3)
		held := acquire(t, s, core.WithWeight(2))
		big := make(chan *core.Permit, 1)
		go func() { p, _ := s.Acquire(ctx, core.WithWeight(3)); big <- p }()
		waitQueued(t, s, 1)
		small := make(chan *core.Permit, 1)
		go func() { p, _ := s.Acquire(ctx, core.WithWeight(1)); small <- p }()
		waitQueued(t, s, 2)
		// One permit is free, but the head needs three: nobody may pass it.
		if _, err := s.TryAcquire(ctx); !errors.Is(err, core.ErrNoPermit) {
			t.Fatalf("TryAcquire barged past the queue: %v", err)
		}
		wantStats(t, s, 2, 2)
		ok(t, held.Release(ctx))
		pb := <-big
		if pb == nil || pb.Weight() != 3 {
			t.Fatalf("head waiter: %v", pb)
		}
		wantStats(t, s, 3, 1)
		ok(t, pb.Release(ctx))
		ps := <-small
		ok(t, ps.Release(ctx))
		wantStats(t, s, 0, 0)
	})
}

func TestDoubleRelease(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := b.new(t, 2)
		p := acquire(t, s)
		q := acquire(t, s)
		ok(t, p.Release(ctx))
		if err := p.Release(ctx); err != nil {
			t.Fatalf("second Release: %v, want nil", err)
		}
		wantStats(t, s, 1, 0)
		ok(t, q.Release(ctx))
		wantStats(t, s, 0, 0)
	})
}

func TestOversizedWeightFailsAtOnce(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := b.new(t, 2)
		for _, try := range []bool{false, true} {
			var err error
			if try {
				_, err = s.TryAcquire(ctx, core.WithWeight(3))
			} else {
				_, err = s.Acquire(ctx, core.WithWeight(3))
			}
			if !errors.Is(err, core.ErrInvalidArgument) {
				t.Fatalf("try=%v: err = %v, want ErrInvalidArgument", try, err)
			}
		}
		wantStats(t, s, 0, 0)
	})
}

func TestBadAcquireArguments(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := b.new(t, 2)
		for _, opt := range []core.AcquireOption{core.WithWeight(0), core.WithWeight(-1), core.WithLeaseTTL(time.Millisecond)} {
			if _, err := s.Acquire(ctx, opt); !errors.Is(err, core.ErrInvalidArgument) {
				t.Fatalf("err = %v, want ErrInvalidArgument", err)
			}
		}
		if err := s.SetLimit(ctx, 0); !errors.Is(err, core.ErrInvalidArgument) {
			t.Fatalf("SetLimit(0): err = %v, want ErrInvalidArgument", err)
		}
	})
}

func TestSetLimit(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := b.new(t, 1)
		holder := acquire(t, s)
		got := make(chan *core.Permit, 1)
		go func() { p, _ := s.Acquire(ctx); got <- p }()
		waitQueued(t, s, 1)
		ok(t, s.SetLimit(ctx, 2)) // raising admits the waiter at once
		p := <-got
		if p == nil {
			t.Fatal("waiter not granted after the limit was raised")
		}
		heavy := make(chan error, 1)
		go func() { _, err := s.Acquire(ctx, core.WithWeight(2)); heavy <- err }()
		waitQueued(t, s, 1)
		ok(t, s.SetLimit(ctx, 1)) // the weight-2 waiter can never fit
		if err := <-heavy; !errors.Is(err, core.ErrInvalidArgument) {
			t.Fatalf("heavy waiter: err = %v, want ErrInvalidArgument", err)
		}
		if st := stats(t, s); st.Limit != 1 {
			t.Fatalf("limit = %d, want 1", st.Limit)
		}
		ok(t, holder.Release(ctx))
		ok(t, p.Release(ctx))
		wantStats(t, s, 0, 0)
	})
}

func TestCloseFailsWaiters(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := b.new(t, 1)
		holder := acquire(t, s)
		errc := make(chan error, 1)
		go func() { _, err := s.Acquire(ctx); errc <- err }()
		waitQueued(t, s, 1)
		ok(t, s.Close())
		if err := <-errc; !errors.Is(err, core.ErrClosed) {
			t.Fatalf("queued Acquire after Close: %v, want ErrClosed", err)
		}
		if _, err := s.Acquire(ctx); !errors.Is(err, core.ErrClosed) {
			t.Fatalf("Acquire after Close: %v, want ErrClosed", err)
		}
		_ = holder.Release(ctx)
	})
}

// TestHammer runs many goroutines through a small limit and checks that
// the number of holders never exceeds it and nothing leaks.
func TestHammer(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		const limit = 3
		s := b.new(t, limit)
		var inside, peak atomic.Int64
		var wg sync.WaitGroup
		iters := 200
		if b.name != "local" {
			iters = 20
		}
		for g := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range iters {
					w := int64(1 + (g+i)%2)
					p, err := s.Acquire(ctx, core.WithWeight(w))
					if err != nil {
						t.Error(err)
						return
					}
					n := inside.Add(w)
					for {
						old := peak.Load()
						if n <= old || peak.CompareAndSwap(old, n) {
							break
						}
					}
					inside.Add(-w)
					if err := p.Release(ctx); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		if peak.Load() > limit {
			t.Fatalf("peak weight held = %d, limit %d", peak.Load(), limit)
		}
		wantStats(t, s, 0, 0)
	})
}
