package promsem

import (
	"time"
	"unicode/utf8"
)

// Option configures a Collector or a StatsCollector.
type Option func(*options)

type options struct {
	namespace string
	keys      []string
	flows     []string
	other     string
	buckets   []float64
	timeout   time.Duration
}

// MaxLabelLen is the longest key label value, in bytes; longer named keys
// are cut (at a character boundary).
const MaxLabelLen = 128

// DefaultBuckets are the default wait-time histogram buckets, in seconds:
// from 100µs, the order of a loopback Redis round trip, to 10s.
var DefaultBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

func newOptions(opts []Option) options {
	o := options{namespace: "distsem", other: "other", buckets: DefaultBuckets, timeout: time.Second}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// WithKeys names the keys (or semaphore names) that get a label value of
// their own. The default is none: every key is counted under the
// WithOtherLabel value. Pass a fixed allow-list, such as the keys of the
// overrides table given to core.WithLimits; never keys taken from
// requests.
func WithKeys(keys ...string) Option {
	return func(o *options) { o.keys = append(o.keys, keys...) }
}

// WithFlows names the flows (core.WithFlow) that get a flow label value
// of their own in a Collector's flow series. The default is none: every
// flow is counted under the WithOtherLabel value. As with WithKeys, pass a
// fixed allow-list (your largest tenants, say), never flows taken from
// requests: the label's values stay bounded whatever the flows.
func WithFlows(flows ...string) Option {
	return func(o *options) { o.flows = append(o.flows, flows...) }
}

// WithOtherLabel sets the key label of every key not named by WithKeys,
// and the flow label of every flow not named by WithFlows.
// The default is "other".
func WithOtherLabel(v string) Option { return func(o *options) { o.other = v } }

// WithNamespace sets the metric name prefix. The default is "distsem".
func WithNamespace(ns string) Option { return func(o *options) { o.namespace = ns } }

// WithBuckets sets the buckets of the wait-time histogram, in seconds. The
// default is DefaultBuckets.
func WithBuckets(b []float64) Option { return func(o *options) { o.buckets = b } }

// WithTimeout bounds the Stats calls of one StatsCollector scrape, all
// keys together. The default is 1s. A key whose call fails or runs out of
// time is left out of that scrape and counted in
// distsem_sem_fleet_stats_errors_total.
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

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
