package semtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/distsem/distsem/core"
)

// FairSem is a semaphore whose Fairness can be changed at run time. A
// backend marked Flows whose Sem is one runs the suite's cases of weights
// and levels too.
type FairSem interface {
	Sem
	SetFairness(context.Context, core.Fairness) error
}

// grant is what a queued caller of the flow tests got.
type grant struct {
	name string
	p    *core.Permit
	err  error
}

// queue starts one Acquire of s with opts, waits until it is the n-th
// caller queued, and returns the channel on which its grant arrives.
func queue(t *testing.T, s Sem, n int64, name string, into chan grant, opts ...core.AcquireOption) {
	t.Helper()
	go func() {
		p, err := s.Acquire(context.Background(), opts...)
		into <- grant{name, p, err}
	}()
	WaitQueued(t, s, n)
}

// drain releases the holder, then takes the n grants that follow, each
// released as soon as it arrives, and returns their names in grant order.
// With a limit of 1 the order of arrival is the order of the grants.
func drain(t *testing.T, holder *core.Permit, got chan grant, n int) []string {
	t.Helper()
	ok(t, holder.Release(context.Background()))
	var names []string
	for range n {
		g := <-got
		ok(t, g.err)
		names = append(names, g.name)
		ok(t, g.p.Release(context.Background()))
	}
	return names
}

// A quiet flow is served at once behind a noisy one, and each flow keeps
// FIFO order.
func testFlowsQuietFlowServed(t *testing.T, b Backend) {
	s := b.New(t, 1)
	holder := Acquire(t, s)
	got := make(chan grant, 8)
	for i := range 6 {
		queue(t, s, int64(i+1), fmt.Sprint("noisy", i), got, core.WithFlow("noisy"))
	}
	queue(t, s, 7, "quiet", got, core.WithFlow("quiet"))
	// A backend of shares reports its fleet's totals, not its process's
	// queues.
	if st := Stats(t, s); !b.Shares && (st.Backlogged != 2 || st.Levels[0].Waiting != 7) {
		t.Fatalf("stats %+v: want 2 backlogged queues and 7 waiting at level 0", st)
	}
	names := drain(t, holder, got, 7)
	if names[0] != "quiet" && names[1] != "quiet" {
		t.Fatalf("grants %v: the quiet flow waited behind the noisy one", names)
	}
	want := 0
	for _, n := range names {
		if n != "quiet" {
			if n != fmt.Sprint("noisy", want) {
				t.Fatalf("grants %v: the noisy flow lost its FIFO order", names)
			}
			want++
		}
	}
	WantStats(t, s, 0, 0)
}

// Backlogged flows weighted 1, 2 and 4 share grants in that proportion.
func testFlowsWeights(t *testing.T, b Backend) {
	s := b.New(t, 1)
	fs, isFair := s.(FairSem)
	if !isFair || b.Shares {
		t.Skipf("%s has no Fairness to change at run time", b.Name)
	}
	ok(t, fs.SetFairness(context.Background(), core.Fairness{Weights: map[string]int64{"b": 2, "c": 4}}))
	holder := Acquire(t, s)
	got := make(chan grant, 42)
	for i := range 14 {
		for j, f := range []string{"a", "b", "c"} {
			queue(t, s, int64(3*i+j+1), f, got, core.WithFlow(f))
		}
	}
	count := map[string]int{}
	for _, n := range drain(t, holder, got, 14) {
		count[n]++
	}
	if count["a"] < 1 || count["a"] > 3 || count["b"] < 3 || count["b"] > 5 || count["c"] < 7 || count["c"] > 9 {
		t.Fatalf("14 grants shared %v, want about a 2, b 4, c 8", count)
	}
	for range 42 - 14 {
		g := <-got
		ok(t, g.err)
		ok(t, g.p.Release(context.Background()))
	}
	WantStats(t, s, 0, 0)
}

// A level with a reserve gets a permit at the next release while a higher
// level is backlogged; without a reserve it waits until the higher level
// has no waiters.
func testLevelsReserve(t *testing.T, b Backend) {
	for _, reserve := range []int64{1, 0} {
		t.Run(fmt.Sprint("reserve", reserve), func(t *testing.T) {
			ctx := context.Background()
			s := b.New(t, 2)
			fs, isFair := s.(FairSem)
			if !isFair || b.Shares {
				t.Skipf("%s has no Fairness to change at run time", b.Name)
			}
			if err := fs.SetFairness(ctx, core.Fairness{Reserves: []int64{0, 3}}); !errors.Is(err, core.ErrInvalidArgument) {
				t.Fatalf("a reserve above the limit: err = %v, want ErrInvalidArgument", err)
			}
			ok(t, fs.SetFairness(ctx, core.Fairness{Reserves: []int64{0, reserve}}))
			h1, h2 := Acquire(t, s), Acquire(t, s)
			got := make(chan grant, 4)
			queue(t, s, 1, "high", got)
			queue(t, s, 2, "high", got)
			queue(t, s, 3, "low", got, core.WithLevel(1))
			if st := Stats(t, s); st.Levels[0].Waiting != 2 || st.Levels[1].Waiting != 1 || st.Levels[0].InUse != 2 {
				t.Fatalf("stats %+v: want 2 waiting at level 0, 1 at level 1, 2 held at level 0", st)
			}
			ok(t, h1.Release(ctx))
			first := <-got
			ok(t, first.err)
			want := "high"
			if reserve == 1 {
				want = "low"
			}
			if first.name != want {
				t.Fatalf("reserve %d: the first grant went to %s, want %s", reserve, first.name, want)
			}
			ok(t, h2.Release(ctx))
			ok(t, first.p.Release(ctx))
			for range 2 {
				g := <-got
				ok(t, g.err)
				ok(t, g.p.Release(ctx))
			}
			WantStats(t, s, 0, 0)
		})
	}
}

// Callers that name no flow queue first; a TryAcquire with a flow then
// finds no permit, a caller with a flow queues behind them, and a change
// of Fairness keeps their order.
func testFlowsJoinPlainQueue(t *testing.T, b Backend) {
	s := b.New(t, 1)
	holder := Acquire(t, s)
	got := make(chan grant, 3)
	queue(t, s, 1, "plain0", got)
	queue(t, s, 2, "plain1", got)
	if p, err := s.TryAcquire(context.Background(), core.WithFlow("f")); !errors.Is(err, core.ErrNoPermit) {
		if p != nil {
			ok(t, p.Release(context.Background()))
		}
		t.Fatalf("TryAcquire with a flow behind two callers: %v, want ErrNoPermit", err)
	}
	queue(t, s, 3, "f", got, core.WithFlow("f"))
	if fs, isFair := s.(FairSem); isFair && !b.Shares {
		ok(t, fs.SetFairness(context.Background(), core.Fairness{Weights: map[string]int64{"f": 2}}))
	}
	names := drain(t, holder, got, 3)
	if i := slices.Index(names, "plain0"); i < 0 || i > slices.Index(names, "plain1") {
		t.Fatalf("grants %v: the callers with no flow lost their order", names)
	}
	WantStats(t, s, 0, 0)
}
