package faulttest

import (
	"context"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core/internal/faultproxy"
	"github.com/distsem/distsem/core/redissem"
)

// TestSoak is off unless DISTSEM_SOAK is a duration (for example 10m). For
// that long, workers of three semaphores (two through the proxy, one direct)
// acquire and release while random faults come and go: blackhole, refusal,
// resets, latency, DEBUG SLEEP and, rarely, a restart of Redis with no data.
// Then every fault is healed and every invariant checked: never more live
// holders than the limit (outside the lease TTL after a restart, when the
// docs allow over-admission), no capacity lost, the queue empty, every
// permit free again, goroutines and heap flat.
func TestSoak(t *testing.T) {
	d, err := time.ParseDuration(os.Getenv("DISTSEM_SOAK"))
	if err != nil || d <= 0 {
		t.Skip("DISTSEM_SOAK is not set (for example DISTSEM_SOAK=10m): the soak is off")
	}
	const (
		limit   = 3
		ttl     = 2 * time.Second
		workers = 4
		hold    = 10 * time.Millisecond
	)
	srv := newServer(t)
	pfx, name := prefix(t), "soak"
	px, err := faultproxy.Start(srv.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	opts := []redissem.Option{redissem.WithKeyPrefix(pfx), redissem.WithDefaultLeaseTTL(ttl)}
	direct := newClient(t, srv.addr())
	sems := []*redissem.Semaphore{
		redissem.New(newClient(t, px.Addr()), name, limit, opts...),
		redissem.New(newClient(t, px.Addr()), name, limit, opts...),
		redissem.New(direct, name, limit, opts...),
	}
	for _, s := range sems {
		defer s.Close()
	}
	base := measure(px)

	var mu sync.Mutex
	var ivs []interval
	var restarts []time.Time
	var grants, failures atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, s := range sems {
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					ctx, cancel := context.WithTimeout(context.Background(), time.Duration(100+rand.IntN(2000))*time.Millisecond)
					p, err := s.Acquire(ctx)
					cancel()
					if err != nil {
						failures.Add(1)
						time.Sleep(time.Millisecond)
						continue
					}
					grants.Add(1)
					from := time.Now()
					time.Sleep(hold)
					to := time.Now()
					release(p)
					mu.Lock()
					ivs = append(ivs, interval{from.UnixNano(), to.UnixNano(), p.Weight()})
					mu.Unlock()
				}
			}()
		}
	}
	sleeper := newClient(t, srv.addr(), func(o *redis.Options) { o.ReadTimeout = 10 * time.Second; o.MaxRetries = -1 })
	faults := map[string]int{}
	end := time.Now().Add(d)
	var mid footprint
	for time.Now().Before(end) {
		time.Sleep(time.Duration(500+rand.IntN(3000)) * time.Millisecond)
		lasting := time.Duration(200+rand.IntN(2500)) * time.Millisecond
		var kind string
		switch rand.IntN(12) {
		case 0, 1, 2:
			kind = "blackhole"
			_ = px.SetMode(faultproxy.Blackhole)
			time.Sleep(lasting)
		case 3, 4:
			kind = "refuse"
			_ = px.SetMode(faultproxy.Refuse)
			time.Sleep(lasting)
		case 5, 6:
			kind = "reset"
			_ = px.SetMode(faultproxy.Reset)
			time.Sleep(lasting / 4)
		case 7, 8:
			kind = "latency"
			l := faultproxy.Latency{Fixed: time.Duration(rand.IntN(50)) * time.Millisecond, Jitter: 10 * time.Millisecond}
			px.SetLatency(faultproxy.Upstream, l)
			px.SetLatency(faultproxy.Downstream, l)
			time.Sleep(3 * lasting)
			px.SetLatency(faultproxy.Upstream, faultproxy.Latency{})
			px.SetLatency(faultproxy.Downstream, faultproxy.Latency{})
		case 9, 10:
			kind = "debug-sleep"
			_ = sleeper.Do(context.Background(), "DEBUG", "SLEEP", lasting.Seconds()).Err()
		case 11:
			if rand.IntN(3) == 0 {
				kind = "restart-empty"
				mu.Lock()
				restarts = append(restarts, time.Now())
				mu.Unlock()
				srv.restart(t)
			}
		}
		_ = px.SetMode(faultproxy.Pass)
		if kind != "" {
			faults[kind]++
		}
		if mid.goroutines == 0 && time.Until(end) < d/2 {
			mid = measure(px)
		}
	}
	close(stop)
	wg.Wait()

	free := awaitFree(t, sems[2], limit, 2*ttl+slack)
	st := checkCounts(t, sems[2], direct, pfx, name)
	if st.Queued != 0 || st.Holders != 0 {
		t.Errorf("after the soak: %d holders and %d waiters left in Redis", st.Holders, st.Queued)
	}
	mu.Lock()
	var checked []interval
	for _, iv := range ivs {
		excused := false
		for _, r := range restarts {
			if iv.to > r.UnixNano() && iv.from < r.Add(ttl+slack).UnixNano() {
				excused = true
			}
		}
		if !excused {
			checked = append(checked, iv)
		}
	}
	top := peak(checked)
	mu.Unlock()
	if top > limit {
		t.Errorf("%d live holders at once, limit %d", top, limit)
	}
	for _, s := range sems {
		_ = s.Close()
	}
	after := awaitFlat(t, base, 2*ttl+slack, px)
	figure(t, "soak", "duration", d, "faults", faults, "grants", grants.Load(), "failed_calls", failures.Load(),
		"peak_live_holders", top, "all_free_after", free, "goroutines_before", base.goroutines,
		"goroutines_after", after.goroutines, "heap_before", base.heap, "heap_mid", mid.heap, "heap_after", after.heap)
}
