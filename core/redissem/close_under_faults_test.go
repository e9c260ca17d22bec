package redissem_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/internal/faultproxy"
	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/internal/servertest"
)

// Close takes its queued waiters out of the Redis queue before
// it returns, so closing the client right after leaves nothing queued. The
// proxy delays every command by 1s, so a leave sent after Close returned
// would still be on its way.
func TestFaultCloseLeavesQueue(t *testing.T) {
	p := newFaultProxy(t, servertest.RedisAddr(t))
	prefix := uniquePrefix(t)
	other := redissem.New(realClient(t), "closeq", 1, redissem.WithKeyPrefix(prefix))
	defer other.Close()
	c := redis.NewClient(&redis.Options{Addr: p.Addr()})
	s := redissem.New(c, "closeq", 1, redissem.WithKeyPrefix(prefix), redissem.WithDefaultLeaseTTL(30*time.Second),
		redissem.WithOperationTimeout(10*time.Second))
	ctx := context.Background()
	hp := acquire(t, other)
	errc := make(chan error, 1)
	go func() { _, err := s.Acquire(ctx); errc <- err }()
	waitQueued(t, other, 1)
	p.SetLatency(faultproxy.Upstream, faultproxy.Latency{Fixed: time.Second})
	ok(t, s.Close())
	if st := stats(t, other); st.Waiting != 0 {
		t.Fatalf("right after Close: %+v, want nobody queued", st)
	}
	ok(t, c.Close())
	if err := <-errc; !errors.Is(err, core.ErrClosed) {
		t.Fatalf("err = %v, want ErrClosed", err)
	}
	ok(t, hp.Release(ctx))
	op, err := other.TryAcquire(ctx)
	ok(t, err)
	ok(t, op.Release(ctx))
}

// No permit after Close.
func TestFaultNoPermitAfterClose(t *testing.T) {
	c := realClient(t)
	s := redissem.New(c, "closed", 1, redissem.WithKeyPrefix(uniquePrefix(t)))
	ok(t, s.Close())
	if pm, err := s.TryAcquire(context.Background()); !errors.Is(err, core.ErrClosed) {
		t.Fatalf("TryAcquire after Close: %v, %v; want ErrClosed", pm, err)
	}
	if pm, err := s.Acquire(context.Background()); !errors.Is(err, core.ErrClosed) {
		t.Fatalf("Acquire after Close: %v, %v; want ErrClosed", pm, err)
	}
}

// A grant that races Close either lost the race (Acquire returns
// ErrClosed and the grant is passed on) or won it (the permit was held
// before Close, which then marked it lost). Either way Acquire never hands
// out a permit that Close did not see, and no capacity is left behind.
func TestFaultGrantRacingClose(t *testing.T) {
	c := realClient(t)
	prefix := uniquePrefix(t)
	other := redissem.New(c, "race", 1, redissem.WithKeyPrefix(prefix))
	defer other.Close()
	ctx := context.Background()
	type result struct {
		pm  *core.Permit
		err error
	}
	for range 30 {
		s := redissem.New(c, "race", 1, redissem.WithKeyPrefix(prefix))
		hp := acquire(t, s)
		res := make(chan result, 1)
		go func() { pm, err := s.Acquire(ctx); res <- result{pm, err} }()
		waitQueued(t, other, 1)
		go func() { _ = hp.Release(ctx) }()
		ok(t, s.Close())
		r := <-res
		switch {
		case r.pm == nil && !errors.Is(r.err, core.ErrClosed):
			t.Fatalf("Acquire racing Close: %v, want a permit or ErrClosed", r.err)
		case r.pm != nil:
			select {
			case <-r.pm.Lost():
			default:
				t.Fatal("Acquire returned a permit that Close did not mark lost")
			}
			_ = r.pm.Release(ctx)
		}
		wantStats(t, other, 0, 0)
	}
}

// Close with a queued waiter returns within its bound under a blackhole
// (the waiter's leave is bounded by the operation timeout, and the round
// trips that Close waits for end by the client's read and write timeouts,
// here the operation timeout), and the waiter returns ErrClosed.
func TestFaultCloseUnderBlackhole(t *testing.T) {
	p := newFaultProxy(t, servertest.RedisAddr(t))
	prefix := uniquePrefix(t)
	holder := redissem.New(realClient(t), "closebh", 1, redissem.WithKeyPrefix(prefix))
	defer holder.Close()
	const op = 300 * time.Millisecond
	s := redissem.New(proxyClient(t, p, &redis.Options{ReadTimeout: op, WriteTimeout: op}), "closebh", 1, redissem.WithKeyPrefix(prefix),
		redissem.WithDefaultLeaseTTL(time.Second), redissem.WithOperationTimeout(op))
	ctx := context.Background()
	hp := acquire(t, holder)
	defer hp.Release(ctx)
	errc := make(chan error, 1)
	go func() { _, err := s.Acquire(ctx); errc <- err }()
	waitQueued(t, holder, 1)
	ok(t, p.SetMode(faultproxy.Blackhole))
	defer p.SetMode(faultproxy.Pass)
	within(t, 2*op+2*slack, "Close under a blackhole, and its queued Acquire", func() error {
		_ = s.Close()
		if err := <-errc; !errors.Is(err, core.ErrClosed) {
			return fmt.Errorf("queued Acquire: %v, want ErrClosed", err)
		}
		return nil
	})
}
