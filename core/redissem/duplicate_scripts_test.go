package redissem_test

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/internal/servertest"
)

// rawCount reads what Redis records for a semaphore: the used count the
// scripts keep, the number of holders and of queued waiters (the key layout
// of core/lua/lib.lua: per id a field "#id" of the state hash, "h…" for a
// holder; the queue's last member is a sentinel "").
func rawCount(t *testing.T, c *redis.Client, prefix, name string) (used string, holders, queued int64) {
	t.Helper()
	ctx := context.Background()
	tag := prefix + "{" + name + "}:"
	st, err := c.HGetAll(ctx, tag+"m").Result()
	ok(t, err)
	for f, v := range st {
		if strings.HasPrefix(f, "#") && strings.HasPrefix(v, "h") {
			holders++
		}
	}
	q, err := c.ZCount(ctx, tag+"q", "-inf", "(9007199254740992").Result()
	ok(t, err)
	return st["used"], holders, q
}

// Release and leave run twice: every script is idempotent per
// id, so a release or a leave that Redis runs twice (a go-redis retry, a
// late copy) changes the count once. The proxy runs every command twice;
// the client has one connection, so the next command on it passes the
// proxy only after the copy ran. (Stats, a heartbeat and an acquire that
// does not fit would repair a wrong count: the test reads it before any.)
func TestFaultRetriedReleaseAndLeaveKeepCapacity(t *testing.T) {
	p := newFaultProxy(t, servertest.RedisAddr(t))
	prefix := uniquePrefix(t)
	pc := proxyClient(t, p, &redis.Options{PoolSize: 1})
	s := redissem.New(pc, "dup", 2, redissem.WithKeyPrefix(prefix))
	defer s.Close()
	rc := realClient(t)
	other := redissem.New(rc, "dup", 2, redissem.WithKeyPrefix(prefix))
	defer other.Close()
	ctx := context.Background()
	ok(t, tryAcquire(t, s).Release(ctx)) // the script is loaded: EVALSHA runs it
	hold := tryAcquire(t, other)

	pm := tryAcquire(t, s)
	p.SetDuplicate(true)
	ok(t, pm.Release(ctx))
	p.SetDuplicate(false)
	ok(t, pc.Ping(ctx).Err()) // after the copy (not Stats: it repairs the count)
	if u, h, _ := rawCount(t, rc, prefix, "dup"); u != "1" || h != 1 {
		t.Fatalf("after a release run twice: used %s with %d holders, want 1 and 1", u, h)
	}

	hold2 := tryAcquire(t, other) // both permits held: the next Acquire queues
	cctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { _, err := s.Acquire(cctx); errc <- err }()
	waitQueued(t, other, 1)
	p.SetDuplicate(true)
	cancel()
	<-errc
	wantStats(t, other, 2, 0) // the leave ran
	p.SetDuplicate(false)
	ok(t, pc.Ping(ctx).Err()) // after the copy (not Stats: it repairs the count)
	if u, h, q := rawCount(t, rc, prefix, "dup"); u != "2" || h != 2 || q != 0 {
		t.Fatalf("after a leave run twice: used %s with %d holders, %d queued; want 2, 2, 0", u, h, q)
	}
	ok(t, hold.Release(ctx))
	ok(t, hold2.Release(ctx))
	if u, h, q := rawCount(t, rc, prefix, "dup"); u != "0" || h != 0 || q != 0 {
		t.Fatalf("at the end: used %s with %d holders, %d queued; want 0, 0, 0", u, h, q)
	}
}

// go-redis re-sends a script after a read timeout and Redis runs
// every copy; the copies must not count the holder twice. The proxy
// delivers the acquire twice.
func TestFaultRetriedAcquireKeepsCapacity(t *testing.T) {
	p := newFaultProxy(t, servertest.RedisAddr(t))
	prefix := uniquePrefix(t)
	s := redissem.New(proxyClient(t, p, nil), "retry", 2, redissem.WithKeyPrefix(prefix))
	defer s.Close()
	other := redissem.New(realClient(t), "retry", 2, redissem.WithKeyPrefix(prefix))
	defer other.Close()
	ctx := context.Background()
	ok(t, tryAcquire(t, s).Release(ctx)) // the script is loaded: EVALSHA runs it
	p.SetDuplicate(true)
	pm := tryAcquire(t, s)
	p.SetDuplicate(false)
	ok(t, pm.Release(ctx))
	// Both permits must be grantable again, at once.
	a, err := other.TryAcquire(ctx)
	ok(t, err)
	b, err := other.TryAcquire(ctx)
	ok(t, err)
	ok(t, a.Release(ctx))
	ok(t, b.Release(ctx))
}
