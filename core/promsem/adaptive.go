package promsem

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/distsem/distsem/core/adaptive"
)

// AdaptiveCollector is an adaptive.Observer and a prometheus.Collector:
// the metrics of an adaptive limit (core/adaptive). Register it once per
// Limiter, and pass it with adaptive.WithObserver. Every process exports
// the limit, baseline and latency of the state it last synced; the
// decisions are counted by the process that took them, so sum them over
// the fleet.
type AdaptiveCollector struct {
	limit, baseline, latency prometheus.Gauge
	decisions                *prometheus.CounterVec
	errs                     prometheus.Counter
}

var (
	_ adaptive.Observer    = (*AdaptiveCollector)(nil)
	_ prometheus.Collector = (*AdaptiveCollector)(nil)
)

// NewAdaptive returns an AdaptiveCollector. Of the options it reads only
// WithNamespace.
func NewAdaptive(opts ...Option) *AdaptiveCollector {
	ns := newOptions(opts).namespace
	g := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: "adaptive", Name: name, Help: help})
	}
	return &AdaptiveCollector{
		limit:    g("limit", "The limit the controller set (or, monitor-only, recommends)."),
		baseline: g("baseline_seconds", "The long-window latency the controller compares each window with."),
		latency:  g("latency_seconds", "The mean latency of the last window the controller used."),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: "adaptive",
			Name: "decisions_total", Help: "Windows computed by this process, by reason and direction."}, []string{"reason", "direction"}),
		errs: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: "adaptive",
			Name: "errors_total", Help: "Store or semaphore failures of the controller."}),
	}
}

// Observe implements adaptive.Observer.
func (c *AdaptiveCollector) Observe(e adaptive.Event) {
	switch e.Kind {
	case adaptive.EventState, adaptive.EventDecision:
		c.limit.Set(float64(e.Limit))
		c.baseline.Set(e.Baseline.Seconds())
		if e.Latency > 0 {
			c.latency.Set(e.Latency.Seconds())
		}
		if e.Kind == adaptive.EventDecision {
			dir := "hold"
			switch {
			case e.Limit > e.Previous:
				dir = "up"
			case e.Limit < e.Previous:
				dir = "down"
			}
			c.decisions.WithLabelValues(e.Reason.String(), dir).Inc()
		}
	case adaptive.EventError:
		c.errs.Inc()
	}
}

// Describe implements prometheus.Collector.
func (c *AdaptiveCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range []prometheus.Collector{c.limit, c.baseline, c.latency, c.decisions, c.errs} {
		m.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (c *AdaptiveCollector) Collect(ch chan<- prometheus.Metric) {
	for _, m := range []prometheus.Collector{c.limit, c.baseline, c.latency, c.decisions, c.errs} {
		m.Collect(ch)
	}
}
