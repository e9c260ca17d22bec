package redissem_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/core/semtest"
	"github.com/distsem/distsem/internal/servertest"
)

// sem is what the conformance suite needs of a backend.
type sem = semtest.Sem

type impl struct {
	name string
	new  func(t *testing.T, limit int64, opts ...opt) sem
}

// opt is one construction option in the form of each kind of backend:
// core's for the in-process ones (NewLocal, NewLocalKeyed), redissem's for
// the Redis ones. A zero form is given as a nil Option.
type opt struct {
	local core.Option
	redis redissem.Option
}

func optObserver(o core.Observer) opt {
	return opt{core.WithObserver(o), redissem.WithObserver(o)}
}

func optDefaultLeaseTTL(d time.Duration) opt {
	return opt{core.WithDefaultLeaseTTL(d), redissem.WithDefaultLeaseTTL(d)}
}

func optLimits(limits map[string]int64) opt {
	return opt{core.WithLimits(limits), redissem.WithLimits(limits)}
}

func optMaxIdleKeys(n int) opt {
	return opt{core.WithMaxIdleKeys(n), redissem.WithMaxIdleKeys(n)}
}

// localOpts and redisOpts return the forms of opts for each kind of
// backend.
func localOpts(opts []opt) []core.Option {
	out := make([]core.Option, len(opts))
	for i, o := range opts {
		out[i] = o.local
	}
	return out
}

func redisOpts(opts []opt) []redissem.Option {
	out := make([]redissem.Option, len(opts))
	for i, o := range opts {
		out[i] = o.redis
	}
	return out
}

var prefixSeq atomic.Int64

// uniquePrefix keeps tests that share one real server apart.
func uniquePrefix(t *testing.T) string {
	return fmt.Sprintf("t%d-%d:", time.Now().UnixNano(), prefixSeq.Add(1))
}

func realClient(t *testing.T) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: servertest.RedisAddr(t), PoolSize: 20})
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
func backends() []impl {
	return append([]impl{
		{"local", func(t *testing.T, limit int64, opts ...opt) sem {
			return closeAtCleanup(t, core.NewLocal(limit, localOpts(opts)...))
		}},
		{"miniredis", func(t *testing.T, limit int64, opts ...opt) sem {
			c, _ := miniClient(t)
			return closeAtCleanup(t, redissem.New(c, "conf", limit, redisOpts(opts)...))
		}},
		{"redis", func(t *testing.T, limit int64, opts ...opt) sem {
			return realSem(t, realClient(t), limit, opts)
		}},
		{"cluster", func(t *testing.T, limit int64, opts ...opt) sem {
			c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: servertest.RedisClusterAddrs(t)})
			t.Cleanup(func() { _ = c.Close() })
			return realSem(t, c, limit, opts)
		}},
		{"sentinel", func(t *testing.T, limit int64, opts ...opt) sem {
			addrs, master := servertest.RedisSentinel(t)
			c := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: master, SentinelAddrs: addrs})
			t.Cleanup(func() { _ = c.Close() })
			return realSem(t, c, limit, opts)
		}},
	}, quorumBackends()...)
}

func realSem(t *testing.T, c redis.UniversalClient, limit int64, opts []opt) sem {
	ropts := append([]redissem.Option{redissem.WithKeyPrefix(uniquePrefix(t))}, redisOpts(opts)...)
	return closeAtCleanup(t, redissem.New(c, "conf", limit, ropts...))
}

// hasFlows tells which backends of backends() and keyedBackends() have
// flows and priority levels: the in-process ones, and this package's plain
// and keyed semaphores.
func hasFlows(name string) bool {
	switch name {
	case "local", "miniredis", "redis", "cluster", "sentinel", "leased-redis":
		return true
	}
	return false
}

func forEach(t *testing.T, f func(t *testing.T, b impl)) {
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

// The conformance suite's helpers, each failing t: stats, acquire and
// tryAcquire call s's method with a background ctx; waitQueued blocks until
// n callers are queued, and wantStats until s shows inUse permits held and
// waiting callers queued (a clean-up may reach Redis after its caller
// returned); both poll Stats.
var (
	stats      = semtest.Stats
	acquire    = semtest.Acquire
	tryAcquire = semtest.TryAcquire
	waitQueued = semtest.WaitQueued
	wantStats  = semtest.WantStats
)

// TestConformance runs the conformance suite (core/semtest: tokens,
// FIFO, weights, limits, Close, a hammer, reentrancy) on every backend of
// backends(). Backends in other modules run the same suite (core/consul).
func TestConformance(t *testing.T) {
	forEach(t, func(t *testing.T, b impl) {
		semtest.Run(t, semtest.Backend{Name: b.name, New: func(t *testing.T, limit int64) semtest.Sem {
			return b.new(t, limit)
		}, Flows: hasFlows(b.name)})
	})
}

// TestKeyedConformance runs the suite on one key of every keyed backend,
// the leased mode's included.
func TestKeyedConformance(t *testing.T) {
	keyed := keyedBackends()
	keyed["leased-redis"] = func(t *testing.T, def int64, opts ...opt) *core.Keyed {
		ropts := append([]redissem.Option{redissem.WithKeyPrefix(uniquePrefix(t))}, redisOpts(opts)...)
		return redissem.NewLeasedKeyed(realClient(t), "routes", def, ropts...)
	}
	for name, newKeyed := range keyed {
		t.Run(name, func(t *testing.T) {
			semtest.Run(t, semtest.Backend{Name: name, New: func(t *testing.T, limit int64) semtest.Sem {
				k := newKeyed(t, limit)
				t.Cleanup(func() { _ = k.Close() })
				return semtest.OneKey(k, "GET /reports")
			}, Shares: name == "leased-redis", Flows: hasFlows(name)})
		})
	}
}
