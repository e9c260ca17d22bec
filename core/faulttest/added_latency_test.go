package faulttest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/distsem/distsem/core/internal/faultproxy"
	"github.com/distsem/distsem/core/redissem"
)

// TestLatency runs two "processes" (semaphores on their own clients) of
// four workers each through the proxy, first as is and then with 20 ms ±
// 10 ms added to each round trip (10 ± 5 ms each way). The limit must hold
// and no call may fail; the drop in throughput is logged next to what the
// added round trips predict.
func TestLatency(t *testing.T) {
	const (
		limit   = 2
		workers = 4
		hold    = 10 * time.Millisecond
		phase   = 3 * time.Second
	)
	srv := sharedServer(t)
	pfx, name := prefix(t), "latency"
	px, err := faultproxy.Start(srv.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	var sems []*redissem.Semaphore
	for range 2 {
		s := redissem.New(newClient(t, px.Addr()), name, limit, redissem.WithKeyPrefix(pfx), redissem.WithDefaultLeaseTTL(5*time.Second))
		defer s.Close()
		sems = append(sems, s)
	}
	run := func() (ivs []interval, errs []error) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		end := time.Now().Add(phase)
		for _, s := range sems {
			for range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for time.Now().Before(end) {
						ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
						p, err := s.Acquire(ctx)
						cancel()
						if err != nil {
							mu.Lock()
							errs = append(errs, err)
							mu.Unlock()
							continue
						}
						from := time.Now().UnixNano()
						time.Sleep(hold)
						to := time.Now().UnixNano()
						if err := p.Release(context.Background()); err != nil {
							mu.Lock()
							errs = append(errs, err)
							mu.Unlock()
						}
						mu.Lock()
						ivs = append(ivs, interval{from, to, 1})
						mu.Unlock()
					}
				}()
			}
		}
		wg.Wait()
		return ivs, errs
	}
	check := func(label string, ivs []interval, errs []error) float64 {
		if n := peak(ivs); n > limit {
			t.Errorf("%s: %d holders at once, limit %d", label, n, limit)
		}
		for i, err := range errs {
			if i < 5 {
				t.Errorf("%s: spurious error: %v", label, err)
			}
		}
		return float64(len(ivs)) / phase.Seconds()
	}
	ivs, errs := run()
	base := check("no latency", ivs, errs)
	px.SetLatency(faultproxy.Upstream, faultproxy.Latency{Fixed: 10 * time.Millisecond, Jitter: 5 * time.Millisecond})
	px.SetLatency(faultproxy.Downstream, faultproxy.Latency{Fixed: 10 * time.Millisecond, Jitter: 5 * time.Millisecond})
	ivs, errs = run()
	slow := check("20ms±10ms", ivs, errs)
	// A hand-off between processes costs the release's round trip plus the
	// notification's one-way trip, so each permit cycles at most every
	// hold + 1.5 RTT; within a process, the grant comes back in the reply.
	predicted := float64(limit) / (hold + 30*time.Millisecond).Seconds()
	figure(t, "latency_20ms", "grants_per_s_before", base, "grants_per_s_after", slow,
		"ratio", slow/base, "predicted_grants_per_s_after", predicted)
	checkCounts(t, sems[0], newClient(t, srv.addr()), pfx, name)
}
