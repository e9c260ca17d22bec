package redissem_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/internal/servertest"
	"github.com/distsem/distsem/internal/testwait"
)

// TestRedisLeaseLost ends a lease behind the holder's back (the server
// clock jumps past it) and checks Lost fires and Release reports it.
func TestRedisLeaseLost(t *testing.T) {
	c, m := miniClient(t)
	s := redissem.New(c, "lost", 1, redissem.WithDefaultLeaseTTL(300*time.Millisecond))
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

// TestRedisLeaseRemovedOnRealServer drops the lease ends on a real server,
// as a failover that lost the write would: the holder's process re-asserts
// the permit (redis_reassert.go), which is then held as before.
func TestRedisLeaseRemovedOnRealServer(t *testing.T) {
	c := realClient(t)
	prefix := uniquePrefix(t)
	s := redissem.New(c, "gone", 1, redissem.WithKeyPrefix(prefix), redissem.WithDefaultLeaseTTL(300*time.Millisecond))
	defer s.Close()
	ctx := context.Background()
	p := acquire(t, s)
	ok(t, c.Del(ctx, prefix+"{gone}:h").Err())
	testwait.Until(t, 10*time.Second, "the permit was not re-asserted", func() bool {
		return c.ZScore(ctx, prefix+"{gone}:h", p.ID()).Err() == nil
	})
	waitRenewals(t, c, prefix, "gone", p.ID(), 2)
	select {
	case <-p.Lost():
		t.Fatal("a permit whose lease vanished was lost, not re-asserted")
	default:
	}
	wantStats(t, s, 1, 0)
	ok(t, p.Release(ctx))
}

// TestRedisQueueRemovedOnRealServer drops the queue on a real server while
// a waiter of another process waits, as an eviction or a failover that lost
// the write would. The waiter must still get the permit when the holder
// releases it: its heartbeat finds it missing from the queue (the counts
// disagree with the queue's size), and it queues again. The old scripts
// kept such a waiter alive at every heartbeat and never granted it.
func TestRedisQueueRemovedOnRealServer(t *testing.T) {
	c := realClient(t)
	prefix := uniquePrefix(t)
	ttl := redissem.WithDefaultLeaseTTL(300 * time.Millisecond)
	holder := redissem.New(c, "noq", 1, redissem.WithKeyPrefix(prefix), ttl)
	defer holder.Close()
	obs, queued := queueObserver()
	waiter := redissem.New(c, "noq", 1, redissem.WithKeyPrefix(prefix), ttl, redissem.WithObserver(obs))
	defer waiter.Close()
	ctx := context.Background()
	p := acquire(t, holder)
	got := make(chan error, 1)
	go func() {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		wp, err := waiter.Acquire(wctx)
		if err == nil {
			err = wp.Release(ctx)
		}
		got <- err
	}()
	<-queued
	ok(t, c.Del(ctx, prefix+"{noq}:q").Err())
	ok(t, p.Release(ctx))
	if err := <-got; err != nil {
		t.Fatalf("the waiter whose queue entry was lost: %v, want the permit", err)
	}
	wantStats(t, holder, 0, 0)
}

// TestRedisRenewalKeepsLease holds a permit for several lease TTLs.
func TestRedisRenewalKeepsLease(t *testing.T) {
	c := realClient(t)
	s := redissem.New(c, "renew", 1, redissem.WithKeyPrefix(uniquePrefix(t)), redissem.WithDefaultLeaseTTL(200*time.Millisecond))
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
	dead := redissem.New(c, "abandon", 1, redissem.WithKeyPrefix(prefix), redissem.WithDefaultLeaseTTL(ttl))
	live := redissem.New(c, "abandon", 1, redissem.WithKeyPrefix(prefix), redissem.WithDefaultLeaseTTL(ttl))
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

// TestRedisLostWhenUnreachable: renewal keeps failing (the server is gone)
// for longer than the lease, so Lost must fire.
func TestRedisLostWhenUnreachable(t *testing.T) {
	c, m := miniClient(t)
	var errs atomic.Int64
	s := redissem.New(c, "down", 1, redissem.WithDefaultLeaseTTL(300*time.Millisecond),
		redissem.WithOnError(func(error) { errs.Add(1) }))
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
	c := redis.NewClient(&redis.Options{Addr: servertest.RedisAddr(t), ClientName: name})
	defer c.Close()
	s := redissem.New(c, "resub", 1, redissem.WithKeyPrefix(uniquePrefix(t)), redissem.WithDefaultLeaseTTL(time.Second))
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
