package redissem_test

// Flows and priority levels on a real redis-server: each test queues
// waiters, lets the permits go one at a time, and checks the recorded
// order of the grants (never the clock).

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/redissem"
)

// grantLog records the grants of queued Acquire calls in the order they
// happen; a test lets the permits go one at a time with next.
type grantLog struct {
	t      *testing.T
	s      *redissem.Semaphore
	grants chan granted
}

type granted struct {
	label string
	p     *core.Permit
}

func newGrantLog(t *testing.T, s *redissem.Semaphore) *grantLog {
	return &grantLog{t: t, s: s, grants: make(chan granted, 4096)}
}

// queue starts an Acquire labelled label with opts, and returns once it is
// queued (n waiters in all).
func (g *grantLog) queue(label string, n int64, opts ...core.AcquireOption) {
	g.t.Helper()
	go func() {
		p, err := g.s.Acquire(context.Background(), opts...)
		if err != nil {
			g.t.Errorf("%s: %v", label, err)
			return
		}
		g.grants <- granted{label, p}
	}()
	waitQueued(g.t, g.s, n)
}

// next releases p and returns the grant it made.
func (g *grantLog) next(p *core.Permit) granted {
	g.t.Helper()
	ok(g.t, p.Release(context.Background()))
	return <-g.grants
}

func fairSem(t *testing.T, limit int64, opts ...redissem.Option) *redissem.Semaphore {
	opts = append([]redissem.Option{redissem.WithKeyPrefix(uniquePrefix(t))}, opts...)
	s := redissem.New(realClient(t), "fair", limit, opts...)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// A quiet flow does not wait behind a noisy one: with limit 1 and ten
// waiters of flow A queued before one of flow B, B is among the first two
// grants; A's waiters keep their arrival order.
func TestFlowQuietNotBehindNoisy(t *testing.T) {
	s := fairSem(t, 1)
	g := newGrantLog(t, s)
	p := acquire(t, s, core.WithFlow("A"))
	for i := range 10 {
		g.queue(fmt.Sprint("A", i), int64(i+1), core.WithFlow("A"))
	}
	g.queue("B", 11, core.WithFlow("B"))
	var order []string
	for range 11 {
		n := g.next(p)
		order, p = append(order, n.label), n.p
	}
	ok(t, p.Release(context.Background()))
	if order[0] != "B" && order[1] != "B" {
		t.Fatalf("grants %v: B not among the first two", order)
	}
	var as []string
	for _, l := range order {
		if l != "B" {
			as = append(as, l)
		}
	}
	for i, l := range as {
		if l != fmt.Sprint("A", i) {
			t.Fatalf("grants %v: flow A out of its arrival order", order)
		}
	}
	wantStats(t, s, 0, 0)
}

// Weights 1:2:4, all three flows backlogged: over 700 grants each flow's
// count is within 5 % of 1/7, 2/7 and 4/7.
func TestFlowWeightsShareGrants(t *testing.T) {
	w := map[string]int64{"w1": 1, "w2": 2, "w4": 4}
	s := fairSem(t, 1, redissem.WithFairness(core.Fairness{Weights: w}))
	ctx := context.Background()
	p := acquire(t, s, core.WithFlow("w1"))
	// Eight looping callers per flow: each re-queues as soon as its permit
	// is released, so that every flow stays backlogged.
	type grant struct {
		flow string
		p    *core.Permit
		back chan struct{}
	}
	grants := make(chan grant)
	stop := make(chan struct{})
	n := int64(0)
	for _, flow := range []string{"w1", "w2", "w4"} {
		for range 8 {
			n++
			go func() {
				for {
					q, err := s.Acquire(ctx, core.WithFlow(flow))
					if err != nil {
						return
					}
					back := make(chan struct{})
					select {
					case grants <- grant{flow, q, back}:
					case <-stop:
						_ = q.Release(ctx)
						return
					}
					<-back
				}
			}()
			waitQueued(t, s, n)
		}
	}
	count := map[string]int{}
	var last chan struct{}
	for range 700 {
		ok(t, p.Release(ctx))
		if last != nil {
			close(last) // its caller queues again, after the grant
		}
		g := <-grants
		count[g.flow]++
		p, last = g.p, g.back
	}
	close(stop)
	close(last)
	ok(t, p.Release(ctx))
	t.Logf("grants per flow: %v", count)
	for flow, wt := range w {
		want := 700 * float64(wt) / 7
		if got := float64(count[flow]); got < want*0.95 || got > want*1.05 {
			t.Errorf("flow %s: %v grants of 700, want %v ± 5 %% (all: %v)", flow, got, want, count)
		}
	}
}

// A reserve keeps a level served: limit 4, level 0 backlogged. With level
// 1's reserve of 1, its waiter gets the next permit released; without
// it, level 1 gets none until level 0 has no waiters.
func TestLevelReserve(t *testing.T) {
	for _, reserve := range []int64{1, 0} {
		t.Run(fmt.Sprint("reserve", reserve), func(t *testing.T) {
			s := fairSem(t, 4, redissem.WithFairness(core.Fairness{Reserves: []int64{0, reserve}}))
			g := newGrantLog(t, s)
			var held []*core.Permit
			for range 4 {
				held = append(held, acquire(t, s, core.WithFlow("batch")))
			}
			for i := range 3 {
				g.queue(fmt.Sprint("L0-", i), int64(i+1), core.WithFlow("batch"))
			}
			g.queue("L1", 4, core.WithFlow("admin"), core.WithLevel(1))
			st := stats(t, s)
			if st.Levels[0].InUse != 4 || st.Levels[0].Waiting != 3 || st.Levels[1].Waiting != 1 || st.Backlogged != 2 {
				t.Fatalf("stats %+v: want level 0 holding 4 with 3 waiting, level 1 one waiting, 2 queues", st)
			}
			var order []string
			for _, p := range held {
				order = append(order, g.next(p).label)
			}
			want := "L0-0 L0-1 L0-2 L1"
			if reserve == 1 {
				want = "L1 L0-0 L0-1 L0-2"
			}
			if got := strings.Join(order, " "); got != want {
				t.Fatalf("grants %s, want %s", got, want)
			}
			st = stats(t, s)
			if st.Levels[1].InUse != 1 || st.Levels[0].InUse != 3 {
				t.Fatalf("stats %+v: want 3 held at level 0, 1 at level 1", st)
			}
		})
	}
}

// Without a reserve, free capacity goes to the highest level with waiters.
func TestLevelHighestFirst(t *testing.T) {
	s := fairSem(t, 1, redissem.WithFairness(core.Fairness{Reserves: []int64{0, 0, 0}}))
	g := newGrantLog(t, s)
	p := acquire(t, s)
	g.queue("L2", 1, core.WithLevel(2))
	g.queue("L1", 2, core.WithLevel(1))
	g.queue("L0", 3)
	var order []string
	for range 3 {
		n := g.next(p)
		order, p = append(order, n.label), n.p
	}
	ok(t, p.Release(context.Background()))
	if got := strings.Join(order, " "); got != "L0 L1 L2" {
		t.Fatalf("grants %s, want L0 L1 L2", got)
	}
}

// The Fairness lives in Redis: one set by a process is the one another
// process uses, whatever that one was configured with; a level beyond it
// fails before anything is queued.
func TestSetFairnessSeenByAnotherProcess(t *testing.T) {
	prefix := uniquePrefix(t)
	ctx := context.Background()
	a := redissem.New(realClient(t), "shared", 2, redissem.WithKeyPrefix(prefix))
	defer a.Close()
	b := redissem.New(realClient(t), "shared", 2, redissem.WithKeyPrefix(prefix),
		redissem.WithFairness(core.Fairness{Reserves: []int64{0, 0, 0, 0}}))
	defer b.Close()
	// a's zero Fairness is stored first: one level.
	ok(t, acquire(t, a, core.WithFlow("x")).Release(ctx))
	_, err := b.Acquire(ctx, core.WithLevel(1))
	if !errors.Is(err, core.ErrInvalidArgument) || !strings.Contains(err.Error(), "level 1") || !strings.Contains(err.Error(), "1 priority levels") {
		t.Fatalf("level 1 of 1: %v, want an ErrInvalidArgument naming the level and the levels", err)
	}
	wantStats(t, b, 0, 0)
	ok(t, a.SetFairness(ctx, core.Fairness{Reserves: []int64{1, 0, 0}}))
	p := acquire(t, b, core.WithLevel(2), core.WithFlow("y"))
	if _, err := b.Acquire(ctx, core.WithLevel(3)); !errors.Is(err, core.ErrInvalidArgument) {
		t.Fatalf("level 3 of 3: %v, want ErrInvalidArgument", err)
	}
	if st := stats(t, a); st.Levels[2].InUse != 1 {
		t.Fatalf("stats %+v: want 1 held at level 2", st)
	}
	ok(t, p.Release(ctx))
	if err := a.SetFairness(ctx, core.Fairness{Reserves: []int64{2, 1}}); !errors.Is(err, core.ErrInvalidArgument) {
		t.Fatalf("reserves above the limit: %v, want ErrInvalidArgument", err)
	}
	if err := a.SetFairness(ctx, core.Fairness{Weights: map[string]int64{"z": 0}}); !errors.Is(err, core.ErrInvalidArgument) {
		t.Fatalf("weight 0: %v, want ErrInvalidArgument", err)
	}
}

// SetFairness with fewer levels fails the waiters of the levels removed;
// the others stay queued.
func TestSetFairnessRemovesLevels(t *testing.T) {
	s := fairSem(t, 1, redissem.WithFairness(core.Fairness{Reserves: []int64{0, 0}}))
	ctx := context.Background()
	p := acquire(t, s)
	gone := make(chan error, 1)
	go func() { _, err := s.Acquire(ctx, core.WithLevel(1)); gone <- err }()
	waitQueued(t, s, 1)
	g := newGrantLog(t, s)
	g.queue("kept", 2, core.WithFlow("k"))
	ok(t, s.SetFairness(ctx, core.Fairness{}))
	if err := <-gone; !errors.Is(err, core.ErrInvalidArgument) {
		t.Fatalf("waiter of a removed level: %v, want ErrInvalidArgument", err)
	}
	if n := g.next(p); n.label != "kept" {
		t.Fatalf("grant to %s, want kept", n.label)
	} else {
		ok(t, n.p.Release(ctx))
	}
	wantStats(t, s, 0, 0)
}

// A cancelled waiter of a flow leaves its queue: the counts of its level
// and queue go with it, and the default flow is served.
func TestFlowWaiterCancelled(t *testing.T) {
	s := fairSem(t, 1, redissem.WithFairness(core.Fairness{Reserves: []int64{0, 0}}))
	ctx := context.Background()
	p := acquire(t, s)
	cctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { _, err := s.Acquire(cctx, core.WithFlow("f"), core.WithLevel(1)); errc <- err }()
	waitQueued(t, s, 1)
	g := newGrantLog(t, s)
	g.queue("default", 2)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	wantStats(t, s, 1, 1)
	st := stats(t, s)
	if st.Levels[1].Waiting != 0 || st.Backlogged != 1 {
		t.Fatalf("stats %+v: the cancelled waiter is still counted", st)
	}
	n := g.next(p)
	ok(t, n.p.Release(ctx))
	wantStats(t, s, 0, 0)
	if st := stats(t, s); st.Backlogged != 0 || st.Levels != [core.MaxLevels]core.LevelStats{} {
		t.Fatalf("stats %+v after all left, want zero levels", st)
	}
}

// Inspect lists a waiter's flow and level.
func TestInspectListsFlowAndLevel(t *testing.T) {
	s := fairSem(t, 1, redissem.WithFairness(core.Fairness{Reserves: []int64{0, 0}}))
	p := acquire(t, s)
	g := newGrantLog(t, s)
	g.queue("plain", 1)
	g.queue("flow", 2, core.WithFlow("tenant-7"), core.WithLevel(1))
	snap, err := s.Inspect(context.Background(), 10)
	ok(t, err)
	if len(snap.Waiters) != 2 || snap.Waiting != 2 {
		t.Fatalf("snapshot %+v: want 2 waiters", snap)
	}
	w0, w1 := snap.Waiters[0], snap.Waiters[1]
	if w0.Flow != "" || w0.Level != 0 || w1.Flow != "tenant-7" || w1.Level != 1 || w1.Weight != 1 || w1.ID == "" {
		t.Fatalf("waiters %+v, want the default flow then tenant-7 at level 1", snap.Waiters)
	}
	ok(t, g.next(p).p.Release(context.Background()))
	ok(t, (<-g.grants).p.Release(context.Background()))
}

// The fast paths step aside while a waiter of a flow is queued: a call of
// the default flow neither takes a permit that is free (TryAcquire fails,
// Acquire queues) nor overtakes the heavy waiter that cannot fit yet.
func TestDefaultFlowDoesNotOvertakeFlows(t *testing.T) {
	s := fairSem(t, 2)
	ctx := context.Background()
	p := acquire(t, s)
	g := newGrantLog(t, s)
	g.queue("heavy", 1, core.WithFlow("big"), core.WithWeight(2))
	if q, err := s.TryAcquire(ctx); !errors.Is(err, core.ErrNoPermit) {
		t.Fatalf("TryAcquire with a flow waiter queued: %v, %v; want ErrNoPermit", q, err)
	}
	g.queue("plain", 2)
	n := g.next(p)
	if n.label != "heavy" {
		t.Fatalf("grant to %s, want heavy", n.label)
	}
	if n = g.next(n.p); n.label != "plain" {
		t.Fatalf("grant to %s, want plain", n.label)
	}
	ok(t, n.p.Release(ctx))
	wantStats(t, s, 0, 0)
}
