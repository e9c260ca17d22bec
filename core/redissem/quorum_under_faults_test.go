package redissem_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/redissem"
)

// TestQuorumFaults runs two "processes" (two Quorum values with their own
// clients) through a limit of 1 on 3 and 5 masters (a majority), and of 2
// on 5 masters (4 must grant), while one master is killed, stalled with
// DEBUG SLEEP, or restarted empty after one lease TTL. The recorded
// timeline of holders never exceeds the limit, every Acquire succeeds, and
// nothing is left on the masters.
func TestQuorumFaults(t *testing.T) {
	for _, c := range []struct {
		n     int
		limit int64
	}{{3, 1}, {5, 1}, {5, 2}} {
		for _, fault := range []string{"kill", "stall", "restart"} {
			t.Run(fmt.Sprintf("%d-masters/limit-%d/%s", c.n, c.limit, fault), func(t *testing.T) {
				t.Parallel()
				quorumUnderFault(t, c.n, c.limit, fault)
			})
		}
	}
}

func quorumUnderFault(t *testing.T, n int, limit int64, fault string) {
	const procs, workers, iters, ttl = 2, 3, 10, 1500 * time.Millisecond
	prefix := uniquePrefix(t)
	ms := masters(t, n)
	var qs []*redissem.Quorum
	for range procs {
		// A master may take longer than the default (TTL/10 = 150 ms) to
		// answer under -race with the other subtests running: at 5 masters
		// and limit 2 a second slow master then fails the Acquire (4 must
		// grant), which is not the fault this test injects (it failed so
		// about once in four loaded runs). 500 ms is still below the 1 s
		// stall, so the stalled master is still skipped.
		q := redissem.NewQuorum(clientsOf(t, ms), "faults", limit, redissem.WithKeyPrefix(prefix),
			redissem.WithDefaultLeaseTTL(ttl), redissem.WithMasterTimeout(500*time.Millisecond))
		t.Cleanup(func() { _ = q.Close() })
		qs = append(qs, q)
	}
	var mu sync.Mutex
	var timeline []interval
	var grants atomic.Int64
	faultAt := int64(procs * workers * iters / 4)
	injected := make(chan struct{})
	var faultWG sync.WaitGroup
	inject := func() {
		defer close(injected)
		switch fault {
		case "kill":
			ms[0].Kill()
		case "restart":
			// As the Redis documentation advises, a crashed master rejoins
			// empty only after one lease TTL: by then every permit it
			// granted has ended, or was renewed elsewhere and reported lost.
			ms[0].Kill()
			faultWG.Go(func() {
				time.Sleep(ttl + ttl/2) // the fault model: down for longer than a lease
				ms[0].Restart()
			})
		case "stall":
			c := redis.NewClient(&redis.Options{Addr: ms[0].Addr(), ReadTimeout: 5 * time.Second})
			faultWG.Go(func() {
				defer c.Close()
				_ = c.Do(context.Background(), "DEBUG", "SLEEP", "1").Err()
			})
		}
	}
	var afterFault atomic.Int64
	var wg sync.WaitGroup
	for _, q := range qs {
		for range workers {
			wg.Go(func() {
				for range iters {
					ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
					p, err := q.Acquire(ctx)
					cancel()
					if err != nil {
						t.Errorf("Acquire with a majority up: %v", err)
						return
					}
					from := time.Now()
					select {
					case <-injected:
						afterFault.Add(1)
					default:
					}
					if grants.Add(1) == faultAt {
						inject()
					}
					time.Sleep(time.Millisecond) // the work the permit protects
					to := time.Now()
					// With a master down or forgotten, Release may report that
					// it could not confirm enough masters.
					if err := p.Release(context.Background()); err != nil &&
						!errors.Is(err, core.ErrUnavailable) && !errors.Is(err, core.ErrNotHeld) {
						t.Errorf("Release: %v", err)
					}
					mu.Lock()
					timeline = append(timeline, interval{from, to})
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	faultWG.Wait()
	if got := peak(timeline); got > int(limit) {
		t.Fatalf("%d holders at once on the recorded timeline, limit %d", got, limit)
	}
	if afterFault.Load() == 0 {
		t.Fatal("no Acquire succeeded after the fault")
	}
	t.Logf("%d grants, %d after the fault", len(timeline), afterFault.Load())
	for _, q := range qs {
		ok(t, q.Close())
	}
	up := make([]bool, n)
	for i := range up {
		up[i] = i != 0 || fault != "kill"
	}
	wantMastersEmpty(t, clientsOf(t, ms), up, prefix, "faults")
}

// peak returns the largest number of intervals that overlap.
func peak(iv []interval) int {
	type ev struct {
		at time.Time
		d  int
	}
	var evs []ev
	for _, x := range iv {
		evs = append(evs, ev{x.from, +1}, ev{x.to, -1})
	}
	slices.SortFunc(evs, func(a, b ev) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.d - b.d // an end before a start at the same instant
	})
	n, top := 0, 0
	for _, e := range evs {
		n += e.d
		top = max(top, n)
	}
	return top
}
