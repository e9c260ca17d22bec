package faulttest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/redissem"
)

// TestRedisRestartedEmpty restarts Redis with no data while two permits are
// held and three waiters are queued. Every live waiter must be served; each
// holder's process re-asserts its permit on the empty server (as after a
// failover to a replica that lacked it), and a holder either keeps it (it
// then releases it one lease TTL after the restart) or, if the waiters took
// the permits first, sees Lost() within one lease TTL (+slack); and from one
// TTL after the restart the limit holds again: counting the old holders
// until their Lost() or release and the waiters (which keep acquiring) while
// they hold, never more than the limit at once.
func TestRedisRestartedEmpty(t *testing.T) {
	const (
		limit = 2
		ttl   = 2 * time.Second
	)
	srv := newServer(t)
	pfx, name := prefix(t), "restart"
	mk := func() *redissem.Semaphore {
		s := redissem.New(newClient(t, srv.addr()), name, limit, redissem.WithKeyPrefix(pfx), redissem.WithDefaultLeaseTTL(ttl))
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	holderSem, waiterSem := mk(), mk()
	bg := context.Background()
	var holders []*core.Permit
	for range limit {
		p, err := holderSem.Acquire(bg)
		if err != nil {
			t.Fatal(err)
		}
		holders = append(holders, p)
	}
	var mu sync.Mutex
	var ivs []interval
	var firstServed []time.Duration
	var restartAt time.Time
	var kept int
	var lost []time.Duration // after the restart, per holder that saw Lost()
	started := time.Now().UnixNano()
	restarted := make(chan struct{})
	var wg sync.WaitGroup
	for _, p := range holders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, end := restarted, (<-chan time.Time)(nil)
			limit := time.After(30 * time.Second)
			for {
				select {
				case <-p.Lost():
					mu.Lock()
					ivs = append(ivs, interval{started, time.Now().UnixNano(), 1})
					lost = append(lost, time.Since(restartAt))
					mu.Unlock()
					return
				case <-r:
					r, end = nil, time.After(ttl)
				case <-end: // re-asserted and kept for a lease: done
					to := time.Now().UnixNano()
					release(p)
					mu.Lock()
					ivs = append(ivs, interval{started, to, 1})
					kept++
					mu.Unlock()
					return
				case <-limit:
					t.Error("a holder neither saw Lost() nor kept its permit after the restart")
					return
				}
			}
		}()
	}
	stopAt := make(chan time.Time, 1)
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			first := true
			for {
				ctx, cancel := context.WithTimeout(bg, 30*time.Second)
				p, err := waiterSem.Acquire(ctx)
				cancel()
				if err != nil {
					t.Errorf("live waiter not served: %v", err)
					return
				}
				from := time.Now()
				time.Sleep(50 * time.Millisecond)
				to := time.Now()
				release(p)
				mu.Lock()
				ivs = append(ivs, interval{from.UnixNano(), to.UnixNano(), 1})
				if first {
					firstServed = append(firstServed, from.Sub(restartAt))
					first = false
				}
				mu.Unlock()
				select {
				case end := <-stopAt:
					stopAt <- end
					if to.After(end) {
						return
					}
				default:
				}
			}
		}()
	}
	awaitWaiting(t, waiterSem, 3, 10*time.Second)
	mu.Lock()
	restartAt = time.Now()
	mu.Unlock()
	srv.restart(t)
	close(restarted)
	stopAt <- restartAt.Add(2*ttl + slack)
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	settled := restartAt.Add(ttl + slack).UnixNano()
	var after []interval
	for _, iv := range ivs {
		if iv.to > settled {
			after = append(after, interval{max(iv.from, settled), iv.to, iv.weight})
		}
	}
	for _, d := range lost {
		if d > ttl+slack {
			t.Errorf("a holder saw Lost() %v after the restart, want within the lease TTL %v (+%v)", d, ttl, slack)
		}
	}
	if n := peak(after); n > limit {
		t.Errorf("%d permits believed held at once from one TTL after the restart, limit %d", n, limit)
	}
	if len(firstServed) != 3 {
		t.Errorf("%d of 3 live waiters served", len(firstServed))
	}
	figure(t, "restart_empty", "holders_kept", kept, "holders_lost_after_ms", fmtDurations(lost), "waiters_first_served_after_ms", fmtDurations(firstServed),
		"grants_after_restart", len(ivs)-len(holders), "peak_after_one_ttl", peak(after))
	for _, p := range holders {
		release(p)
	}
	checkCounts(t, holderSem, newClient(t, srv.addr()), pfx, name)
}

func fmtDurations(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = float64(d.Microseconds()) / 1000
	}
	return out
}
