package redissem_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/internal/servertest"
	"github.com/distsem/distsem/internal/testwait"
)

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
	var st core.Stats
	testwait.Until(t, 2*time.Minute, fmt.Sprintf("not all %d waiters queued", n), func() bool {
		if st = stats(t, s); st.Waiting >= n {
			return true
		}
		select {
		case err := <-errs:
			t.Fatalf("a waiter failed while %d were queued: %v", st.Waiting, err)
		default:
		}
		return false
	})
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
