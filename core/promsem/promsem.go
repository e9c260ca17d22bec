package promsem

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/internal/errkind"
)

// Collector is a core.Observer and a prometheus.Collector. Register it
// once, and pass it (core.WithObserver) to as many semaphores as share its
// keys.
type Collector struct {
	wait     *prometheus.HistogramVec
	inUse    *prometheus.GaugeVec
	waiting  *prometheus.GaugeVec
	lost     *prometheus.CounterVec
	errs     *prometheus.CounterVec
	errKinds map[string]prometheus.Counter

	series map[string]*series // by key; read-only after New
	other  *series
	flows  *flowMetrics
}

// series are the children of one key label value, looked up once.
type series struct {
	acquired, abandoned prometheus.Observer
	inUse, waiting      prometheus.Gauge
	lost                prometheus.Counter
}

// errorKinds are the values of the kind label.
var errorKinds = errkind.Kinds

var (
	_ core.Observer        = (*Collector)(nil)
	_ prometheus.Collector = (*Collector)(nil)
)

// New returns a Collector. It panics if the WithOtherLabel value is also
// the label of a WithKeys key.
func New(opts ...Option) *Collector {
	o := newOptions(opts)
	ns := o.namespace
	c := &Collector{
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Subsystem: "sem",
			Name: "acquire_wait_seconds", Help: "Time Acquire spent queued, by result (0 when granted at once).",
			Buckets: o.buckets}, []string{"key", "result"}),
		inUse: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: "sem",
			Name: "in_use", Help: "Permit weight held by this process."}, []string{"key"}),
		waiting: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: "sem",
			Name: "waiting", Help: "Acquire calls of this process in the queue."}, []string{"key"}),
		lost: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: "sem",
			Name: "lost_leases_total", Help: "Permits whose lease was lost while held."}, []string{"key"}),
		errs: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: "sem",
			Name: "backend_errors_total", Help: "Backend failures, by kind."}, []string{"kind"}),
		errKinds: make(map[string]prometheus.Counter, len(errorKinds)),
		series:   make(map[string]*series, len(o.keys)),
		flows:    newFlowMetrics(o),
	}
	for _, k := range errorKinds {
		c.errKinds[k] = c.errs.WithLabelValues(k)
	}
	byLabel := map[string]*series{}
	get := func(l string) *series {
		if s := byLabel[l]; s != nil {
			return s
		}
		s := &series{
			acquired:  c.wait.WithLabelValues(l, "acquired"),
			abandoned: c.wait.WithLabelValues(l, "abandoned"),
			inUse:     c.inUse.WithLabelValues(l),
			waiting:   c.waiting.WithLabelValues(l),
			lost:      c.lost.WithLabelValues(l),
		}
		byLabel[l] = s
		return s
	}
	other := label(o.other)
	for _, k := range o.keys {
		if label(k) == other {
			panic("promsem: key " + k + " has the WithOtherLabel value as its label")
		}
		c.series[core.KeyLabel(k)] = get(label(k)) // events name a long key by its KeyLabel
	}
	c.other = get(other)
	return c
}

// Observe records e. It implements core.Observer.
//
// The waiting gauge counts EventWait up and, when the wait ends, an
// EventAbandoned or an EventAcquired with a non-zero Wait down. The in-use
// gauge adds the Weight of EventAcquired and subtracts that of
// EventReleased; a release whose round trip failed reports no
// EventReleased (its permit comes back with its lease), so its weight
// stays counted here: the fleet gauges of StatsCollector read the truth.
func (c *Collector) Observe(e core.Event) {
	s := c.series[e.Name]
	if s == nil {
		s = c.other
	}
	switch e.Kind {
	case core.EventWait:
		s.waiting.Inc()
	case core.EventAcquired:
		if e.Wait > 0 {
			s.waiting.Dec()
		}
		s.acquired.Observe(e.Wait.Seconds())
		s.inUse.Add(float64(e.Weight))
	case core.EventAbandoned:
		s.waiting.Dec()
		s.abandoned.Observe(e.Wait.Seconds())
	case core.EventReleased:
		s.inUse.Sub(float64(e.Weight))
	case core.EventLost:
		s.lost.Inc()
	case core.EventBackendError:
		c.errKinds[ErrorKind(e.Err)].Inc()
	}
	c.flows.observe(e)
}

// ErrorKind sorts a backend error into one of the kind label's values:
// "timeout", "network", "server" (an error reply from Redis), "closed" or
// "other". core/otelsem labels its errors alike.
func ErrorKind(err error) string { return errkind.Of(err) }

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	c.wait.Describe(ch)
	c.inUse.Describe(ch)
	c.waiting.Describe(ch)
	c.lost.Describe(ch)
	c.errs.Describe(ch)
	for _, m := range c.flows.collectors() {
		m.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.wait.Collect(ch)
	c.inUse.Collect(ch)
	c.waiting.Collect(ch)
	c.lost.Collect(ch)
	c.errs.Collect(ch)
	for _, m := range c.flows.collectors() {
		m.Collect(ch)
	}
}
