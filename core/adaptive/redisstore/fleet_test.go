package redisstore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/adaptive"
	"github.com/distsem/distsem/core/adaptive/redisstore"
	"github.com/distsem/distsem/core/redissem"
)

// A fleet of limiters on one Redis semaphore, in both of its modes: each
// window is computed by one process, the slow start sets the limit, and
// when the process that computes stops, another one computes the next
// windows from the stored state. Waits are on events, never on the clock.
func TestFleetOnRedisElectsOneProcessPerWindow(t *testing.T) {
	for mode, newSem := range map[string]func(c *redis.Client, name string) redisSem{
		"default": func(c *redis.Client, name string) redisSem { return redissem.New(c, name, 8) },
		"leased":  func(c *redis.Client, name string) redisSem { return redissem.NewLeased(c, name, 8) },
	} {
		t.Run(mode, func(t *testing.T) { testFleet(t, newSem) })
	}
}

type redisSem interface {
	core.LimitSemaphore
	Close() error
}

func testFleet(t *testing.T, newSem func(c *redis.Client, name string) redisSem) {
	c := realClient(t)
	name := uniqueName(t)
	sem := newSem(c, name)
	defer sem.Close()
	type decision struct {
		proc int
		e    adaptive.Event
	}
	events := make(chan decision, 1024)
	const procs = 3
	lims := make([]*adaptive.Limiter, procs)
	for i := range lims {
		obs := adaptive.ObserverFunc(func(e adaptive.Event) {
			if e.Kind == adaptive.EventDecision {
				events <- decision{i, e}
			}
		})
		l, err := adaptive.New(sem, redisstore.New(c, name), adaptive.WithWindow(50*time.Millisecond),
			adaptive.WithMinSamples(1), adaptive.WithObserver(obs))
		if err != nil {
			t.Fatal(err)
		}
		lims[i] = l
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
	defer func() {
		cancel()
		wg.Wait()
		for _, l := range lims {
			l.Close()
		}
	}()
	by := map[int64]int{}
	var last decision
	for len(by) < 10 {
		d := <-events
		if p, dup := by[d.e.Window]; dup {
			t.Fatalf("window %d computed by processes %d and %d", d.e.Window, p, d.proc)
		}
		by[d.e.Window], last = d.proc, d
	}
	st, err := sem.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if st.Limit == 8 {
		t.Errorf("limit still 8 after 10 decisions: the slow start did not set it")
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
		return
	}
}
