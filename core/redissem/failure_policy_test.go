package redissem_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/internal/faultproxy"
	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/internal/servertest"
)

// A waiter queued before an outage gets the failure policy once
// the backend has been unreachable for the outage grace.
func TestFaultQueuedWaiterGetsPolicy(t *testing.T) {
	p := newFaultProxy(t, servertest.RedisAddr(t))
	prefix := uniquePrefix(t)
	holder := redissem.New(realClient(t), "outage", 1, redissem.WithKeyPrefix(prefix))
	defer holder.Close()
	const ttl = time.Second
	obs, queued := queueObserver()
	s := redissem.New(proxyClient(t, p, nil), "outage", 1, redissem.WithKeyPrefix(prefix), redissem.WithDefaultLeaseTTL(ttl),
		redissem.WithFailurePolicy(core.FailOpen), redissem.WithOperationTimeout(200*time.Millisecond),
		redissem.WithOutageGrace(200*time.Millisecond), redissem.WithObserver(obs))
	defer s.Close()
	ctx := context.Background()
	hp := acquire(t, holder, core.WithLeaseTTL(time.Minute))
	defer hp.Release(ctx)
	res := make(chan *core.Permit, 1)
	go func() { pm, _ := s.Acquire(ctx); res <- pm }()
	<-queued // the waiter has its reply: it is queued
	ok(t, p.SetMode(faultproxy.Blackhole))
	defer p.SetMode(faultproxy.Pass)
	// Noticed by the next heartbeat (TTL/3), failed after the operation
	// timeout, then the grace.
	within(t, ttl/3+400*time.Millisecond+5*slack, "fail-open permit for a queued waiter", func() error {
		if pm := <-res; pm == nil || pm.Token() != 0 {
			return fmt.Errorf("permit %v, want a fail-open permit with token 0", pm)
		}
		return nil
	})
}

// The first fallback permit comes within the operation timeout,
// and once the breaker is open the policy applies without a round trip.
func TestFaultFailFastAndBreaker(t *testing.T) {
	p := newFaultProxy(t, servertest.RedisAddr(t))
	s := redissem.New(proxyClient(t, p, nil), "fast", 1, redissem.WithKeyPrefix(uniquePrefix(t)),
		redissem.WithFailurePolicy(core.FailOpen), redissem.WithOperationTimeout(300*time.Millisecond),
		redissem.WithCircuitBreaker(2, time.Minute))
	defer s.Close()
	ctx := context.Background()
	pm, err := s.TryAcquire(ctx) // a connection exists before the fault
	ok(t, err)
	ok(t, pm.Release(ctx))
	ok(t, p.SetMode(faultproxy.Blackhole))
	defer p.SetMode(faultproxy.Pass)
	for i := range 2 {
		within(t, 300*time.Millisecond+slack, "fallback permit in a blackhole", func() error {
			if pm, err := s.TryAcquire(ctx); err != nil || pm.Token() != 0 {
				return fmt.Errorf("try %d: %v, %v; want a fail-open permit", i, pm, err)
			}
			return nil
		})
	}
	// Open: even a ctx of 50ms gets the policy, not a deadline error.
	dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	within(t, 50*time.Millisecond+slack, "breaker open", func() error {
		if pm, err := s.TryAcquire(dctx); err != nil || pm.Token() != 0 {
			return fmt.Errorf("breaker open: %v, %v; want a fail-open permit", pm, err)
		}
		return nil
	})
}

// A fail-local permit carries token 0, as documented.
func TestFaultFailLocalTokenZero(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 100 * time.Millisecond, MaxRetries: -1})
	defer c.Close()
	s := redissem.New(c, "x", 10, redissem.WithFailurePolicy(core.FailLocal(2)))
	defer s.Close()
	ctx := context.Background()
	for _, try := range []bool{true, false} {
		var pm *core.Permit
		var err error
		if try {
			pm, err = s.TryAcquire(ctx)
		} else {
			pm, err = s.Acquire(ctx)
		}
		ok(t, err)
		if pm.Token() != 0 {
			t.Fatalf("try=%v: fail-local permit has token %d, want 0", try, pm.Token())
		}
		ok(t, pm.Release(ctx))
	}
}

// Callers whose deadline ends their calls first (here 300ms,
// against an operation timeout of 1s) still open the breaker.
func TestFaultBreakerOpensOnCallerDeadlines(t *testing.T) {
	p := newFaultProxy(t, servertest.RedisAddr(t))
	s := redissem.New(proxyClient(t, p, nil), "dl", 1, redissem.WithKeyPrefix(uniquePrefix(t)),
		redissem.WithFailurePolicy(core.FailOpen))
	defer s.Close()
	ctx := context.Background()
	ok(t, tryAcquire(t, s).Release(ctx))
	ok(t, p.SetMode(faultproxy.Blackhole))
	defer p.SetMode(faultproxy.Pass)
	for range 3 {
		dctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		_, _ = s.TryAcquire(dctx) // a deadline error
		cancel()
	}
	dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if pm, err := s.TryAcquire(dctx); err != nil || pm.Token() != 0 {
		t.Fatalf("after three silent calls: %v, %v; want a fail-open permit at once", pm, err)
	}
}

func TestFailurePolicies(t *testing.T) {
	dead := func(t *testing.T) *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 100 * time.Millisecond, MaxRetries: -1})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	ctx := context.Background()
	t.Run("closed", func(t *testing.T) {
		var seen []error
		var mu sync.Mutex
		s := redissem.New(dead(t), "x", 1, redissem.WithOnError(func(err error) { mu.Lock(); seen = append(seen, err); mu.Unlock() }))
		defer s.Close()
		for _, try := range []bool{true, false} {
			var err error
			if try {
				_, err = s.TryAcquire(ctx)
			} else {
				_, err = s.Acquire(ctx)
			}
			if !errors.Is(err, core.ErrUnavailable) || errors.Is(err, core.ErrNoPermit) {
				t.Fatalf("try=%v: err = %v, want ErrUnavailable only", try, err)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if len(seen) != 2 {
			t.Fatalf("OnError called %d times, want 2", len(seen))
		}
	})
	t.Run("open", func(t *testing.T) {
		s := redissem.New(dead(t), "x", 1, redissem.WithFailurePolicy(core.FailOpen))
		defer s.Close()
		for range 3 {
			p, err := s.Acquire(ctx)
			if err != nil || p.Token() != 0 {
				t.Fatalf("fail open: %v, %v", p, err)
			}
		}
	})
	t.Run("local", func(t *testing.T) {
		s := redissem.New(dead(t), "x", 10, redissem.WithFailurePolicy(core.FailLocal(1)))
		defer s.Close()
		p, err := s.TryAcquire(ctx)
		ok(t, err)
		if _, err := s.TryAcquire(ctx); !errors.Is(err, core.ErrNoPermit) {
			t.Fatalf("fallback of 1 gave a second permit: %v", err)
		}
		ok(t, p.Release(ctx))
		if _, err := s.TryAcquire(ctx); err != nil {
			t.Fatalf("fallback permit not returned by Release: %v", err)
		}
	})
}
