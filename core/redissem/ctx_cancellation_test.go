package redissem_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distsem/distsem/core"
)

func TestCancelWhileQueued(t *testing.T) {
	forEach(t, func(t *testing.T, b impl) {
		ctx := context.Background()
		s := b.new(t, 1)
		holder := acquire(t, s)
		cctx, cancel := context.WithCancel(ctx)
		errc := make(chan error, 1)
		go func() { _, err := s.Acquire(cctx); errc <- err }()
		waitQueued(t, s, 1)
		cancel()
		err := <-errc
		if !errors.Is(err, context.Canceled) || errors.Is(err, core.ErrNoPermit) {
			t.Fatalf("err = %v, want context.Canceled only", err)
		}
		wantStats(t, s, 1, 0)
		ok(t, holder.Release(ctx))
		wantStats(t, s, 0, 0)
		ok(t, tryAcquire(t, s).Release(ctx))
	})
}

func TestDeadlineIsNoPermit(t *testing.T) {
	forEach(t, func(t *testing.T, b impl) {
		ctx := context.Background()
		s := b.new(t, 1)
		holder := acquire(t, s)
		dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		_, err := s.Acquire(dctx)
		if !errors.Is(err, core.ErrNoPermit) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want ErrNoPermit and DeadlineExceeded", err)
		}
		wantStats(t, s, 1, 0)
		ok(t, holder.Release(ctx))
	})
}

func TestDoneContextFailsEvenIfFree(t *testing.T) {
	forEach(t, func(t *testing.T, b impl) {
		s := b.new(t, 1)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := s.Acquire(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		wantStats(t, s, 0, 0)
	})
}

// TestCancelRacingGrant releases the holder while the waiter's ctx ends,
// many times; whichever wins, no permit may leak (go.dev/issue/63615).
func TestCancelRacingGrant(t *testing.T) {
	forEach(t, func(t *testing.T, b impl) {
		ctx := context.Background()
		s := b.new(t, 1)
		rounds := 200
		if b.name != "local" {
			rounds = 50
		}
		for range rounds {
			holder := acquire(t, s)
			cctx, cancel := context.WithCancel(ctx)
			res := make(chan *core.Permit, 1)
			go func() { p, _ := s.Acquire(cctx); res <- p }()
			waitQueued(t, s, 1)
			go cancel()
			_ = holder.Release(ctx)
			if p := <-res; p != nil {
				_ = p.Release(ctx)
			}
			cancel()
			wantStats(t, s, 0, 0)
		}
	})
}

// TestReleaseWithCancelledContext: a request ctx is often over by release
// time; the permit must still go back at once.
func TestReleaseWithCancelledContext(t *testing.T) {
	forEach(t, func(t *testing.T, b impl) {
		s := b.new(t, 1)
		ctx, cancel := context.WithCancel(context.Background())
		p, err := s.Acquire(ctx)
		ok(t, err)
		cancel()
		ok(t, p.Release(ctx))
		wantStats(t, s, 0, 0)
	})
}
