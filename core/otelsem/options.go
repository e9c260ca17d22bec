package otelsem

import (
	"unicode/utf8"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Option configures an Observer.
type Option func(*options)

type options struct {
	tp        trace.TracerProvider
	mp        metric.MeterProvider
	keys      []string
	other     string
	buckets   []float64
	rootSpans bool
}

// MaxLabelLen is the longest distsem.semaphore attribute value, in bytes;
// longer named keys are cut (at a character boundary).
const MaxLabelLen = 128

// DefaultBuckets are the default bucket boundaries of the wait-time
// histogram, in seconds: from 100µs, the order of a loopback Redis round
// trip, to 10s. They are promsem's.
var DefaultBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

func newOptions(opts []Option) options {
	o := options{other: "other", buckets: DefaultBuckets}
	for _, f := range opts {
		f(&o)
	}
	if o.tp == nil {
		o.tp = otel.GetTracerProvider()
	}
	if o.mp == nil {
		o.mp = otel.GetMeterProvider()
	}
	return o
}

// WithTracerProvider sets the provider of the Observer's tracer. The
// default is otel.GetTracerProvider() at the time of New: the global
// provider, which forwards to one set later with otel.SetTracerProvider.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) { o.tp = tp }
}

// WithMeterProvider sets the provider of the Observer's meter. The default
// is otel.GetMeterProvider() at the time of New: the global provider,
// which forwards to one set later with otel.SetMeterProvider.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(o *options) { o.mp = mp }
}

// WithKeys names the keys (or semaphore names) whose spans and metrics
// carry their own distsem.semaphore value. The default is none: every key
// is recorded under the WithOtherLabel value. Pass a fixed allow-list,
// such as the keys of the overrides table given to core.WithLimits or the
// name of a plain semaphore; never keys taken from requests.
func WithKeys(keys ...string) Option {
	return func(o *options) { o.keys = append(o.keys, keys...) }
}

// WithOtherLabel sets the distsem.semaphore value of every key not named
// by WithKeys. The default is "other".
func WithOtherLabel(v string) Option { return func(o *options) { o.other = v } }

// WithBuckets sets the bucket boundaries of the wait-time histogram, in
// seconds. The default is DefaultBuckets.
func WithBuckets(b []float64) Option { return func(o *options) { o.buckets = b } }

// WithRootSpans records a wait span also for an Acquire whose ctx holds no
// span, as the root of a trace of its own. The default is to record wait
// spans only as children of the caller's span: an Acquire outside any
// trace is counted in the metrics alone.
func WithRootSpans() Option { return func(o *options) { o.rootSpans = true } }

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
