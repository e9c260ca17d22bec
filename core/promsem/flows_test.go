package promsem_test

import (
	"context"
	"testing"
	"time"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/promsem"
	"github.com/distsem/distsem/internal/testwait"
)

// Per level and per named flow, in this process; flows not named share the
// other label, so label values stay bounded whatever the flows.
func TestCollectorCountsLevelsAndNamedFlows(t *testing.T) {
	ctx := context.Background()
	c := promsem.New(promsem.WithFlows("gold"))
	sem := core.NewLocal(2, core.WithObserver(c), core.WithFairness(core.Fairness{Reserves: []int64{0, 0}}))
	gold := mustAcquire(t, sem, core.WithFlow("gold"))
	low := mustAcquire(t, sem, core.WithFlow("tenant-17"), core.WithLevel(1))
	queued := make(chan *core.Permit)
	go func() {
		p, _ := sem.Acquire(ctx, core.WithFlow("tenant-18"), core.WithLevel(1))
		queued <- p
	}()
	// The waiter is queued (Stats counts it) a moment before its wait
	// event reaches the collector: wait for the event.
	testwait.Until(t, time.Minute, "the collector did not see the third caller wait", func() bool {
		got, _ := value(t, c, "distsem_sem_level_waiting", map[string]string{"level": "1"})
		return got == 1
	})
	for _, w := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"distsem_sem_level_in_use", map[string]string{"level": "0"}, 1},
		{"distsem_sem_level_in_use", map[string]string{"level": "1"}, 1},
		{"distsem_sem_level_waiting", map[string]string{"level": "1"}, 1},
		{"distsem_sem_flow_waiting", map[string]string{"flow": "other"}, 1},
		{"distsem_sem_flow_waiting", map[string]string{"flow": "gold"}, 0},
	} {
		if got, _ := value(t, c, w.name, w.labels); got != w.want {
			t.Errorf("%s%v = %v, want %v", w.name, w.labels, got, w.want)
		}
	}
	if _, n := value(t, c, "distsem_sem_flow_wait_seconds", map[string]string{"flow": "gold", "result": "acquired"}); n != 1 {
		t.Errorf("gold's acquisitions: %d, want 1", n)
	}
	if err := gold.Release(ctx); err != nil {
		t.Fatal(err)
	}
	p := <-queued
	for _, q := range []*core.Permit{low, p} {
		if err := q.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range []string{"0", "1"} {
		if got, _ := value(t, c, "distsem_sem_level_in_use", map[string]string{"level": l}); got != 0 {
			t.Errorf("level %s in use %v after every release", l, got)
		}
	}
}

func mustAcquire(t *testing.T, sem *core.Local, opts ...core.AcquireOption) *core.Permit {
	t.Helper()
	p, err := sem.Acquire(context.Background(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The fleet-wide collector shows each level up to the highest seen busy,
// and the backlogged queues; a semaphore that never had flows shows none.
func TestStatsCollectorShowsLevels(t *testing.T) {
	ctx := context.Background()
	plain := core.NewLocal(1)
	sem := core.NewLocal(1, core.WithFairness(core.Fairness{Reserves: []int64{0, 0}}))
	held := mustAcquire(t, sem)
	done := make(chan struct{})
	go func() {
		p, _ := sem.Acquire(ctx, core.WithFlow("t"), core.WithLevel(1))
		_ = p.Release(ctx)
		close(done)
	}()
	for {
		if st, _ := sem.Stats(ctx); st.Waiting == 1 {
			break
		}
	}
	c := promsem.NewStatsCollector(promsem.Single(sem), promsem.WithKeys("s"))
	for _, w := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"distsem_sem_fleet_level_in_use", map[string]string{"level": "0"}, 1},
		{"distsem_sem_fleet_level_waiting", map[string]string{"level": "1"}, 1},
		{"distsem_sem_fleet_backlogged_queues", nil, 1},
	} {
		if got, _ := value(t, c, w.name, w.labels); got != w.want {
			t.Errorf("%s%v = %v, want %v", w.name, w.labels, got, w.want)
		}
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	<-done
	if got, _ := value(t, c, "distsem_sem_fleet_level_waiting", map[string]string{"level": "1"}); got != 0 {
		t.Errorf("level 1 waiting %v once idle; want 0, still exported", got)
	}
	pc := promsem.NewStatsCollector(promsem.Single(plain), promsem.WithKeys("p"))
	if got, _ := value(t, pc, "distsem_sem_fleet_backlogged_queues", nil); got != -1 {
		t.Errorf("a semaphore without flows exports backlogged queues (%v)", got)
	}
}
