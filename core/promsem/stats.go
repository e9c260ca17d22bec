package promsem

import (
	"context"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/distsem/distsem/core"
)

// StatsSource is what StatsCollector reads: *core.Keyed has this method;
// wrap a core.Semaphore with Single.
type StatsSource interface {
	Stats(ctx context.Context, key string) (core.Stats, error)
}

// Single makes a StatsSource of a semaphore that has no keys: every key
// reads its Stats. Name it in WithKeys by the semaphore's name.
func Single(sem interface {
	Stats(ctx context.Context) (core.Stats, error)
}) StatsSource {
	return single{sem}
}

type single struct {
	s interface {
		Stats(ctx context.Context) (core.Stats, error)
	}
}

func (s single) Stats(ctx context.Context, _ string) (core.Stats, error) { return s.s.Stats(ctx) }

// StatsCollector is a prometheus.Collector of the fleet-wide state of the
// WithKeys keys, read from src at every scrape: one Stats call per key
// (one Redis round trip each on the Redis backend), in sequence, all
// bounded by WithTimeout. Keys not named are not read at all, so the
// scrape cost does not grow with the keys clients invent.
type StatsCollector struct {
	src     StatsSource
	keys    []string // named keys
	labels  []string // their label values
	timeout time.Duration

	limit, inUse, waiting *prometheus.Desc
	levelInUse, levelWait *prometheus.Desc
	backlogged            *prometheus.Desc
	levels                []atomic.Int32 // per key: 1 + the highest level seen busy; 0 if none (no flows)
	errs                  *prometheus.CounterVec
}

var _ prometheus.Collector = (*StatsCollector)(nil)

// NewStatsCollector returns a StatsCollector of src's WithKeys keys. It
// panics if src is nil.
func NewStatsCollector(src StatsSource, opts ...Option) *StatsCollector {
	if src == nil {
		panic("promsem: NewStatsCollector expects a non-nil source")
	}
	o := newOptions(opts)
	name := func(n string) string { return prometheus.BuildFQName(o.namespace, "sem", n) }
	c := &StatsCollector{
		src:        src,
		timeout:    o.timeout,
		limit:      prometheus.NewDesc(name("fleet_limit"), "The limit in force, fleet-wide.", []string{"key"}, nil),
		inUse:      prometheus.NewDesc(name("fleet_in_use"), "Permit weight held, fleet-wide.", []string{"key"}, nil),
		waiting:    prometheus.NewDesc(name("fleet_waiting"), "Acquire calls queued, fleet-wide.", []string{"key"}, nil),
		levelInUse: prometheus.NewDesc(name("fleet_level_in_use"), "Permit weight held, fleet-wide, by priority level.", []string{"key", "level"}, nil),
		levelWait:  prometheus.NewDesc(name("fleet_level_waiting"), "Acquire calls queued, fleet-wide, by priority level.", []string{"key", "level"}, nil),
		backlogged: prometheus.NewDesc(name("fleet_backlogged_queues"), "Flow queues with waiters, fleet-wide.", []string{"key"}, nil),
		errs: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: o.namespace, Subsystem: "sem",
			Name: "fleet_stats_errors_total", Help: "Stats calls that failed or ran out of time."}, []string{"key"}),
	}
	seen := map[string]bool{}
	for _, k := range o.keys {
		if l := label(k); !seen[l] {
			seen[l] = true
			c.keys = append(c.keys, k)
			c.labels = append(c.labels, l)
			c.errs.WithLabelValues(l)
		}
	}
	c.levels = make([]atomic.Int32, len(c.keys))
	return c
}

// Describe implements prometheus.Collector.
func (c *StatsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.limit
	ch <- c.inUse
	ch <- c.waiting
	ch <- c.levelInUse
	ch <- c.levelWait
	ch <- c.backlogged
	c.errs.Describe(ch)
}

// Collect implements prometheus.Collector. It blocks for at most the
// WithTimeout duration.
func (c *StatsCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	for i, k := range c.keys {
		st, err := c.src.Stats(ctx, k)
		if err != nil {
			c.errs.WithLabelValues(c.labels[i]).Inc()
			continue
		}
		l := c.labels[i]
		ch <- prometheus.MustNewConstMetric(c.limit, prometheus.GaugeValue, float64(st.Limit), l)
		ch <- prometheus.MustNewConstMetric(c.inUse, prometheus.GaugeValue, float64(st.InUse), l)
		ch <- prometheus.MustNewConstMetric(c.waiting, prometheus.GaugeValue, float64(st.Waiting), l)
		c.collectLevels(ch, i, st)
	}
	c.errs.Collect(ch)
}

// collectLevels sends key i's per-level figures and its backlogged queues,
// for a backend with flows: from the first scrape that sees any, every
// level up to the highest seen busy, so that a series never vanishes.
func (c *StatsCollector) collectLevels(ch chan<- prometheus.Metric, i int, st core.Stats) {
	n := c.levels[i].Load()
	for l := len(st.Levels) - 1; l >= int(n); l-- {
		if st.Levels[l] != (core.LevelStats{}) {
			c.levels[i].CompareAndSwap(n, int32(l+1))
			n = c.levels[i].Load()
			break
		}
	}
	if n == 0 && st.Backlogged == 0 {
		return
	}
	k := c.labels[i]
	for l := range max(n, 1) {
		v := strconv.Itoa(int(l))
		ch <- prometheus.MustNewConstMetric(c.levelInUse, prometheus.GaugeValue, float64(st.Levels[l].InUse), k, v)
		ch <- prometheus.MustNewConstMetric(c.levelWait, prometheus.GaugeValue, float64(st.Levels[l].Waiting), k, v)
	}
	ch <- prometheus.MustNewConstMetric(c.backlogged, prometheus.GaugeValue, float64(st.Backlogged), k)
}
