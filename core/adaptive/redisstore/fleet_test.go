package redisstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/adaptive"
	"github.com/distsem/distsem/core/adaptive/redisstore"
	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/internal/servertest"
	"github.com/distsem/distsem/internal/testwait"
)

// A fleet of processes, each with its own client, semaphore and Limiter,
// on a real Redis in both of the semaphore's modes, standalone and
// Cluster: each window is computed by one process, the controller moves
// the stored limit, every process's semaphore sees the limit of the last
// decision, and when the process that computes stops, another one
// computes the next windows from the stored state. Waits are on events,
// never on the clock.
func TestFleetOnRedisElectsOneProcessPerWindow(t *testing.T) {
	standalone := func(t *testing.T) redis.UniversalClient {
		c := redis.NewClient(&redis.Options{Addr: servertest.RedisAddr(t)})
		t.Cleanup(func() { c.Close() })
		return c
	}
	cluster := func(t *testing.T) redis.UniversalClient {
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: servertest.RedisClusterAddrs(t)})
		t.Cleanup(func() { c.Close() })
		return c
	}
	for server, newClient := range map[string]func(*testing.T) redis.UniversalClient{"standalone": standalone, "cluster": cluster} {
		for mode, newSem := range map[string]func(c redis.UniversalClient, name string) redisSem{
			"default": func(c redis.UniversalClient, name string) redisSem { return redissem.New(c, name, 8) },
			"leased":  func(c redis.UniversalClient, name string) redisSem { return redissem.NewLeased(c, name, 8) },
		} {
			t.Run(server+"/"+mode, func(t *testing.T) {
				testFleet(t, func(name string) (redisSem, adaptive.Store) {
					c := newClient(t)
					return newSem(c, name), redisstore.New(c, name)
				})
			})
		}
	}
}

type redisSem interface {
	core.LimitSemaphore
	Close() error
}

// fleetProcess is one process of a fleet test: its semaphore, the store
// its Limiter uses, and the Limiter.
type fleetProcess struct {
	sem redisSem
	lim *adaptive.Limiter
}

// testFleet runs 3 processes made by newProc (each call a process of its
// own) on one semaphore name.
func testFleet(t *testing.T, newProc func(name string) (redisSem, adaptive.Store)) {
	name := uniqueName(t)
	type decision struct {
		proc int
		e    adaptive.Event
	}
	events := make(chan decision, 1024)
	procs := make([]fleetProcess, 3)
	for i := range procs {
		sem, store := newProc(name)
		obs := adaptive.ObserverFunc(func(e adaptive.Event) {
			if e.Kind == adaptive.EventDecision {
				events <- decision{i, e}
			}
		})
		l, err := adaptive.New(sem, store, adaptive.WithWindow(50*time.Millisecond),
			adaptive.WithMinSamples(1), adaptive.WithObserver(obs))
		if err != nil {
			t.Fatal(err)
		}
		procs[i] = fleetProcess{sem, l}
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Go(func() {
			for ctx.Err() == nil {
				pm, err := p.lim.Acquire(ctx)
				if err != nil {
					continue
				}
				_ = pm.Release(ctx)
			}
		})
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			wg.Wait()
			for _, p := range procs {
				p.lim.Close()
			}
		}
	}
	defer func() {
		stop()
		for _, p := range procs {
			p.sem.Close()
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
	procs[last.proc].lim.Close()
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
	for i, p := range procs {
		testwait.Until(t, 10*time.Second, fmt.Sprintf("process %d sees limit %d", i, last.e.Limit), func() bool {
			st, err := p.sem.Stats(t.Context())
			return err == nil && st.Limit == last.e.Limit
		})
	}
}
