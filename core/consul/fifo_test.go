package consul_test

import (
	"sync"
	"testing"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/consul"
)

// Waiters of two processes (two Semaphore values, two sessions) are served
// in arrival order, each grant with a larger token than the one before.
func TestFIFOAcrossProcesses(t *testing.T) {
	ctx := background()
	a, b := pair(t, 1, 1, nil, nil)
	holder, err := a.Acquire(ctx)
	ok(t, err)
	tokens, wait := queueAlternating(t, a, b, 6)
	ok(t, holder.Release(ctx))
	wait()
	// A grant's token is its Raft index: token order is grant order.
	last := holder.Token()
	for i, tok := range tokens {
		if tok <= last {
			t.Fatalf("waiter %d granted with token %d after %d: not FIFO, or tokens not increasing (tokens %v)", i, tok, last, tokens)
		}
		last = tok
	}
	wantStats(t, a, 0, 0)
}

// A waiter heavier than what is free blocks the lighter ones behind it,
// and TryAcquire of another process does not pass it either.
func TestTryAcquireDoesNotBarge(t *testing.T) {
	ctx := background()
	a, b := pair(t, 2, 2, nil, nil)
	p, err := a.Acquire(ctx)
	ok(t, err)
	got := make(chan *core.Permit, 1)
	go func() { q, _ := a.Acquire(ctx, core.WithWeight(2)); got <- q }()
	waitQueued(t, b, 1)
	if _, err := b.TryAcquire(ctx); err == nil {
		t.Fatal("TryAcquire passed a queued waiter")
	}
	ok(t, p.Release(ctx))
	q := <-got
	if q == nil || q.Weight() != 2 {
		t.Fatalf("heavy waiter got %v", q)
	}
	ok(t, q.Release(ctx))
	wantStats(t, b, 0, 0)
}

// At limit 2 a Release below the whole limit only deletes its key and the
// head grants itself: grants still follow arrival order across processes (a grant's token is its Raft index, so token order is grant
// order), while two permits are in use at a time.
func TestFIFOAtLimitTwo(t *testing.T) {
	ctx := background()
	a, b := pair(t, 2, 2, nil, nil)
	h1, err := a.Acquire(ctx)
	ok(t, err)
	h2, err := b.Acquire(ctx)
	ok(t, err)
	tokens, wait := queueAlternating(t, a, b, 8)
	ok(t, h1.Release(ctx))
	ok(t, h2.Release(ctx))
	wait()
	last := max(h1.Token(), h2.Token())
	for i, tok := range tokens {
		if tok <= last {
			t.Fatalf("waiter %d granted with token %d after %d: not FIFO (tokens %v)", i, tok, last, tokens)
		}
		last = tok
	}
	wantStats(t, a, 0, 0)
}

// queueAlternating queues n Acquire calls, alternately on a and b, each
// once the one before it is queued; each releases at once when granted.
// It returns the tokens of the grants by arrival, complete once wait
// returns.
func queueAlternating(t *testing.T, a, b *consul.Semaphore, n int) (tokens []int64, wait func()) {
	t.Helper()
	ctx := background()
	tokens = make([]int64, n)
	var wg sync.WaitGroup
	for i := range n {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() {
			p, err := s.Acquire(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			tokens[i] = p.Token()
			_ = p.Release(ctx)
		})
		waitQueued(t, a, int64(i+1))
	}
	return tokens, wg.Wait
}
