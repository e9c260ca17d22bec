package promsem_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/promsem"
	"github.com/distsem/distsem/core/redissem"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// value returns the value of the gauge or counter name{labels}, or the
// sample count and sum of the histogram, gathered from c.
func value(t *testing.T, c prometheus.Collector, name string, labels map[string]string) (float64, uint64) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue next
				}
			}
			switch {
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue(), 0
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue(), 0
			case m.GetHistogram() != nil:
				return m.GetHistogram().GetSampleSum(), m.GetHistogram().GetSampleCount()
			}
		}
	}
	return -1, 0 // absent
}

func key(k string) map[string]string { return map[string]string{"key": k} }

func TestCollectorTracksAcquireWaitAndRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		col := promsem.New(promsem.WithKeys("a"))
		sem := core.NewLocalKeyed(1, core.WithObserver(col))
		defer sem.Close()
		held, err := sem.Acquire(t.Context(), "a")
		if err != nil {
			t.Fatal(err)
		}
		if v, _ := value(t, col, "distsem_sem_in_use", key("a")); v != 1 {
			t.Fatalf("in_use{a} = %v, want 1", v)
		}
		done := make(chan error)
		go func() {
			p, err := sem.Acquire(t.Context(), "a")
			if err == nil {
				err = p.Release(t.Context())
			}
			done <- err
		}()
		synctest.Wait()
		if v, _ := value(t, col, "distsem_sem_waiting", key("a")); v != 1 {
			t.Fatalf("waiting{a} = %v, want 1", v)
		}
		time.Sleep(2 * time.Second) // fake time: the waiter waits 2s
		held.Release(t.Context())
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if v, _ := value(t, col, "distsem_sem_waiting", key("a")); v != 0 {
			t.Fatalf("waiting{a} after = %v, want 0", v)
		}
		if v, _ := value(t, col, "distsem_sem_in_use", key("a")); v != 0 {
			t.Fatalf("in_use{a} after = %v, want 0", v)
		}
		sum, n := value(t, col, "distsem_sem_acquire_wait_seconds", map[string]string{"key": "a", "result": "acquired"})
		if n != 2 || sum != 2 {
			t.Fatalf("acquired wait histogram: %d samples summing %vs, want 2 summing 2s (0 and 2)", n, sum)
		}

		// A waiter that gives up is an abandoned sample, and leaves the queue.
		held, _ = sem.Acquire(t.Context(), "a")
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if _, err := sem.Acquire(ctx, "a"); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v", err)
		}
		held.Release(t.Context())
		sum, n = value(t, col, "distsem_sem_acquire_wait_seconds", map[string]string{"key": "a", "result": "abandoned"})
		if n != 1 || sum != 1 {
			t.Fatalf("abandoned: %d samples summing %vs, want 1 of 1s", n, sum)
		}
		if v, _ := value(t, col, "distsem_sem_waiting", key("a")); v != 0 {
			t.Fatalf("waiting{a} after abandon = %v, want 0", v)
		}
	})
}

// Keys not named, however many and however long, fold into "other": the
// label set stays bounded.
func TestCollectorBoundsLabels(t *testing.T) {
	long := strings.Repeat("é", 200) // 400 bytes
	col := promsem.New(promsem.WithKeys("a", long))
	sem := core.NewLocalKeyed(10, core.WithObserver(col))
	defer sem.Close()
	var held []*core.Permit
	for i := range 50 {
		p, err := sem.Acquire(t.Context(), fmt.Sprintf("client-%d-%s", i, strings.Repeat("x", 1000)))
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, p)
	}
	p, _ := sem.Acquire(t.Context(), long)
	held = append(held, p)
	if n := testutil.CollectAndCount(col, "distsem_sem_in_use"); n != 3 {
		t.Fatalf("%d in_use series, want 3 (a, the long key, other)", n)
	}
	if v, _ := value(t, col, "distsem_sem_in_use", key("other")); v != 50 {
		t.Fatalf("in_use{other} = %v, want 50", v)
	}
	cut := strings.Repeat("é", promsem.MaxLabelLen/2)
	if v, _ := value(t, col, "distsem_sem_in_use", key(cut)); v != 1 {
		t.Fatalf("in_use of the long key under its cut label = %v, want 1", v)
	}
	for _, p := range held {
		p.Release(t.Context())
	}
}

type serverReply string

func (e serverReply) Error() string { return string(e) }
func (serverReply) RedisError()     {}

func TestErrorKind(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("%w: acquire: %w", core.ErrUnavailable, context.DeadlineExceeded), "timeout"},
		{fmt.Errorf("%w: %w", core.ErrUnavailable, &net.OpError{Op: "dial", Err: errors.New("connection refused")}), "network"},
		{fmt.Errorf("%w: %w", core.ErrUnavailable, serverReply("READONLY You can't write against a read only replica.")), "server"},
		{fmt.Errorf("%w: %w", core.ErrUnavailable, redis.ErrClosed), "closed"},
		{errors.New("?"), "other"},
	} {
		if got := promsem.ErrorKind(c.err); got != c.want {
			t.Errorf("ErrorKind(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

// A real backend failure: Redis is not there.
func TestCollectorCountsBackendErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	defer rdb.Close()
	col := promsem.New()
	sem := redissem.New(rdb, "down", 1, redissem.WithObserver(col))
	defer sem.Close()
	if _, err := sem.Acquire(t.Context()); !errors.Is(err, core.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	if v, _ := value(t, col, "distsem_sem_backend_errors_total", map[string]string{"kind": "network"}); v < 1 {
		t.Fatalf("backend_errors_total{kind=network} = %v, want >= 1", v)
	}
}

// Two processes (two semaphores on one Redis): the fleet gauges of one see
// the permits the other holds. Keys not named are not read.
func TestStatsCollectorFleetWide(t *testing.T) {
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()
	limits := redissem.WithLimits(map[string]int64{"GET /work": 3})
	a := redissem.NewKeyed(rdb, "gw", 8, limits)
	defer a.Close()
	b := redissem.NewKeyed(rdb, "gw", 8, limits)
	defer b.Close()
	for range 2 {
		p, err := a.Acquire(t.Context(), "GET /work")
		if err != nil {
			t.Fatal(err)
		}
		defer p.Release(context.Background())
	}
	fleet := promsem.NewStatsCollector(b, promsem.WithKeys("GET /work", "GET /report"))
	for _, c := range []struct {
		name, key string
		want      float64
	}{
		{"distsem_sem_fleet_limit", "GET /work", 3},
		{"distsem_sem_fleet_in_use", "GET /work", 2},
		{"distsem_sem_fleet_waiting", "GET /work", 0},
		{"distsem_sem_fleet_limit", "GET /report", 8},
		{"distsem_sem_fleet_in_use", "GET /report", 0},
		{"distsem_sem_fleet_stats_errors_total", "GET /work", 0},
	} {
		if v, _ := value(t, fleet, c.name, key(c.key)); v != c.want {
			t.Errorf("%s{key=%q} = %v, want %v", c.name, c.key, v, c.want)
		}
	}
	if n := testutil.CollectAndCount(fleet, "distsem_sem_fleet_in_use"); n != 2 {
		t.Errorf("%d fleet_in_use series, want 2", n)
	}
}

// stuck is a StatsSource whose calls block until their ctx ends.
type stuck struct{}

func (stuck) Stats(ctx context.Context, _ string) (core.Stats, error) {
	<-ctx.Done()
	return core.Stats{}, ctx.Err()
}

// A backend that does not answer costs a scrape at most the timeout, and
// is counted as an error rather than reported as zeros.
func TestStatsCollectorTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fleet := promsem.NewStatsCollector(stuck{}, promsem.WithKeys("a", "b"), promsem.WithTimeout(time.Second))
		start := time.Now()
		if n := testutil.CollectAndCount(fleet, "distsem_sem_fleet_in_use"); n != 0 {
			t.Fatalf("%d in_use series from a stuck backend, want 0", n)
		}
		if d := time.Since(start); d != time.Second {
			t.Fatalf("scrape took %v of fake time, want the 1s timeout", d)
		}
		if v, _ := value(t, fleet, "distsem_sem_fleet_stats_errors_total", key("b")); v != 2 {
			t.Fatalf("errors{b} = %v, want 2 (two scrapes)", v)
		}
	})
}
