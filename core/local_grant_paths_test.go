package core_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/internal/testwait"
)

// Tests of Local's lock-free path (an Acquire or Release with nobody
// queued takes no lock) against the locked one.

func wantLocal(t *testing.T, s *core.Local, limit, inUse, waiting int64) {
	t.Helper()
	st, err := s.Stats(context.Background())
	ok(t, err)
	if want := (core.Stats{Limit: limit, InUse: inUse, Waiting: waiting}); st != want {
		t.Fatalf("Stats = %+v, want %+v", st, want)
	}
}

func tryN(t *testing.T, s *core.Local, n int) []*core.Permit {
	t.Helper()
	ps := make([]*core.Permit, n)
	for i := range ps {
		p, err := s.TryAcquire(context.Background())
		if err != nil {
			t.Fatalf("TryAcquire %d of %d: %v", i+1, n, err)
		}
		ps[i] = p
	}
	return ps
}

func wantNoPermit(t *testing.T, s *core.Local) {
	t.Helper()
	if p, err := s.TryAcquire(context.Background()); !errors.Is(err, core.ErrNoPermit) {
		_ = p.Release(context.Background())
		t.Fatalf("TryAcquire: %v, want ErrNoPermit", err)
	}
}

// A limit lowered or raised by SetLimit binds the next lock-free grant.
func TestLocalLimitBindsLockFreeGrants(t *testing.T) {
	ctx := context.Background()
	s := core.NewLocal(4)
	ok(t, s.SetLimit(ctx, 1))
	ps := tryN(t, s, 1)
	wantNoPermit(t, s)
	ok(t, s.SetLimit(ctx, 3))
	ps = append(ps, tryN(t, s, 2)...)
	wantNoPermit(t, s)
	wantLocal(t, s, 3, 3, 0)

	// Lowered below the permits in use: nobody is admitted until in use
	// falls below the new limit.
	ok(t, s.SetLimit(ctx, 1))
	ok(t, ps[0].Release(ctx))
	wantNoPermit(t, s) // 2 in use
	ok(t, ps[1].Release(ctx))
	wantNoPermit(t, s) // 1 in use
	ok(t, ps[2].Release(ctx))
	p := tryN(t, s, 1)[0]
	wantLocal(t, s, 1, 1, 0)
	ok(t, p.Release(ctx))
	wantLocal(t, s, 1, 0, 0)
}

// After the queue drains, Acquire and Release take the lock-free path
// again, with the count the queued grants left.
func TestLocalQueueDrainsBackToLockFree(t *testing.T) {
	ctx := context.Background()
	s := core.NewLocal(2)
	ps := tryN(t, s, 2)
	got := make(chan *core.Permit)
	for range 2 {
		go func() {
			p, err := s.Acquire(ctx)
			if err != nil {
				t.Error(err)
			}
			got <- p
		}()
	}
	waitQueuedLocal(t, s, 2)
	ok(t, ps[0].Release(ctx))
	ok(t, ps[1].Release(ctx))
	q1, q2 := <-got, <-got
	wantLocal(t, s, 2, 2, 0)
	wantNoPermit(t, s)
	ok(t, q1.Release(ctx))
	ok(t, q1.Release(ctx)) // a second Release frees nothing
	p := tryN(t, s, 1)[0]
	wantNoPermit(t, s)
	ok(t, q2.Release(ctx))
	ok(t, p.Release(ctx))
	wantLocal(t, s, 2, 0, 0)
	tryN(t, s, 2) // the whole limit is free again
}

// waitQueuedLocal waits until n Acquire calls are queued on s.
func waitQueuedLocal(t *testing.T, s *core.Local, n int64) {
	t.Helper()
	testwait.Until(t, time.Minute, fmt.Sprintf("%d Acquire calls not queued", n), func() bool {
		st, err := s.Stats(context.Background())
		ok(t, err)
		return st.Waiting >= n
	})
}

// With limit 1 the semaphore is a mutex: the holders' tokens, recorded
// inside it, strictly increase in grant order (the race detector checks
// that a grant happens after the release it follows, on both paths).
func TestLocalLimitOneTokensIncrease(t *testing.T) {
	ctx := context.Background()
	s := core.NewLocal(1)
	var tokens []int64 // guarded by s
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 300 {
				p, err := s.Acquire(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				tokens = append(tokens, p.Token())
				ok(t, p.Release(ctx))
			}
		}()
	}
	wg.Wait()
	for i := 1; i < len(tokens); i++ {
		if tokens[i] <= tokens[i-1] {
			t.Fatalf("grant %d has token %d after %d: not increasing", i, tokens[i], tokens[i-1])
		}
	}
	wantLocal(t, s, 1, 0, 0)
}

// Lock-free and locked paths mixed: weights, TryAcquire, cancelled and
// cancelling waiters, a changing limit and concurrent double releases.
// The weight held never exceeds the highest limit, no token repeats, and
// nothing leaks.
func TestLocalMixedPathsHammer(t *testing.T) {
	hammerLocal(t, []int64{3, 2})
}

// The same across the limit at which the state word can no longer hold
// the count (1<<19): every operation then takes the lock, and the lock-free
// paths come back when the limit is lowered again.
func TestLocalHammerAcrossLockedMode(t *testing.T) {
	hammerLocal(t, []int64{3, 1 << 20, 2, 1<<19 - 1, 1 << 19})
}

func hammerLocal(t *testing.T, limits []int64) {
	ctx := context.Background()
	maxLimit := slices.Max(limits)
	s := core.NewLocal(limits[0])
	var inside atomic.Int64
	var mu sync.Mutex
	tokens := map[int64]bool{}
	stop := make(chan struct{})
	limiterDone := make(chan struct{})
	go func() { // the limit goes round limits
		defer close(limiterDone)
		for i := 0; ; i++ {
			select {
			case <-stop:
				ok(t, s.SetLimit(ctx, limits[0]))
				return
			default:
			}
			ok(t, s.SetLimit(ctx, limits[i%len(limits)]))
			runtime.Gosched()
		}
	}()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 400 {
				w := int64(1 + (g+i)%2)
				var p *core.Permit
				var err error
				switch i % 4 {
				case 0:
					p, err = s.TryAcquire(ctx, core.WithWeight(w))
				case 1: // cancelled while queued or as it is granted
					c, cancel := context.WithCancel(ctx)
					go cancel()
					p, err = s.Acquire(c, core.WithWeight(w))
					cancel()
				default:
					p, err = s.Acquire(ctx, core.WithWeight(w))
				}
				if err != nil {
					if !errors.Is(err, core.ErrNoPermit) && !errors.Is(err, context.Canceled) {
						t.Errorf("acquire: %v", err)
					}
					continue
				}
				if n := inside.Add(w); n > maxLimit {
					t.Errorf("%d held at once, the limit is at most %d", n, maxLimit)
				}
				mu.Lock()
				if tokens[p.Token()] {
					t.Errorf("token %d granted twice", p.Token())
				}
				tokens[p.Token()] = true
				mu.Unlock()
				inside.Add(-w)
				done := make(chan struct{})
				go func() { ok(t, p.Release(ctx)); close(done) }()
				ok(t, p.Release(ctx))
				<-done
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-limiterDone
	wantLocal(t, s, limits[0], 0, 0)
	p, err := s.TryAcquire(ctx, core.WithWeight(limits[0]))
	ok(t, err)
	ok(t, p.Release(ctx))
}
