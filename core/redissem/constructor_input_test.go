package redissem_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/internal/servertest"
)

func TestRedisBadInputPanics(t *testing.T) {
	c, _ := miniClient(t)
	// Each constructor's panic names its package: this package's for its
	// own checks, core's for the values of the options it forwards to core
	// (WithKeyPrefix, WithDefaultLeaseTTL) and for core's constructors.
	cases := map[string]struct {
		pkg string
		f   func()
	}{
		"nil client":     {"redissem: ", func() { redissem.New(nil, "x", 1) }},
		"empty name":     {"redissem: ", func() { redissem.New(c, "", 1) }},
		"brace in name":  {"redissem: ", func() { redissem.New(c, "a{b", 1) }},
		"close brace":    {"redissem: ", func() { redissem.New(c, "a}b", 1) }},
		"space in name":  {"redissem: ", func() { redissem.New(c, "a b", 1) }},
		"zero limit":     {"redissem: ", func() { redissem.New(c, "x", 0) }},
		"negative limit": {"redissem: ", func() { redissem.New(c, "x", -1) }},
		"brace prefix":   {"core: ", func() { redissem.New(c, "x", 1, redissem.WithKeyPrefix("p{")) }},
		"short lease":    {"core: ", func() { redissem.New(c, "x", 1, redissem.WithDefaultLeaseTTL(time.Millisecond)) }},
		"keyed limit":    {"redissem: ", func() { redissem.NewKeyed(c, "x", 0) }},
		"local limit":    {"core: ", func() { core.NewLocal(0) }},
		"fail local":     {"core: ", func() { core.FailLocal(0) }},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil {
					t.Fatal("no panic")
				}
				if msg := fmt.Sprint(r); !strings.HasPrefix(msg, tc.pkg) {
					t.Fatalf("panic %q does not name the package (want a %q message)", msg, tc.pkg)
				}
			}()
			tc.f()
		})
	}
}

func TestRedisKeysShareHashTag(t *testing.T) {
	c, m := miniClient(t)
	s := redissem.New(c, "route-a", 2)
	defer s.Close()
	ctx := context.Background()
	p := acquire(t, s)
	keys := m.Keys()
	if len(keys) < 3 {
		t.Fatalf("keys = %v", keys)
	}
	for _, k := range keys {
		if !strings.HasPrefix(k, "distsem:{route-a}:") {
			t.Fatalf("key %q is outside the hash tag {route-a}", k)
		}
		if ttl := m.TTL(k); ttl <= 0 {
			t.Fatalf("key %q has no idle expiry", k)
		}
	}
	ok(t, p.Release(ctx))
}

// TestRedisManyWaitersSmallPool queues 10,000 waiters of one process on a
// pool of 20 connections: waiting holds no connection.
func TestRedisManyWaitersSmallPool(t *testing.T) {
	// 10,000 Acquire calls arrive at once and share 20 connections: allow
	// them to queue for a connection longer than go-redis's default 4s.
	c := redis.NewClient(&redis.Options{Addr: servertest.RedisAddr(t), PoolSize: 20, PoolTimeout: time.Minute})
	defer c.Close()
	s := redissem.New(c, "many", 10, redissem.WithKeyPrefix(uniquePrefix(t)), redissem.WithOperationTimeout(time.Minute))
	defer s.Close()
	ctx := context.Background()
	hold := acquire(t, s, core.WithWeight(10))
	const n = 10000
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := s.Acquire(ctx)
			if err == nil {
				err = p.Release(ctx)
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	deadline := time.Now().Add(2 * time.Minute)
	for st := stats(t, s); st.Waiting < n; st = stats(t, s) {
		select {
		case err := <-errs:
			t.Fatalf("a waiter failed while %d were queued: %v", st.Waiting, err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d waiters queued", st.Waiting, n)
		}
	}
	if total := c.PoolStats().TotalConns; total > 21 { // 20 + the subscriber
		t.Fatalf("%d connections for %d waiters", total, n)
	}
	ok(t, hold.Release(ctx))
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	wantStats(t, s, 0, 0)
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

func TestObserverEvents(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			var mu sync.Mutex
			kinds := map[core.EventKind]int{}
			queued := make(chan struct{}, 1)
			obs := core.ObserverFunc(func(e core.Event) {
				mu.Lock()
				kinds[e.Kind]++
				mu.Unlock()
				if e.Kind == core.EventWait {
					queued <- struct{}{}
				}
			})
			s := b.new(t, 1, optObserver(obs))
			ctx := context.Background()
			p := acquire(t, s)
			cctx, cancel := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() { _, _ = s.Acquire(cctx); close(done) }()
			// The Acquire knows it is queued (a cancel before its reply
			// came back would report no wait at all).
			<-queued
			cancel()
			<-done
			ok(t, p.Release(ctx))
			mu.Lock()
			defer mu.Unlock()
			want := map[core.EventKind]int{core.EventAcquired: 1, core.EventWait: 1, core.EventAbandoned: 1, core.EventReleased: 1}
			for k, n := range want {
				if kinds[k] != n {
					t.Fatalf("%v events = %d, want %d (all: %v)", k, kinds[k], n, kinds)
				}
			}
		})
	}
}

// TestRedisTokensSurviveLostState: a failover that lost the last writes
// leaves an old token counter behind, and idle keys expire; either way the
// next token must still be larger than every token handed out before.
func TestRedisTokensSurviveLostState(t *testing.T) {
	c, m := miniClient(t)
	s := redissem.New(c, "tok", 1)
	defer s.Close()
	ctx := context.Background()
	last := int64(0)
	next := func() {
		t.Helper()
		p := acquire(t, s)
		if p.Token() <= last {
			t.Fatalf("token %d after %d: not increasing", p.Token(), last)
		}
		last = p.Token()
		ok(t, p.Release(ctx))
	}
	next()
	next()
	m.HSet("distsem:{tok}:m", "tok", "5") // a stale counter
	next()
	for _, k := range m.Keys() { // the keys expired while idle
		m.Del(k)
	}
	next()
}
