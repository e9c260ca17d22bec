package redissem_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/backend"
	"github.com/distsem/distsem/core/redissem"
)

// A constructor refuses, by name, every option it cannot honour, instead of
// ignoring it: core's (NewLocal, NewLocalKeyed, NewKeyed, ResolveOptions)
// with a "core: …" panic, this package's with a "redissem: …" one.
func TestConstructorsRefuseOptionsTheyCannotHonour(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	defer c.Close()
	clients := []redis.UniversalClient{c}
	newSem := func(core.Key, int64) core.LimitSemaphore { return core.NewLocal(1) }
	for _, tc := range []struct {
		name, prefix, want string
		build              func()
	}{
		{"NewLocal WithKeyPrefix", "core: ", "NewLocal does not take WithKeyPrefix", func() { core.NewLocal(1, core.WithKeyPrefix("x:")) }},
		{"NewLocal WithLimits", "core: ", "NewLocal does not take WithLimits", func() { core.NewLocal(1, core.WithLimits(map[string]int64{"a": 1})) }},
		{"NewLocal WithFailurePolicy", "core: ", "NewLocal does not take WithFailurePolicy", func() { core.NewLocal(1, core.WithFailurePolicy(core.FailOpen)) }},
		{"NewLocal WithDefaultLeaseTTL", "core: ", "NewLocal does not take WithDefaultLeaseTTL", func() { core.NewLocal(1, core.WithDefaultLeaseTTL(time.Second)) }},
		{"NewLocal WithOnError", "core: ", "NewLocal does not take WithOnError", func() { core.NewLocal(1, core.WithOnError(func(error) {})) }},
		{"NewLocalKeyed WithName", "core: ", "NewLocalKeyed does not take WithName", func() { core.NewLocalKeyed(1, core.WithName("n")) }},
		{"NewLocalKeyed WithDefaultLeaseTTL", "core: ", "NewLocalKeyed does not take WithDefaultLeaseTTL", func() { core.NewLocalKeyed(1, core.WithDefaultLeaseTTL(time.Second)) }},
		{"ResolveOptions WithName", "core: ", "does not take WithName", func() { backend.ResolveOptions(core.WithName("n")) }},
		{"NewKeyed WithName", "core: ", "NewKeyed does not take WithName", func() { backend.NewKeyed("k", 1, newSem, nil, core.WithName("n")) }},
		{"New WithMaxIdleKeys", "redissem: ", "New does not take WithLimits or WithMaxIdleKeys", func() { redissem.New(c, "s", 1, redissem.WithMaxIdleKeys(3)) }},
		{"New WithLimits", "redissem: ", "New does not take WithLimits or WithMaxIdleKeys", func() { redissem.New(c, "s", 1, redissem.WithLimits(nil)) }},
		{"New WithClockDrift", "redissem: ", "New does not take WithClockDrift or WithMasterTimeout", func() { redissem.New(c, "s", 1, redissem.WithClockDrift(time.Millisecond)) }},
		{"NewLeased WithMaxIdleKeys", "redissem: ", "NewLeased does not take WithLimits or WithMaxIdleKeys", func() { redissem.NewLeased(c, "s", 1, redissem.WithMaxIdleKeys(3)) }},
		{"NewLeased WithMasterTimeout", "redissem: ", "NewLeased does not take WithClockDrift or WithMasterTimeout", func() { redissem.NewLeased(c, "s", 1, redissem.WithMasterTimeout(time.Second)) }},
		{"NewKeyed WithMasterTimeout", "redissem: ", "NewKeyed does not take WithClockDrift or WithMasterTimeout", func() { redissem.NewKeyed(c, "s", 1, redissem.WithMasterTimeout(time.Second)) }},
		{"NewLeasedKeyed WithClockDrift", "redissem: ", "NewLeasedKeyed does not take WithClockDrift or WithMasterTimeout", func() { redissem.NewLeasedKeyed(c, "s", 1, redissem.WithClockDrift(time.Millisecond)) }},
		{"NewQuorum WithMaxIdleKeys", "redissem: ", "NewQuorum does not take WithLimits or WithMaxIdleKeys", func() { redissem.NewQuorum(clients, "s", 1, redissem.WithMaxIdleKeys(3)) }},
		{"NewAllOf WithLimits", "redissem: ", "NewAllOf does not take WithLimits or WithMaxIdleKeys", func() { redissem.NewAllOf(clients, "s", 1, redissem.WithLimits(nil)) }},
		{"NewLeased WithFairness", "redissem: ", "NewLeased does not take WithFairness", func() { redissem.NewLeased(c, "s", 1, redissem.WithFairness(core.Fairness{})) }},
		{"NewLeasedKeyed WithFairness", "redissem: ", "NewLeasedKeyed does not take WithFairness", func() { redissem.NewLeasedKeyed(c, "s", 1, redissem.WithFairness(core.Fairness{})) }},
		{"NewQuorum WithFairness", "redissem: ", "NewQuorum does not take WithFairness", func() { redissem.NewQuorum(clients, "s", 1, redissem.WithFairness(core.Fairness{})) }},
		{"NewAllOf WithFairness", "redissem: ", "NewAllOf does not take WithFairness", func() { redissem.NewAllOf(clients, "s", 1, redissem.WithFairness(core.Fairness{})) }},
		{"New WithFairness above the limit", "redissem: ", "New: WithFairness: core: invalid argument: reserve 2 of level 0", func() { redissem.New(c, "s", 1, redissem.WithFairness(core.Fairness{Reserves: []int64{2}})) }},
		{"NewKeyed WithFairness weight 0", "redissem: ", "NewKeyed: WithFairness: core: invalid argument: weight 0", func() {
			redissem.NewKeyed(c, "s", 1, redissem.WithFairness(core.Fairness{Weights: map[string]int64{"a": 0}}))
		}},
		{"NewLeased WithReplicaAck", "redissem: ", "NewLeased does not take WithReplicaAck", func() { redissem.NewLeased(c, "s", 1, redissem.WithReplicaAck(1, time.Millisecond)) }},
		{"NewLeasedKeyed WithReplicaAck", "redissem: ", "NewLeasedKeyed does not take WithReplicaAck", func() { redissem.NewLeasedKeyed(c, "s", 1, redissem.WithReplicaAck(1, time.Millisecond)) }},
		{"NewQuorum WithReplicaAck", "redissem: ", "NewQuorum does not take WithReplicaAck", func() { redissem.NewQuorum(clients, "s", 1, redissem.WithReplicaAck(1, time.Millisecond)) }},
		{"NewAllOf WithReplicaAck", "redissem: ", "NewAllOf does not take WithReplicaAck", func() { redissem.NewAllOf(clients, "s", 1, redissem.WithReplicaAck(1, time.Millisecond)) }},
		{"New WithReplicaAck no replica", "redissem: ", "New: WithReplicaAck: replicas must be at least 1, got 0", func() { redissem.New(c, "s", 1, redissem.WithReplicaAck(0, time.Millisecond)) }},
		{"NewKeyed WithReplicaAck no timeout", "redissem: ", "NewKeyed: WithReplicaAck: timeout must be positive, got 0s", func() { redissem.NewKeyed(c, "s", 1, redissem.WithReplicaAck(1, 0)) }},
		{"New WithReplicaAck timeout too long", "redissem: ", "New: WithReplicaAck: timeout 1s must be below the operation timeout 1s", func() { redissem.New(c, "s", 1, redissem.WithReplicaAck(1, time.Second)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				msg, _ := recover().(string)
				if !strings.HasPrefix(msg, tc.prefix) || !strings.Contains(msg, tc.want) {
					t.Fatalf("panic %q, want a %q one naming %q", msg, tc.prefix, tc.want)
				}
			}()
			tc.build()
		})
	}
	// What they take, they take.
	core.NewLocal(1, core.WithObserver(core.ObserverFunc(func(core.Event) {})), core.WithName("n"))
	core.NewLocalKeyed(1, core.WithObserver(core.ObserverFunc(func(core.Event) {})), core.WithLimits(map[string]int64{"a": 2}), core.WithMaxIdleKeys(1))
	if cfg := backend.ResolveOptions(core.WithKeyPrefix("p:"), core.WithLimits(nil)); cfg.KeyPrefix != "p:" || !cfg.Keyed {
		t.Fatalf("ResolveOptions = %+v, want prefix p: and Keyed", cfg)
	}
	common := []redissem.Option{redissem.WithKeyPrefix("p:"), redissem.WithDefaultLeaseTTL(time.Second),
		redissem.WithObserver(core.ObserverFunc(func(core.Event) {})), redissem.WithFailurePolicy(core.FailLocal(1)),
		redissem.WithOnError(func(error) {}), redissem.WithOperationTimeout(time.Second),
		redissem.WithCircuitBreaker(3, time.Second), redissem.WithOutageGrace(time.Second)}
	keyed := append(slices.Clone(common), redissem.WithLimits(map[string]int64{"a": 2}), redissem.WithMaxIdleKeys(1))
	quorum := append(slices.Clone(common), redissem.WithClockDrift(time.Millisecond), redissem.WithMasterTimeout(time.Second))
	fairness := redissem.WithFairness(core.Fairness{Reserves: []int64{0, 1}, Weights: map[string]int64{"a": 2}})
	for _, s := range []interface{ Close() error }{
		redissem.New(c, "s", 1, append(slices.Clone(common), fairness, redissem.WithReplicaAck(1, 100*time.Millisecond))...),
		redissem.NewKeyed(c, "s", 1, append(slices.Clone(keyed), fairness)...),
		redissem.NewLeased(c, "s", 1, common...),
		redissem.NewKeyed(c, "s", 1, append(slices.Clone(keyed), redissem.WithReplicaAck(2, 100*time.Millisecond))...),
		redissem.NewLeasedKeyed(c, "s", 1, keyed...),
		redissem.NewQuorum(clients, "s", 1, quorum...),
		redissem.NewAllOf(clients, "s", 1, quorum...),
	} {
		ok(t, s.Close())
	}
}

// The leased-shares mode gives every permit its process's share's lease:
// a per-call WithLeaseTTL is refused, not ignored.
func TestLeasedRefusesPerCallLeaseTTL(t *testing.T) {
	c, _ := miniClient(t)
	s := redissem.NewLeased(c, "leased-ttl", 2)
	defer s.Close()
	ctx := context.Background()
	if p, err := s.TryAcquire(ctx, core.WithLeaseTTL(time.Minute)); !errors.Is(err, core.ErrInvalidArgument) || !strings.Contains(err.Error(), "WithLeaseTTL") {
		t.Fatalf("TryAcquire WithLeaseTTL = %v, %v; want an ErrInvalidArgument naming WithLeaseTTL", p, err)
	}
	p, err := s.Acquire(ctx)
	ok(t, err)
	ok(t, p.Release(ctx))
}
