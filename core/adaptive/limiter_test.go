package adaptive_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/adaptive"
)

// db models a database in front of which the limit sits: a query takes
// service while at most cores run, and proportionally longer beyond.
type db struct {
	service  time.Duration
	cores    int64
	inflight atomic.Int64
	peak     atomic.Int64
}

func (d *db) query() {
	c := d.inflight.Add(1)
	defer d.inflight.Add(-1)
	for p := d.peak.Load(); c > p && !d.peak.CompareAndSwap(p, c); p = d.peak.Load() {
	}
	time.Sleep(d.service * time.Duration(max(c, d.cores)) / time.Duration(d.cores))
}

// run starts workers callers on each limiter, each querying d under a
// permit until ctx ends, and releasing it with the ctx release returns (ctx
// itself if release is nil); it returns a func that waits for them.
func run(ctx context.Context, d *db, lims []*adaptive.Limiter, workers int, release func(context.Context) context.Context) func() {
	if release == nil {
		release = func(ctx context.Context) context.Context { return ctx }
	}
	var wg sync.WaitGroup
	for _, l := range lims {
		for range workers {
			wg.Go(func() {
				for ctx.Err() == nil {
					p, err := l.Acquire(ctx)
					if err != nil {
						continue
					}
					d.query()
					_ = p.Release(release(ctx))
				}
			})
		}
	}
	return wg.Wait
}

// decisions collects the EventDecision events of several limiters.
type decisions struct {
	mu  sync.Mutex
	by  map[int64][]int // window → the processes that computed it
	all []adaptive.Event
}

func (d *decisions) observer(proc int) adaptive.Observer {
	return adaptive.ObserverFunc(func(e adaptive.Event) {
		if e.Kind != adaptive.EventDecision {
			return
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.by == nil {
			d.by = make(map[int64][]int)
		}
		d.by[e.Window] = append(d.by[e.Window], proc)
		d.all = append(d.all, e)
	})
}

func newFleet(t *testing.T, sem core.LimitSemaphore, store adaptive.Store, n int, dec *decisions, opts ...adaptive.Option) []*adaptive.Limiter {
	t.Helper()
	lims := make([]*adaptive.Limiter, n)
	for i := range lims {
		l, err := adaptive.New(sem, store, append([]adaptive.Option{adaptive.WithObserver(dec.observer(i))}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		lims[i] = l
	}
	return lims
}

func limit(t *testing.T, sem core.LimitSemaphore) int64 {
	t.Helper()
	st, err := sem.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return st.Limit
}

func TestFleetConvergesFromAboveAndBelow(t *testing.T) {
	for _, start := range []int64{64, 1} {
		synctest.Test(t, func(t *testing.T) {
			sem := core.NewLocal(start)
			d := &db{service: 10 * time.Millisecond, cores: 2}
			dec := &decisions{}
			lims := newFleet(t, sem, &adaptive.MemStore{}, 4, dec)
			ctx, cancel := context.WithCancel(t.Context())
			wait := run(ctx, d, lims, 16, nil)
			time.Sleep(15 * time.Second)
			got := limit(t, sem)
			d.peak.Store(0)
			time.Sleep(30 * time.Second)
			cancel()
			wait()
			for _, l := range lims {
				l.Close()
			}
			// Tolerance 1.5 × 2 cores: 3.
			if got < 2 || got > 4 {
				t.Errorf("start %d: limit %d after 15s, want within [2, 4]", start, got)
			}
			if p := d.peak.Load(); p > 4 {
				t.Errorf("start %d: %d queries in flight after convergence, want <= 4", start, p)
			}
			for w, procs := range dec.by {
				if len(procs) > 1 {
					t.Errorf("window %d computed by %v, want one process", w, procs)
				}
			}
		})
	}
}

func TestAnotherProcessComputesAfterTheElectedOneStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sem := core.NewLocal(1)
		d := &db{service: 10 * time.Millisecond, cores: 2}
		dec := &decisions{}
		lims := newFleet(t, sem, &adaptive.MemStore{}, 3, dec)
		ctx, cancel := context.WithCancel(t.Context())
		wait := run(ctx, d, lims, 16, nil)
		time.Sleep(20 * time.Second)
		dec.mu.Lock()
		last := dec.all[len(dec.all)-1]
		killed := dec.by[last.Window][0]
		dec.mu.Unlock()
		lims[killed].Close() // its callers keep going, without samples
		before := limit(t, sem)
		time.Sleep(10 * time.Second)
		cancel()
		wait()
		for _, l := range lims {
			l.Close()
		}
		dec.mu.Lock()
		defer dec.mu.Unlock()
		after := 0
		for w, procs := range dec.by {
			if w > last.Window+1 {
				after++
				if procs[0] == killed {
					t.Errorf("window %d computed by the stopped process", w)
				}
			}
		}
		if after < 5 {
			t.Errorf("%d windows computed after the stop, want >= 5", after)
		}
		if got := limit(t, sem); got < before-1 || got > before+1 {
			t.Errorf("limit went from %d to %d after the stop", before, got)
		}
	})
}

func TestMonitorOnlyRecommendsWithoutSetting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sem := core.NewLocal(16)
		d := &db{service: 10 * time.Millisecond, cores: 2}
		dec := &decisions{}
		lims := newFleet(t, sem, &adaptive.MemStore{}, 2, dec, adaptive.WithMonitorOnly())
		ctx, cancel := context.WithCancel(t.Context())
		wait := run(ctx, d, lims, 4, nil)
		time.Sleep(10 * time.Second)
		cancel()
		wait()
		for _, l := range lims {
			l.Close()
		}
		if got := limit(t, sem); got != 16 {
			t.Errorf("monitor-only changed the limit to %d", got)
		}
		if len(dec.all) == 0 || !dec.all[0].MonitorOnly {
			t.Fatalf("no monitor-only decision: %v", dec.all)
		}
		if r := lims[0].Recommended(); r == 0 {
			t.Errorf("Recommended() = 0 after 10 windows")
		}
	})
}

func TestFailedOutcomesBackOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sem := core.NewLocal(20)
		dec := &decisions{}
		lims := newFleet(t, sem, &adaptive.MemStore{}, 1, dec, adaptive.WithSlowStart(0))
		ctx, cancel := context.WithCancel(t.Context())
		failed := func(ctx context.Context) context.Context {
			return adaptive.ContextWithOutcome(ctx, adaptive.OutcomeOf(errors.New("server error")))
		}
		wait := run(ctx, &db{service: 10 * time.Millisecond, cores: 8}, lims, 8, failed)
		time.Sleep(8 * time.Second)
		cancel()
		wait()
		lims[0].Close()
		if got := limit(t, sem); got >= 20 {
			t.Errorf("limit %d after failing queries, want < 20", got)
		}
		for _, e := range dec.all[1:] {
			if e.Reason == adaptive.ReasonIncrease || e.Reason == adaptive.ReasonHold || e.Reason == adaptive.ReasonLatency {
				t.Errorf("decision for window %d: %v, want errors", e.Window, e.Reason)
			}
		}
	})
}

// failingStore fails every call.
type failingStore struct{}

func (failingStore) Sync(context.Context, adaptive.SyncRequest) (adaptive.SyncReply, error) {
	return adaptive.SyncReply{}, core.ErrUnavailable
}

func (failingStore) Save(context.Context, time.Duration, adaptive.State) error {
	return core.ErrUnavailable
}

func TestStoreFailureLeavesTheLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sem := core.NewLocal(7)
		var errs atomic.Int64
		l, err := adaptive.New(sem, failingStore{}, adaptive.WithOnError(func(err error) {
			if errors.Is(err, core.ErrUnavailable) {
				errs.Add(1)
			}
		}))
		if err != nil {
			t.Fatal(err)
		}
		p, err := l.Acquire(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second)
		_ = p.Release(t.Context())
		l.Close()
		if got := limit(t, sem); got != 7 {
			t.Errorf("limit %d, want 7", got)
		}
		if errs.Load() < 4 {
			t.Errorf("%d errors reported in 5 windows, want >= 4", errs.Load())
		}
	})
}

func TestPermitsStandForTheWrappedOnes(t *testing.T) {
	sem := core.NewLocal(1)
	l, err := adaptive.New(sem, &adaptive.MemStore{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := t.Context()
	p, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.TryAcquire(ctx); !errors.Is(err, core.ErrNoPermit) {
		t.Fatalf("TryAcquire on a full semaphore: %v, want ErrNoPermit", err)
	}
	if p.Token() == 0 || p.Lost() != nil {
		t.Fatalf("token %d, lost %v: not the Local permit's", p.Token(), p.Lost())
	}
	if err := p.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if st, _ := sem.Stats(ctx); st.InUse != 0 {
		t.Fatalf("in use %d after Release, want 0", st.InUse)
	}
}
