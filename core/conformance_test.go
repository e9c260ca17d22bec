package core_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/coretest"
	"github.com/distsem/distsem/core/coretest/semtest"
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

// TestConformance runs the conformance suite (core/coretest/semtest: tokens,
// FIFO, weights, limits, Close, a hammer) on every backend of backends().
// Backends in other modules run the same suite (core/consul).
func TestConformance(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		semtest.Run(t, semtest.Backend{Name: b.name, New: func(t *testing.T, limit int64, opts ...core.Option) semtest.Sem {
			return b.new(t, limit, opts...)
		}})
	})
}
