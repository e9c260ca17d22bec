package promadmit_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/admit"
	"github.com/distsem/distsem/core/admit/promadmit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// histCount returns the sample count and sum of the wait histogram series
// of key and result, gathered from reg.
func histCount(t *testing.T, reg *prometheus.Registry, key, result string) (uint64, float64) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "distsem_admit_wait_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["key"] == key && labels["result"] == result {
				return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
			}
		}
	}
	t.Fatalf("no wait histogram for key=%q result=%q", key, result)
	return 0, 0
}

func TestCollectorScrape(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		col := promadmit.New(promadmit.WithKeys("work"))
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(col)
		sem := core.NewLocalKeyed(2)
		ctl := admit.New(sem, admit.WithObserver(col), admit.WithMaxWait(time.Second), admit.WithMaxWaiting(1))

		a, _ := ctl.Acquire(ctx, "work")
		b, _ := ctl.Acquire(ctx, "work")
		// A waiter that times out after 1s of fake time.
		done := make(chan error)
		go func() {
			_, err := ctl.Acquire(ctx, "work")
			done <- err
		}()
		synctest.Wait()
		// The queue (1) is full: rejected at once.
		if _, err := ctl.Acquire(ctx, "work"); err == nil {
			t.Fatal("admitted past the queue bound")
		}
		// Unlisted keys fold into "other".
		x, _ := ctl.Acquire(ctx, "/evil/1")
		y, _ := ctl.Acquire(ctx, "/evil/2")

		want := `
# HELP distsem_admit_in_flight Requests holding a permit.
# TYPE distsem_admit_in_flight gauge
distsem_admit_in_flight{key="other"} 2
distsem_admit_in_flight{key="work"} 2
# HELP distsem_admit_waiting Requests waiting for a permit.
# TYPE distsem_admit_waiting gauge
distsem_admit_waiting{key="other"} 0
distsem_admit_waiting{key="work"} 1
`
		if err := testutil.CollectAndCompare(col, strings.NewReader(want),
			"distsem_admit_in_flight", "distsem_admit_waiting"); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err == nil {
			t.Fatal("the waiter was admitted, want a timeout")
		}
		a.Release(ctx)
		b.Release(ctx)
		x.Release(ctx)
		y.Release(ctx)

		want = `
# HELP distsem_admit_in_flight Requests holding a permit.
# TYPE distsem_admit_in_flight gauge
distsem_admit_in_flight{key="other"} 0
distsem_admit_in_flight{key="work"} 0
# HELP distsem_admit_rejections_total Rejected requests by reason.
# TYPE distsem_admit_rejections_total counter
distsem_admit_rejections_total{key="other",reason="client_gone"} 0
distsem_admit_rejections_total{key="other",reason="no_capacity"} 0
distsem_admit_rejections_total{key="other",reason="unavailable"} 0
distsem_admit_rejections_total{key="work",reason="client_gone"} 0
distsem_admit_rejections_total{key="work",reason="no_capacity"} 2
distsem_admit_rejections_total{key="work",reason="unavailable"} 0
# HELP distsem_admit_waiting Requests waiting for a permit.
# TYPE distsem_admit_waiting gauge
distsem_admit_waiting{key="other"} 0
distsem_admit_waiting{key="work"} 0
`
		if err := testutil.CollectAndCompare(col, strings.NewReader(want),
			"distsem_admit_in_flight", "distsem_admit_waiting", "distsem_admit_rejections_total"); err != nil {
			t.Fatal(err)
		}
		if n, _ := histCount(t, reg, "work", "admitted"); n != 2 {
			t.Fatalf("admitted wait samples = %d, want 2", n)
		}
		if n, sum := histCount(t, reg, "work", "no_capacity"); n != 2 || sum != 1 {
			t.Fatalf("no_capacity wait samples = %d (sum %vs), want 2 (sum 1s: one timed out after 1s)", n, sum)
		}
		if n, _ := histCount(t, reg, "other", "admitted"); n != 2 {
			t.Fatalf("other admitted samples = %d, want 2", n)
		}
		if probs, err := testutil.GatherAndLint(reg); err != nil || len(probs) > 0 {
			t.Fatal(err, probs)
		}
	})
}

func TestLabelsStayBounded(t *testing.T) {
	col := promadmit.New(promadmit.WithKeys("a", "b"), promadmit.WithOtherLabel("_other"))
	ctl := admit.New(core.NewLocalKeyed(1), admit.WithObserver(col))
	for i := range 500 {
		tk, err := ctl.Acquire(context.Background(), fmt.Sprintf("/hostile/%d", i))
		if err != nil {
			t.Fatal(err)
		}
		tk.Release(context.Background())
	}
	// 3 label values (a, b, _other) whatever the keys seen.
	if n := testutil.CollectAndCount(col, "distsem_admit_in_flight"); n != 3 {
		t.Fatalf("in_flight series = %d, want 3", n)
	}
	if n := testutil.CollectAndCount(col, "distsem_admit_rejections_total"); n != 9 {
		t.Fatalf("rejections series = %d, want 9", n)
	}
}

func TestLostAndReasons(t *testing.T) {
	col := promadmit.New(promadmit.WithKeys("k"))
	for _, r := range []admit.Reason{admit.Unavailable, admit.ClientGone, admit.ClientGone} {
		col.Observe(admit.Event{Kind: admit.EventRejected, Key: "k", Reason: r})
	}
	col.Observe(admit.Event{Kind: admit.EventLost, Key: "k"})
	col.Observe(admit.Event{Kind: admit.EventRejected, Key: "k", Reason: 99}) // ignored
	want := `
# HELP distsem_admit_lost_leases_total Permits whose lease was lost while the request ran.
# TYPE distsem_admit_lost_leases_total counter
distsem_admit_lost_leases_total{key="k"} 1
distsem_admit_lost_leases_total{key="other"} 0
# HELP distsem_admit_rejections_total Rejected requests by reason.
# TYPE distsem_admit_rejections_total counter
distsem_admit_rejections_total{key="k",reason="client_gone"} 2
distsem_admit_rejections_total{key="k",reason="no_capacity"} 0
distsem_admit_rejections_total{key="k",reason="unavailable"} 1
distsem_admit_rejections_total{key="other",reason="client_gone"} 0
distsem_admit_rejections_total{key="other",reason="no_capacity"} 0
distsem_admit_rejections_total{key="other",reason="unavailable"} 0
`
	if err := testutil.CollectAndCompare(col, strings.NewReader(want),
		"distsem_admit_lost_leases_total", "distsem_admit_rejections_total"); err != nil {
		t.Fatal(err)
	}
}

func TestNewPanicsOnClash(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	promadmit.New(promadmit.WithKeys("other"))
}

// Named keys longer than MaxLabelLen are cut; unnamed keys never become
// labels, however long.
func TestLabelsBoundedInLength(t *testing.T) {
	long := strings.Repeat("é", 300) // 600 bytes
	col := promadmit.New(promadmit.WithKeys(long))
	ctl := admit.New(core.NewLocalKeyed(5), admit.WithObserver(col))
	t1, _ := ctl.Acquire(t.Context(), long)
	t2, _ := ctl.Acquire(t.Context(), strings.Repeat("x", 1<<20))
	defer t1.Release(t.Context())
	defer t2.Release(t.Context())
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(col)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if len(l.GetValue()) > promadmit.MaxLabelLen {
					t.Fatalf("%s has a %d-byte label value", mf.GetName(), len(l.GetValue()))
				}
			}
		}
	}
	if n := testutil.CollectAndCount(col, "distsem_admit_in_flight"); n != 2 {
		t.Fatalf("%d in_flight series, want 2 (the cut key and other)", n)
	}
}
