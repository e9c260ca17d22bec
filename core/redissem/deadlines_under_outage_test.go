package redissem_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core/internal/faultproxy"
	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/internal/servertest"
)

// A call that waits on Redis returns by its ctx's deadline, or at once when
// cancelled, while Redis is silent (a blackhole proxy), a new process's
// first call included.

// A queued Acquire returns by its deadline when Redis goes
// silent, and a cancelled one at once; the clean-up runs in the background.
func TestFaultDeadlineUnderBlackhole(t *testing.T) {
	p := newFaultProxy(t, servertest.RedisAddr(t))
	prefix := uniquePrefix(t)
	holder := redissem.New(realClient(t), "bh", 1, redissem.WithKeyPrefix(prefix))
	defer holder.Close()
	// Close waits for the round trips still stuck in the blackhole, which
	// end by the client's read and write timeouts: 1s each here.
	c := proxyClient(t, p, &redis.Options{ReadTimeout: time.Second, WriteTimeout: time.Second})
	s := redissem.New(c, "bh", 1, redissem.WithKeyPrefix(prefix), redissem.WithDefaultLeaseTTL(30*time.Second))
	ctx := context.Background()
	hp := acquire(t, holder)
	for _, cancelled := range []bool{false, true} {
		actx, cancel := context.WithTimeout(ctx, time.Hour)
		if !cancelled {
			cancel()
			actx, cancel = context.WithTimeout(ctx, 3*time.Second)
		}
		errc := make(chan error, 1)
		go func() { _, err := s.Acquire(actx); errc <- err }()
		waitQueued(t, holder, 1)
		ok(t, p.SetMode(faultproxy.Blackhole))
		start := time.Now()
		if cancelled {
			cancel()
		}
		within(t, 3*time.Second+slack, "queued Acquire under a blackhole", func() error {
			if err := <-errc; err == nil {
				return errors.New("granted under a blackhole")
			}
			return nil
		})
		if d, ok := actx.Deadline(); ok && !cancelled && time.Since(d) > slack {
			t.Fatalf("returned %v after its deadline", time.Since(d))
		}
		t.Logf("cancelled=%v: returned %v after the blackhole began", cancelled, time.Since(start))
		cancel()
		ok(t, p.SetMode(faultproxy.Pass))
		wantStats(t, holder, 1, 0)
	}
	ok(t, hp.Release(ctx))
	within(t, 2*time.Second+slack, "Close with nothing queued", func() error { _ = s.Close(); return nil })
}

// A new process's first Acquire (it must subscribe first)
// returns when its ctx is cancelled, whatever Redis does.
func TestFaultFirstAcquireHonoursCtx(t *testing.T) {
	p := newFaultProxy(t, servertest.RedisAddr(t))
	s := redissem.New(proxyClient(t, p, nil), "first", 1, redissem.WithKeyPrefix(uniquePrefix(t)))
	defer s.Close()
	ok(t, p.SetMode(faultproxy.Blackhole))
	defer p.SetMode(faultproxy.Pass)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := s.Acquire(ctx); errc <- err }()
	time.AfterFunc(200*time.Millisecond, cancel) // the caller gives up
	within(t, 200*time.Millisecond+2*slack, "first Acquire cancelled under a blackhole", func() error {
		if err := <-errc; !errors.Is(err, context.Canceled) {
			return fmt.Errorf("err = %v, want context.Canceled", err)
		}
		return nil
	})
}

// With a client that honours ctx deadlines too, a cancellation (no
// deadline) still ends the call at once, not at the operation timeout.
func TestFaultCancelWithContextTimeoutClient(t *testing.T) {
	p := newFaultProxy(t, servertest.RedisAddr(t))
	s := redissem.New(proxyClient(t, p, &redis.Options{ContextTimeoutEnabled: true}), "ctxc", 1,
		redissem.WithKeyPrefix(uniquePrefix(t)), redissem.WithOperationTimeout(5*time.Second))
	defer s.Close()
	ctx := context.Background()
	ok(t, tryAcquire(t, s).Release(ctx))
	ok(t, p.SetMode(faultproxy.Blackhole))
	defer p.SetMode(faultproxy.Pass)
	cctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { _, err := s.TryAcquire(cctx); errc <- err }()
	time.AfterFunc(200*time.Millisecond, cancel) // the caller gives up
	within(t, 200*time.Millisecond+2*slack, "TryAcquire cancelled under a blackhole", func() error {
		if err := <-errc; !errors.Is(err, context.Canceled) {
			return fmt.Errorf("err = %v, want context.Canceled", err)
		}
		return nil
	})
}
