// Package adaptivetest drives a fleet of core/adaptive limiters on one
// semaphore, for the real-server tests of the stores and backends that the
// adaptive limit runs on.
package adaptivetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/adaptive"
	"github.com/distsem/distsem/internal/testwait"
)

// Sem is a semaphore with a stored limit that a fleet process closes.
type Sem interface {
	core.LimitSemaphore
	Close() error
}

// Fleet runs 3 processes, each made by a call of newProc (its own client,
// semaphore and Store) on one semaphore, each with a Limiter of the given
// window that acquires and releases in a loop. It checks that each window
// is computed by one process only, and that a decision moved the limit.
// It then closes the Limiter of the process that computed the last of 10
// windows and checks that another process computes the next one (the
// stored state carries over). Last, with every Limiter stopped, every
// process's semaphore must see the limit of the last decision. Waits are
// on events, never on the clock.
func Fleet(t *testing.T, window time.Duration, newProc func() (Sem, adaptive.Store)) {
	t.Helper()
	type decision struct {
		proc int
		e    adaptive.Event
	}
	events := make(chan decision, 1024)
	sems := make([]Sem, 3)
	lims := make([]*adaptive.Limiter, 3)
	for i := range sems {
		sem, store := newProc()
		obs := adaptive.ObserverFunc(func(e adaptive.Event) {
			if e.Kind == adaptive.EventDecision {
				events <- decision{i, e}
			}
		})
		l, err := adaptive.New(sem, store, adaptive.WithWindow(window), adaptive.WithMinSamples(1), adaptive.WithObserver(obs))
		if err != nil {
			t.Fatal(err)
		}
		sems[i], lims[i] = sem, l
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for _, l := range lims {
		wg.Go(func() {
			for ctx.Err() == nil {
				p, err := l.Acquire(ctx)
				if err != nil {
					continue
				}
				_ = p.Release(ctx)
			}
		})
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			wg.Wait()
			for _, l := range lims {
				l.Close()
			}
		}
	}
	defer func() {
		stop()
		for _, s := range sems {
			s.Close()
		}
	}()
	by := map[int64]int{}
	var last decision
	moved := false
	for len(by) < 10 {
		d := <-events
		moved = moved || d.e.Limit != d.e.Previous
		if p, dup := by[d.e.Window]; dup {
			t.Fatalf("window %d computed by processes %d and %d", d.e.Window, p, d.proc)
		}
		by[d.e.Window], last = d.proc, d
	}
	lims[last.proc].Close()
	for {
		d := <-events
		if d.e.Window <= last.e.Window+1 {
			continue // computed before the Close took effect
		}
		if d.proc == last.proc {
			t.Fatalf("window %d computed by the closed process", d.e.Window)
		}
		last = d
		break
	}
	// No decision after stop: the last one seen is the limit stored.
	stop()
	for len(events) > 0 {
		last = <-events
	}
	if !moved {
		t.Errorf("no decision of %d moved the limit", len(by))
	}
	for i, s := range sems {
		testwait.Until(t, 10*time.Second, fmt.Sprintf("process %d sees limit %d", i, last.e.Limit), func() bool {
			st, err := s.Stats(t.Context())
			return err == nil && st.Limit == last.e.Limit
		})
	}
}
