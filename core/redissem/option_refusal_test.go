package redissem_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
)

// A constructor refuses, by name, every option it cannot honour, instead of
// ignoring it.
func TestConstructorsRefuseOptionsTheyCannotHonour(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	defer c.Close()
	clients := []redis.UniversalClient{c}
	newSem := func(core.Key, int64) core.LimitSemaphore { return core.NewLocal(1) }
	for _, tc := range []struct {
		name, want string
		build      func()
	}{
		{"NewLocal WithKeyPrefix", "NewLocal does not take WithKeyPrefix", func() { core.NewLocal(1, core.WithKeyPrefix("x:")) }},
		{"NewLocal WithLimits", "NewLocal does not take WithLimits", func() { core.NewLocal(1, core.WithLimits(map[string]int64{"a": 1})) }},
		{"NewLocal WithFailurePolicy", "NewLocal does not take WithFailurePolicy", func() { core.NewLocal(1, core.WithFailurePolicy(core.FailOpen)) }},
		{"NewLocalKeyed WithLeasedShares", "NewLocalKeyed does not take WithLeasedShares", func() { core.NewLocalKeyed(1, core.WithLeasedShares()) }},
		{"NewRedis WithMaxIdleKeys", "NewRedis does not take WithMaxIdleKeys", func() { core.NewRedis(c, "s", 1, core.WithMaxIdleKeys(3)) }},
		{"NewRedis WithClockDrift", "NewRedis does not take WithClockDrift", func() { core.NewRedis(c, "s", 1, core.WithClockDrift(time.Millisecond)) }},
		{"NewRedisKeyed WithMasterTimeout", "NewRedisKeyed does not take WithMasterTimeout", func() { core.NewRedisKeyed(c, "s", 1, core.WithMasterTimeout(time.Second)) }},
		{"NewQuorum WithLeasedShares", "NewQuorum does not take WithLeasedShares", func() { core.NewQuorum(clients, "s", 1, core.WithLeasedShares()) }},
		{"NewAllOf WithLimits", "NewAllOf does not take WithLimits", func() { core.NewAllOf(clients, "s", 1, core.WithLimits(nil)) }},
		{"ResolveOptions WithOutageGrace", "does not take WithOutageGrace", func() { core.ResolveOptions(core.WithOutageGrace(time.Second)) }},
		{"NewKeyed WithOperationTimeout", "NewKeyed does not take WithOperationTimeout", func() { core.NewKeyed("k", 1, newSem, nil, core.WithOperationTimeout(time.Second)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				msg, _ := recover().(string)
				if !strings.HasPrefix(msg, "core: ") || !strings.Contains(msg, tc.want) {
					t.Fatalf("panic %q, want one naming %q", msg, tc.want)
				}
			}()
			tc.build()
		})
	}
	// What they take, they take.
	core.NewLocal(1, core.WithObserver(core.ObserverFunc(func(core.Event) {})), core.WithDefaultLeaseTTL(time.Second))
	core.NewLocalKeyed(1, core.WithLimits(map[string]int64{"a": 2}), core.WithMaxIdleKeys(1))
	if cfg := core.ResolveOptions(core.WithKeyPrefix("p:"), core.WithLimits(nil)); cfg.KeyPrefix != "p:" || !cfg.Keyed {
		t.Fatalf("ResolveOptions = %+v, want prefix p: and Keyed", cfg)
	}
}

// The leased-shares mode gives every permit its process's share's lease:
// a per-call WithLeaseTTL is refused, not ignored.
func TestLeasedRefusesPerCallLeaseTTL(t *testing.T) {
	c, _ := miniClient(t)
	s := core.NewRedis(c, "leased-ttl", 2, core.WithLeasedShares())
	defer s.Close()
	ctx := context.Background()
	if p, err := s.TryAcquire(ctx, core.WithLeaseTTL(time.Minute)); !errors.Is(err, core.ErrInvalidArgument) || !strings.Contains(err.Error(), "WithLeaseTTL") {
		t.Fatalf("TryAcquire WithLeaseTTL = %v, %v; want an ErrInvalidArgument naming WithLeaseTTL", p, err)
	}
	p, err := s.Acquire(ctx)
	ok(t, err)
	ok(t, p.Release(ctx))
}
