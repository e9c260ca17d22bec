package semtest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distsem/distsem/core"
)

func testTryAcquireAndTokens(t *testing.T, b Backend) {
	ctx := context.Background()
	s := b.New(t, 2)
	p1 := TryAcquire(t, s)
	p2 := TryAcquire(t, s)
	if _, err := s.TryAcquire(ctx); !errors.Is(err, core.ErrNoPermit) {
		t.Fatalf("third TryAcquire: err = %v, want ErrNoPermit", err)
	}
	if p2.Token() <= p1.Token() {
		t.Fatalf("tokens %d then %d: want strictly increasing", p1.Token(), p2.Token())
	}
	ok(t, p1.Release(ctx))
	p3 := TryAcquire(t, s)
	if p3.Token() <= p2.Token() {
		t.Fatalf("token after release %d, want > %d", p3.Token(), p2.Token())
	}
	ok(t, p2.Release(ctx))
	ok(t, p3.Release(ctx))
	WantStats(t, s, 0, 0)
}

func testFIFO(t *testing.T, b Backend) {
	ctx := context.Background()
	s := b.New(t, 1)
	holder := Acquire(t, s)
	const n = 8
	order := make(chan int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := s.Acquire(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			order <- i
			_ = p.Release(ctx)
		}()
		WaitQueued(t, s, int64(i+1))
	}
	ok(t, holder.Release(ctx))
	wg.Wait()
	close(order)
	want := 0
	for got := range order {
		if got != want {
			t.Fatalf("grant %d went to waiter %d: not FIFO", want, got)
		}
		want++
	}
	WantStats(t, s, 0, 0)
}

func testWeightedHeadBlocksSmaller(t *testing.T, b Backend) {
	ctx := context.Background()
	s := b.New(t, 3)
	held := Acquire(t, s, core.WithWeight(2))
	big := make(chan *core.Permit, 1)
	go func() { p, _ := s.Acquire(ctx, core.WithWeight(3)); big <- p }()
	WaitQueued(t, s, 1)
	small := make(chan *core.Permit, 1)
	go func() { p, _ := s.Acquire(ctx, core.WithWeight(1)); small <- p }()
	WaitQueued(t, s, 2)
	// One permit is free, but the head needs three: nobody may pass it.
	if _, err := s.TryAcquire(ctx); !errors.Is(err, core.ErrNoPermit) {
		t.Fatalf("TryAcquire barged past the queue: %v", err)
	}
	WantStats(t, s, 2, 2)
	ok(t, held.Release(ctx))
	pb := <-big
	if pb == nil || pb.Weight() != 3 {
		t.Fatalf("head waiter: %v", pb)
	}
	WantStats(t, s, 3, 1)
	ok(t, pb.Release(ctx))
	ps := <-small
	ok(t, ps.Release(ctx))
	WantStats(t, s, 0, 0)
}

func testDoubleRelease(t *testing.T, b Backend) {
	ctx := context.Background()
	s := b.New(t, 2)
	p := Acquire(t, s)
	q := Acquire(t, s)
	ok(t, p.Release(ctx))
	if err := p.Release(ctx); err != nil {
		t.Fatalf("second Release: %v, want nil", err)
	}
	WantStats(t, s, 1, 0)
	ok(t, q.Release(ctx))
	WantStats(t, s, 0, 0)
}

func testOversizedWeightFailsAtOnce(t *testing.T, b Backend) {
	ctx := context.Background()
	s := b.New(t, 2)
	for _, try := range []bool{false, true} {
		var err error
		if try {
			_, err = s.TryAcquire(ctx, core.WithWeight(3))
		} else {
			_, err = s.Acquire(ctx, core.WithWeight(3))
		}
		if !errors.Is(err, core.ErrInvalidArgument) {
			t.Fatalf("try=%v: err = %v, want ErrInvalidArgument", try, err)
		}
	}
	WantStats(t, s, 0, 0)
}

func testBadAcquireArguments(t *testing.T, b Backend) {
	ctx := context.Background()
	s := b.New(t, 2)
	for _, opt := range []core.AcquireOption{core.WithWeight(0), core.WithWeight(-1), core.WithLeaseTTL(time.Millisecond)} {
		if _, err := s.Acquire(ctx, opt); !errors.Is(err, core.ErrInvalidArgument) {
			t.Fatalf("err = %v, want ErrInvalidArgument", err)
		}
	}
	if err := s.SetLimit(ctx, 0); !errors.Is(err, core.ErrInvalidArgument) {
		t.Fatalf("SetLimit(0): err = %v, want ErrInvalidArgument", err)
	}
}

// testFlowsOrRefusal checks the flow and level input every backend
// refuses, and that a backend without flows refuses them all, with nothing
// held or queued after.
func testFlowsOrRefusal(t *testing.T, b Backend) {
	ctx := context.Background()
	s := b.New(t, 2)
	// Every semaphore has one level until its Fairness says otherwise.
	bad := []core.AcquireOption{core.WithFlow(""), core.WithLevel(-1), core.WithLevel(core.MaxLevels), core.WithLevel(1)}
	if !b.Flows {
		bad = append(bad, core.WithFlow("tenant-1"))
	} else {
		ok(t, Acquire(t, s, core.WithFlow("tenant-1")).Release(ctx))
	}
	for i, opt := range bad {
		if _, err := s.Acquire(ctx, opt); !errors.Is(err, core.ErrInvalidArgument) {
			t.Fatalf("option %d: err = %v, want ErrInvalidArgument", i, err)
		}
	}
	ok(t, Acquire(t, s, core.WithLevel(0)).Release(ctx))
	WantStats(t, s, 0, 0)
}

func testSetLimit(t *testing.T, b Backend) {
	ctx := context.Background()
	s := b.New(t, 1)
	holder := Acquire(t, s)
	got := make(chan *core.Permit, 1)
	go func() { p, _ := s.Acquire(ctx); got <- p }()
	WaitQueued(t, s, 1)
	ok(t, s.SetLimit(ctx, 2)) // raising admits the waiter at once
	p := <-got
	if p == nil {
		t.Fatal("waiter not granted after the limit was raised")
	}
	heavy := make(chan error, 1)
	go func() { _, err := s.Acquire(ctx, core.WithWeight(2)); heavy <- err }()
	WaitQueued(t, s, 1)
	ok(t, s.SetLimit(ctx, 1)) // the weight-2 waiter can never fit
	if err := <-heavy; !errors.Is(err, core.ErrInvalidArgument) {
		t.Fatalf("heavy waiter: err = %v, want ErrInvalidArgument", err)
	}
	if st := Stats(t, s); st.Limit != 1 {
		t.Fatalf("limit = %d, want 1", st.Limit)
	}
	ok(t, holder.Release(ctx))
	ok(t, p.Release(ctx))
	WantStats(t, s, 0, 0)
}

func testCloseFailsWaiters(t *testing.T, b Backend) {
	ctx := context.Background()
	s := b.New(t, 1)
	holder := Acquire(t, s)
	errc := make(chan error, 1)
	go func() { _, err := s.Acquire(ctx); errc <- err }()
	WaitQueued(t, s, 1)
	ok(t, s.Close())
	if err := <-errc; !errors.Is(err, core.ErrClosed) {
		t.Fatalf("queued Acquire after Close: %v, want ErrClosed", err)
	}
	if _, err := s.Acquire(ctx); !errors.Is(err, core.ErrClosed) {
		t.Fatalf("Acquire after Close: %v, want ErrClosed", err)
	}
	_ = holder.Release(ctx)
}

// testHammer runs many goroutines through a small limit and checks that
// the number of holders never exceeds it and nothing leaks.
func testHammer(t *testing.T, b Backend) {
	ctx := context.Background()
	const limit = 3
	s := b.New(t, limit)
	var inside, peak atomic.Int64
	var wg sync.WaitGroup
	iters := 200
	if b.Name != "local" {
		iters = 20
	}
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range iters {
				w := int64(1 + (g+i)%2)
				p, err := s.Acquire(ctx, core.WithWeight(w))
				if err != nil {
					t.Error(err)
					return
				}
				n := inside.Add(w)
				for {
					old := peak.Load()
					if n <= old || peak.CompareAndSwap(old, n) {
						break
					}
				}
				inside.Add(-w)
				if err := p.Release(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if peak.Load() > limit {
		t.Fatalf("peak weight held = %d, limit %d", peak.Load(), limit)
	}
	WantStats(t, s, 0, 0)
}

// testReentrant checks core.Reentrant over the backend: at limit 1, an
// Acquire whose ctx holds a permit of the wrapper nests at once, shares
// the outer permit's token and Lost channel, and only the outer Release
// frees the permit.
func testReentrant(t *testing.T, b Backend) {
	ctx := context.Background()
	s := b.New(t, 1)
	r := core.Reentrant(s)
	outer, err := r.Acquire(ctx)
	ok(t, err)
	hctx, cancel := context.WithTimeout(core.ContextWithPermit(ctx, outer), waitBound)
	defer cancel()
	inner, err := r.Acquire(hctx) // at limit 1: would wait for itself
	ok(t, err)
	if inner.Token() != outer.Token() || inner.Lost() != outer.Lost() || inner.ID() != outer.ID() {
		t.Fatalf("nested permit (token %d, id %q) does not share the outer one's (token %d, id %q)",
			inner.Token(), inner.ID(), outer.Token(), outer.ID())
	}
	ok(t, inner.Release(ctx))
	WantStats(t, s, 1, 0)
	if _, err := s.TryAcquire(ctx); !errors.Is(err, core.ErrNoPermit) {
		t.Fatalf("TryAcquire after the nested Release: %v, want ErrNoPermit", err)
	}
	ok(t, outer.Release(ctx))
	WantStats(t, s, 0, 0)
}
