package consul_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/consul"
)

// A queued Acquire whose ctx is cancelled returns promptly (its blocking
// query carries the ctx: it does not wait out the query's 5s wait), leaves
// the queue, and the limit is free for the next caller.
func TestCancelQueuedReturnsPromptly(t *testing.T) {
	ctx := background()
	s := newSem(t, 1)
	holder, err := s.Acquire(ctx)
	ok(t, err)
	for range 3 {
		cctx, cancel := context.WithCancel(ctx)
		errc := make(chan error, 1)
		go func() { _, err := s.Acquire(cctx); errc <- err }()
		waitQueued(t, s, 1)
		start := time.Now()
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) || errors.Is(err, core.ErrNoPermit) {
			t.Fatalf("err = %v, want context.Canceled only", err)
		}
		// The bound is half the blocking wait, generous under load: it
		// fails only if cancellation waited for the query to time out.
		if d := time.Since(start); d > 2500*time.Millisecond {
			t.Fatalf("cancelled Acquire returned after %v", d)
		}
		wantStats(t, s, 1, 0)
	}
	// A waiter behind another: cancelling it must not disturb the head.
	head := make(chan *core.Permit, 1)
	go func() { p, _ := s.Acquire(ctx); head <- p }()
	waitQueued(t, s, 1)
	cctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { _, err := s.Acquire(cctx); errc <- err }()
	waitQueued(t, s, 2)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	wantStats(t, s, 1, 1)
	ok(t, holder.Release(ctx))
	p := <-head
	if p == nil {
		t.Fatal("head not granted")
	}
	ok(t, p.Release(ctx))
	wantStats(t, s, 0, 0)
}

// TestCancelRacingGrant releases the holder while the waiter's ctx ends;
// whichever wins, no permit may leak.
func TestCancelRacingGrant(t *testing.T) {
	ctx := background()
	s := newSem(t, 1)
	for range 20 {
		holder, err := s.Acquire(ctx)
		ok(t, err)
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
}

func TestDeadlineIsNoPermit(t *testing.T) {
	ctx := background()
	s := newSem(t, 1)
	holder, err := s.Acquire(ctx)
	ok(t, err)
	dctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := s.Acquire(dctx); !errors.Is(err, core.ErrNoPermit) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want ErrNoPermit and DeadlineExceeded", err)
	}
	wantStats(t, s, 1, 0)
	ok(t, holder.Release(ctx))
}

// deadClient talks to a port where nothing listens.
func deadClient(t *testing.T) *api.Client {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	ok(t, err)
	addr := l.Addr().String()
	ok(t, l.Close())
	c, err := api.NewClient(&api.Config{Address: addr})
	ok(t, err)
	return c
}

func TestFailurePolicy(t *testing.T) {
	ctx := background()
	for _, tc := range []struct {
		policy core.FailurePolicy
		grant  bool
	}{{core.FailClosed, false}, {core.FailOpen, true}, {core.FailLocal(1), true}} {
		t.Run(tc.policy.String(), func(t *testing.T) {
			var seen []error
			s := consul.New(deadClient(t), "down", 1, core.WithFailurePolicy(tc.policy),
				core.WithOnError(func(err error) { seen = append(seen, err) }))
			defer s.Close()
			for _, try := range []bool{false, true} {
				seen = seen[:0]
				var p *core.Permit
				var err error
				if try {
					p, err = s.TryAcquire(ctx)
				} else {
					p, err = s.Acquire(ctx)
				}
				if len(seen) != 1 || !errors.Is(seen[0], core.ErrUnavailable) {
					t.Fatalf("try=%v: WithOnError saw %v, want one ErrUnavailable", try, seen)
				}
				if !tc.grant {
					if p != nil || !errors.Is(err, core.ErrUnavailable) {
						t.Fatalf("try=%v: %v, %v; want ErrUnavailable", try, p, err)
					}
					continue
				}
				ok(t, err)
				if p.Lost() != nil || tc.policy == core.FailOpen && p.Token() != 0 {
					t.Fatalf("fallback permit: token %d, lost %v; want no lease (and token 0 if open)", p.Token(), p.Lost())
				}
				ok(t, p.Release(ctx))
			}
		})
	}
}
