package redissem_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/core/semtest"
	"github.com/distsem/distsem/internal/servertest"
)

// leasedBackends are the Redis backends of the suite in the leased-shares
// mode: one process, so its behaviour must match the default mode's.
func leasedBackends() []impl {
	return []impl{
		{"miniredis", func(t *testing.T, limit int64, opts ...opt) sem {
			c, _ := miniClient(t)
			return closeAtCleanup(t, redissem.NewLeased(c, "conf", limit, redisOpts(opts)...))
		}},
		{"redis", func(t *testing.T, limit int64, opts ...opt) sem {
			return realLeased(t, realClient(t), limit, opts)
		}},
		{"cluster", func(t *testing.T, limit int64, opts ...opt) sem {
			c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: servertest.RedisClusterAddrs(t)})
			t.Cleanup(func() { _ = c.Close() })
			return realLeased(t, c, limit, opts)
		}},
	}
}

// realLeased is realSem in the leased-shares mode.
func realLeased(t *testing.T, c redis.UniversalClient, limit int64, opts []opt) sem {
	ropts := append([]redissem.Option{redissem.WithKeyPrefix(uniquePrefix(t))}, redisOpts(opts)...)
	return closeAtCleanup(t, redissem.NewLeased(c, "conf", limit, ropts...))
}

// TestLeasedConformance runs the conformance suite on the leased mode.
func TestLeasedConformance(t *testing.T) {
	for _, b := range leasedBackends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			semtest.Run(t, semtest.Backend{Name: b.name, New: func(t *testing.T, limit int64) semtest.Sem {
				return b.new(t, limit)
			}, Shares: true, Flows: true})
		})
	}
}

// TestLeasedKeyed: NewLeasedKeyed is the mode's keyed semaphore; each key
// has its own shares, and a key's limit holds.
func TestLeasedKeyed(t *testing.T) {
	c, _ := miniClient(t)
	k := redissem.NewLeasedKeyed(c, "k", 2)
	defer k.Close()
	ctx := context.Background()
	a1, err := k.Acquire(ctx, "a")
	ok(t, err)
	a2, err := k.Acquire(ctx, "a")
	ok(t, err)
	if _, err := k.TryAcquire(ctx, "a"); err == nil {
		t.Fatal("a third permit of a key of limit 2")
	}
	b, err := k.Acquire(ctx, "b")
	ok(t, err)
	if a2.Token() <= a1.Token() {
		t.Fatalf("tokens %d then %d: not increasing within the process", a1.Token(), a2.Token())
	}
	for _, p := range []*core.Permit{a1, a2, b} {
		ok(t, p.Release(ctx))
	}
	st, err := k.Stats(ctx, "a")
	ok(t, err)
	if st.InUse != 0 || st.Waiting != 0 || st.Limit != 2 {
		t.Fatalf("stats after release: %+v", st)
	}
}
