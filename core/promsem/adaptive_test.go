package promsem_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/distsem/distsem/core/adaptive"
	"github.com/distsem/distsem/core/promsem"
)

func TestAdaptiveCollector(t *testing.T) {
	c := promsem.NewAdaptive(promsem.WithNamespace("app"))
	c.Observe(adaptive.Event{Kind: adaptive.EventDecision, Limit: 6, Previous: 8, Baseline: 10 * time.Millisecond,
		Latency: 20 * time.Millisecond, Reason: adaptive.ReasonLatency})
	c.Observe(adaptive.Event{Kind: adaptive.EventState, Limit: 5, Baseline: 11 * time.Millisecond})
	c.Observe(adaptive.Event{Kind: adaptive.EventError})
	want := `
# HELP app_adaptive_decisions_total Windows computed by this process, by reason and direction.
# TYPE app_adaptive_decisions_total counter
app_adaptive_decisions_total{direction="down",reason="latency"} 1
# HELP app_adaptive_errors_total Store or semaphore failures of the controller.
# TYPE app_adaptive_errors_total counter
app_adaptive_errors_total 1
# HELP app_adaptive_limit The limit the controller set (or, monitor-only, recommends).
# TYPE app_adaptive_limit gauge
app_adaptive_limit 5
# HELP app_adaptive_baseline_seconds The long-window latency the controller compares each window with.
# TYPE app_adaptive_baseline_seconds gauge
app_adaptive_baseline_seconds 0.011
# HELP app_adaptive_latency_seconds The mean latency of the last window the controller used.
# TYPE app_adaptive_latency_seconds gauge
app_adaptive_latency_seconds 0.02
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
}
