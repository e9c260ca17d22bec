package promsem

import (
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/distsem/distsem/core"
)

// flowMetrics are a Collector's series per priority level and per flow.
// A level's series appear with its first event (a semaphore without
// levels has level 0 only), a flow's with its first event: a semaphore
// without flows exports no flow series.
type flowMetrics struct {
	levelInUse, levelWaiting *prometheus.GaugeVec
	flowWaiting              *prometheus.GaugeVec
	flowWait                 *prometheus.HistogramVec

	levelOnce [core.MaxLevels]sync.Once
	levels    [core.MaxLevels]levelSeries

	named     map[string]*flowSeries // by flow; read-only after New
	otherOnce sync.Once
	other     *flowSeries
	otherName string
}

type levelSeries struct{ inUse, waiting prometheus.Gauge }

type flowSeries struct {
	waiting             prometheus.Gauge
	acquired, abandoned prometheus.Observer
}

func newFlowMetrics(o options) *flowMetrics {
	ns := o.namespace
	m := &flowMetrics{
		levelInUse: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: "sem",
			Name: "level_in_use", Help: "Permit weight held by this process, by priority level."}, []string{"level"}),
		levelWaiting: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: "sem",
			Name: "level_waiting", Help: "Acquire calls of this process in the queue, by priority level."}, []string{"level"}),
		flowWaiting: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: "sem",
			Name: "flow_waiting", Help: "Acquire calls of this process in the queue, by flow (WithFlows)."}, []string{"flow"}),
		flowWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Subsystem: "sem",
			Name: "flow_wait_seconds", Help: "Time Acquire spent queued, by flow (WithFlows) and result.",
			Buckets: o.buckets}, []string{"flow", "result"}),
		named:     make(map[string]*flowSeries, len(o.flows)),
		otherName: label(o.other),
	}
	for _, f := range o.flows {
		if label(f) == m.otherName {
			panic("promsem: flow " + f + " has the WithOtherLabel value as its label")
		}
		m.named[core.KeyLabel(f)] = m.flowSeries(label(f))
	}
	return m
}

func (m *flowMetrics) flowSeries(l string) *flowSeries {
	return &flowSeries{
		waiting:   m.flowWaiting.WithLabelValues(l),
		acquired:  m.flowWait.WithLabelValues(l, "acquired"),
		abandoned: m.flowWait.WithLabelValues(l, "abandoned"),
	}
}

func (m *flowMetrics) level(l int) *levelSeries {
	m.levelOnce[l].Do(func() {
		v := strconv.Itoa(l)
		m.levels[l] = levelSeries{m.levelInUse.WithLabelValues(v), m.levelWaiting.WithLabelValues(v)}
	})
	return &m.levels[l]
}

func (m *flowMetrics) flow(f string) *flowSeries {
	if s := m.named[f]; s != nil {
		return s
	}
	m.otherOnce.Do(func() { m.other = m.flowSeries(m.otherName) })
	return m.other
}

// observe counts e at its level and, if it names one, in its flow.
func (m *flowMetrics) observe(e core.Event) {
	if e.Level < 0 || e.Level >= core.MaxLevels {
		return
	}
	lv := m.level(e.Level)
	var fs *flowSeries
	if e.Flow != "" {
		fs = m.flow(e.Flow)
	}
	switch e.Kind {
	case core.EventWait:
		lv.waiting.Inc()
		if fs != nil {
			fs.waiting.Inc()
		}
	case core.EventAcquired:
		lv.inUse.Add(float64(e.Weight))
		if e.Wait > 0 {
			lv.waiting.Dec()
		}
		if fs != nil {
			if e.Wait > 0 {
				fs.waiting.Dec()
			}
			fs.acquired.Observe(e.Wait.Seconds())
		}
	case core.EventAbandoned:
		lv.waiting.Dec()
		if fs != nil {
			fs.waiting.Dec()
			fs.abandoned.Observe(e.Wait.Seconds())
		}
	case core.EventReleased:
		lv.inUse.Sub(float64(e.Weight))
	}
}

func (m *flowMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.levelInUse, m.levelWaiting, m.flowWaiting, m.flowWait}
}
