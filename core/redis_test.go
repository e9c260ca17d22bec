package core_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/coretest"
)

func TestRedisBadInputPanics(t *testing.T) {
	c, _ := miniClient(t)
	cases := map[string]func(){
		"nil client":     func() { core.NewRedis(nil, "x", 1) },
		"empty name":     func() { core.NewRedis(c, "", 1) },
		"brace in name":  func() { core.NewRedis(c, "a{b", 1) },
		"close brace":    func() { core.NewRedis(c, "a}b", 1) },
		"space in name":  func() { core.NewRedis(c, "a b", 1) },
		"zero limit":     func() { core.NewRedis(c, "x", 0) },
		"negative limit": func() { core.NewRedis(c, "x", -1) },
		"brace prefix":   func() { core.NewRedis(c, "x", 1, core.WithKeyPrefix("p{")) },
		"short lease":    func() { core.NewRedis(c, "x", 1, core.WithDefaultLeaseTTL(time.Millisecond)) },
		"keyed limit":    func() { core.NewRedisKeyed(c, "x", 0) },
		"local limit":    func() { core.NewLocal(0) },
		"fail local":     func() { core.FailLocal(0) },
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil {
					t.Fatal("no panic")
				}
				if msg := fmt.Sprint(r); !strings.HasPrefix(msg, "core: ") {
					t.Fatalf("panic %q does not name the package", msg)
				}
			}()
			f()
		})
	}
}

func TestRedisKeysShareHashTag(t *testing.T) {
	c, m := miniClient(t)
	s := core.NewRedis(c, "route-a", 2)
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

// TestRedisLeaseLost ends a lease behind the holder's back (the server
// clock jumps past it) and checks Lost fires and Release reports it.
func TestRedisLeaseLost(t *testing.T) {
	c, m := miniClient(t)
	s := core.NewRedis(c, "lost", 1, core.WithDefaultLeaseTTL(300*time.Millisecond))
	defer s.Close()
	ctx := context.Background()
	p := acquire(t, s)
	m.SetTime(time.Now().Add(time.Hour))
	select {
	case <-p.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("Lost not closed after the lease ended")
	}
	if err := p.Release(ctx); !errors.Is(err, core.ErrNotHeld) {
		t.Fatalf("Release of a lost permit: %v, want ErrNotHeld", err)
	}
	wantStats(t, s, 0, 0)
}

// TestRedisLeaseRemovedOnRealServer drops the holder entry on a real
// server, as a failover that lost the write would.
func TestRedisLeaseRemovedOnRealServer(t *testing.T) {
	c := realClient(t)
	prefix := uniquePrefix(t)
	s := core.NewRedis(c, "gone", 1, core.WithKeyPrefix(prefix), core.WithDefaultLeaseTTL(300*time.Millisecond))
	defer s.Close()
	ctx := context.Background()
	p := acquire(t, s)
	ok(t, c.Del(ctx, prefix+"{gone}:h", prefix+"{gone}:hi").Err())
	select {
	case <-p.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("Lost not closed after the lease vanished")
	}
	if err := p.Release(ctx); !errors.Is(err, core.ErrNotHeld) {
		t.Fatalf("Release: %v, want ErrNotHeld", err)
	}
}

// TestRedisRenewalKeepsLease holds a permit for several lease TTLs.
func TestRedisRenewalKeepsLease(t *testing.T) {
	c := realClient(t)
	s := core.NewRedis(c, "renew", 1, core.WithKeyPrefix(uniquePrefix(t)), core.WithDefaultLeaseTTL(200*time.Millisecond))
	defer s.Close()
	ctx := context.Background()
	p := acquire(t, s)
	deadline := time.Now().Add(time.Second) // five leases
	for time.Now().Before(deadline) {
		select {
		case <-p.Lost():
			t.Fatal("lease lost while the process was renewing it")
		case <-time.After(50 * time.Millisecond):
		}
		if _, err := s.TryAcquire(ctx); !errors.Is(err, core.ErrNoPermit) {
			t.Fatalf("the held permit was handed out again: %v", err)
		}
	}
	ok(t, p.Release(ctx))
}

// TestRedisAbandonedLeaseGoesToWaiter: a holder whose process stops
// renewing (Close, like a crash) gives its permit to the next waiter of
// another process when the lease ends, without any release.
func TestRedisAbandonedLeaseGoesToWaiter(t *testing.T) {
	c := realClient(t)
	prefix := uniquePrefix(t)
	const ttl = 300 * time.Millisecond
	dead := core.NewRedis(c, "abandon", 1, core.WithKeyPrefix(prefix), core.WithDefaultLeaseTTL(ttl))
	live := core.NewRedis(c, "abandon", 1, core.WithKeyPrefix(prefix), core.WithDefaultLeaseTTL(ttl))
	defer live.Close()
	acquire(t, dead)
	ok(t, dead.Close())
	ctx, cancel := context.WithTimeout(context.Background(), ttl+time.Second)
	defer cancel()
	p, err := live.Acquire(ctx)
	if err != nil {
		t.Fatalf("waiter not granted within lease TTL + 1s: %v", err)
	}
	ok(t, p.Release(context.Background()))
}

// TestRedisManyWaitersSmallPool queues 10,000 waiters of one process on a
// pool of 20 connections: waiting holds no connection.
func TestRedisManyWaitersSmallPool(t *testing.T) {
	// 10,000 Acquire calls arrive at once and share 20 connections: allow
	// them to queue for a connection longer than go-redis's default 4s.
	c := redis.NewClient(&redis.Options{Addr: coretest.RedisAddr(t), PoolSize: 20, PoolTimeout: time.Minute})
	defer c.Close()
	s := core.NewRedis(c, "many", 10, core.WithKeyPrefix(uniquePrefix(t)))
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
		s := core.NewRedis(dead(t), "x", 1, core.WithOnError(func(err error) { mu.Lock(); seen = append(seen, err); mu.Unlock() }))
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
		s := core.NewRedis(dead(t), "x", 1, core.WithFailurePolicy(core.FailOpen))
		defer s.Close()
		for range 3 {
			p, err := s.Acquire(ctx)
			if err != nil || p.Token() != 0 {
				t.Fatalf("fail open: %v, %v", p, err)
			}
		}
	})
	t.Run("local", func(t *testing.T) {
		s := core.NewRedis(dead(t), "x", 10, core.WithFailurePolicy(core.FailLocal(1)))
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
			obs := core.ObserverFunc(func(e core.Event) { mu.Lock(); kinds[e.Kind]++; mu.Unlock() })
			s := b.new(t, 1, core.WithObserver(obs))
			ctx := context.Background()
			p := acquire(t, s)
			cctx, cancel := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() { _, _ = s.Acquire(cctx); close(done) }()
			waitQueued(t, s, 1)
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

// TestRedisLostWhenUnreachable: renewal keeps failing (the server is gone)
// for longer than the lease, so Lost must fire.
func TestRedisLostWhenUnreachable(t *testing.T) {
	c, m := miniClient(t)
	var errs atomic.Int64
	s := core.NewRedis(c, "down", 1, core.WithDefaultLeaseTTL(300*time.Millisecond),
		core.WithOnError(func(error) { errs.Add(1) }))
	defer s.Close()
	p := acquire(t, s)
	m.Close()
	select {
	case <-p.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("Lost not closed while renewal failed past the lease")
	}
	if errs.Load() == 0 {
		t.Fatal("OnError never saw the failed renewals")
	}
	if err := p.Release(context.Background()); !errors.Is(err, core.ErrUnavailable) {
		t.Fatalf("Release with the server gone: %v, want ErrUnavailable", err)
	}
}

// TestRedisGrantSurvivesLostSubscription kills this process's pub/sub
// connection while a waiter waits: the grant published meanwhile is lost,
// and the waiter must still get its permit (resubscribe and heartbeat).
func TestRedisGrantSurvivesLostSubscription(t *testing.T) {
	name := "resub-" + uniquePrefix(t)
	c := redis.NewClient(&redis.Options{Addr: coretest.RedisAddr(t), ClientName: name})
	defer c.Close()
	s := core.NewRedis(c, "resub", 1, core.WithKeyPrefix(uniquePrefix(t)), core.WithDefaultLeaseTTL(time.Second))
	defer s.Close()
	ctx := context.Background()
	holder := acquire(t, s)
	got := make(chan error, 1)
	go func() {
		p, err := s.Acquire(ctx)
		if err == nil {
			err = p.Release(ctx)
		}
		got <- err
	}()
	waitQueued(t, s, 1)
	// Kill only this test's subscriber: other tests share the server.
	list, err := c.Do(ctx, "CLIENT", "LIST", "TYPE", "pubsub").Text()
	ok(t, err)
	killed := 0
	for _, line := range strings.Split(list, "\n") {
		if strings.Contains(line, " name="+name+" ") {
			id := strings.TrimPrefix(strings.Fields(line)[0], "id=")
			ok(t, c.Do(ctx, "CLIENT", "KILL", "ID", id).Err())
			killed++
		}
	}
	if killed != 1 {
		t.Fatalf("killed %d subscribers, want 1:\n%s", killed, list)
	}
	ok(t, holder.Release(ctx))
	select {
	case err := <-got:
		ok(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("waiter never granted after its subscription was killed")
	}
}
