package promadmit

// Option configures a Collector.
type Option func(*options)

type options struct {
	namespace string
	keys      []string
	other     string
	buckets   []float64
}

// DefaultBuckets are the default wait-time histogram buckets, in seconds:
// from 100µs, the order of a loopback Redis round trip, to 10s.
var DefaultBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

var defaultOptions = options{namespace: "distsem", other: "other", buckets: DefaultBuckets}

// WithKeys names the keys that get a label value of their own. The default
// is none: every key is counted under the WithOtherLabel value. Pass the
// keys of the overrides table given to core.WithLimits, or any fixed
// allow-list; never keys taken from requests.
func WithKeys(keys ...string) Option {
	return func(o *options) { o.keys = append(o.keys, keys...) }
}

// WithOtherLabel sets the key label of every key not named by WithKeys. The
// default is "other".
func WithOtherLabel(v string) Option { return func(o *options) { o.other = v } }

// WithNamespace sets the metric name prefix. The default is "distsem".
func WithNamespace(ns string) Option { return func(o *options) { o.namespace = ns } }

// WithBuckets sets the buckets of the wait-time histogram, in seconds. The
// default is DefaultBuckets.
func WithBuckets(b []float64) Option { return func(o *options) { o.buckets = b } }
