package promadmit

import (
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/distsem/distsem/core/admit"
)

// results are the values of the result label, indexed by admit.Reason (0
// is "admitted").
var results = [...]string{
	0:                 "admitted",
	admit.NoCapacity:  admit.NoCapacity.String(),
	admit.Unavailable: admit.Unavailable.String(),
	admit.ClientGone:  admit.ClientGone.String(),
}

// Collector is an admit.Observer and a prometheus.Collector. Register it
// once, and pass it to as many controllers as share its keys.
type Collector struct {
	inFlight   *prometheus.GaugeVec
	waiting    *prometheus.GaugeVec
	wait       *prometheus.HistogramVec
	rejections *prometheus.CounterVec
	lost       *prometheus.CounterVec

	series map[string]*series // read-only after New
	other  *series
}

// series are the children of one key label value, looked up once.
type series struct {
	inFlight, waiting prometheus.Gauge
	wait              [len(results)]prometheus.Observer
	rejections        [len(results)]prometheus.Counter
	lost              prometheus.Counter
}

var _ admit.Observer = (*Collector)(nil)
var _ prometheus.Collector = (*Collector)(nil)

// New returns a Collector. It panics if the WithOtherLabel value is also
// one of the WithKeys keys.
func New(opts ...Option) *Collector {
	o := defaultOptions
	o.keys = nil
	for _, f := range opts {
		f(&o)
	}
	ns := o.namespace
	c := &Collector{
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: "admit",
			Name: "in_flight", Help: "Requests holding a permit."}, []string{"key"}),
		waiting: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: "admit",
			Name: "waiting", Help: "Requests waiting for a permit."}, []string{"key"}),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Subsystem: "admit",
			Name: "wait_seconds", Help: "Time taken to admit or reject a request.", Buckets: o.buckets},
			[]string{"key", "result"}),
		rejections: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: "admit",
			Name: "rejections_total", Help: "Rejected requests by reason."}, []string{"key", "reason"}),
		lost: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: "admit",
			Name: "lost_leases_total", Help: "Permits whose lease was lost while the request ran."}, []string{"key"}),
		series: make(map[string]*series, len(o.keys)),
	}
	byLabel := map[string]*series{}
	get := func(l string) *series {
		if byLabel[l] == nil {
			byLabel[l] = c.newSeries(l)
		}
		return byLabel[l]
	}
	other := label(o.other)
	for _, k := range o.keys {
		if label(k) == other {
			panic("promadmit: key " + k + " has the WithOtherLabel value as its label")
		}
		c.series[k] = get(label(k))
	}
	c.other = get(other)
	return c
}

// MaxLabelLen is the longest key label value, in bytes; longer named keys
// are cut (at a character boundary).
const MaxLabelLen = 128

// label cuts k to MaxLabelLen bytes at a character boundary.
func label(k string) string {
	if len(k) <= MaxLabelLen {
		return k
	}
	k = k[:MaxLabelLen]
	for len(k) > 0 && !utf8.ValidString(k) {
		k = k[:len(k)-1]
	}
	return k
}

func (c *Collector) newSeries(label string) *series {
	s := &series{
		inFlight: c.inFlight.WithLabelValues(label),
		waiting:  c.waiting.WithLabelValues(label),
		lost:     c.lost.WithLabelValues(label),
	}
	for i, r := range results {
		s.wait[i] = c.wait.WithLabelValues(label, r)
		if i > 0 {
			s.rejections[i] = c.rejections.WithLabelValues(label, r)
		}
	}
	return s
}

// Observe records e. It implements admit.Observer.
func (c *Collector) Observe(e admit.Event) {
	s := c.series[e.Key]
	if s == nil {
		s = c.other
	}
	switch e.Kind {
	case admit.EventQueued:
		s.waiting.Inc()
	case admit.EventDequeued:
		s.waiting.Dec()
	case admit.EventAdmitted:
		s.inFlight.Inc()
		s.wait[0].Observe(e.Wait.Seconds())
	case admit.EventRejected:
		if int(e.Reason) < len(results) && e.Reason > 0 {
			s.wait[e.Reason].Observe(e.Wait.Seconds())
			s.rejections[e.Reason].Inc()
		}
	case admit.EventReleased:
		s.inFlight.Dec()
	case admit.EventLost:
		s.lost.Inc()
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	c.inFlight.Describe(ch)
	c.waiting.Describe(ch)
	c.wait.Describe(ch)
	c.rejections.Describe(ch)
	c.lost.Describe(ch)
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.inFlight.Collect(ch)
	c.waiting.Collect(ch)
	c.wait.Collect(ch)
	c.rejections.Collect(ch)
	c.lost.Collect(ch)
}
