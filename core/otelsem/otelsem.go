package otelsem

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/internal/errkind"
)

// ScopeName is the instrumentation scope of the Observer's tracer and
// meter.
const ScopeName = "github.com/distsem/distsem/core/otelsem"

// The names of what an Observer records; see the package documentation.
const (
	SpanName           = "distsem.wait"
	LeaseLostEventName = "distsem.lease_lost"
)

// Attribute keys; see the package documentation.
const (
	SemaphoreKey = attribute.Key("distsem.semaphore")
	WeightKey    = attribute.Key("distsem.weight")
	OutcomeKey   = attribute.Key("distsem.outcome")
	WaitKey      = attribute.Key("distsem.wait_seconds")
	ErrorTypeKey = attribute.Key("error.type")
)

var (
	acquired  = OutcomeKey.String("acquired")
	abandoned = OutcomeKey.String("abandoned")
)

// Observer is a core.Observer that records a span for each wait for a
// permit and the semaphore's metrics. Make one and pass it
// (core.WithObserver, redissem.WithObserver) to as many semaphores as
// share its keys. Its methods are safe for concurrent
// use and never block.
type Observer struct {
	tracer    trace.Tracer
	rootSpans bool

	wait           metric.Float64Histogram
	inUse, waiting metric.Int64UpDownCounter
	lost, errs     metric.Int64Counter
	errKinds       map[string]metric.AddOption

	series map[string]*series // by the key's core.KeyLabel; read-only after New
	other  *series
}

// series is what one distsem.semaphore value records with, made once.
type series struct {
	attr                attribute.KeyValue       // distsem.semaphore
	set                 metric.MeasurementOption // {distsem.semaphore}
	acquired, abandoned metric.MeasurementOption // the same with distsem.outcome
}

// errorKinds are the values of error.type on distsem.sem.backend_errors.
var errorKinds = errkind.Kinds

var _ core.Observer = (*Observer)(nil)

// New returns an Observer. It panics if the WithOtherLabel value is also
// the label of a WithKeys key. An error from the meter provider (bad
// WithBuckets, say) goes to otel.Handle, and the Observer records with
// what the provider returned: the SDK then falls back to its default
// buckets.
func New(opts ...Option) *Observer {
	o := newOptions(opts)
	meter := o.mp.Meter(ScopeName)
	var errs [5]error
	obs := &Observer{
		tracer:    o.tp.Tracer(ScopeName),
		rootSpans: o.rootSpans,
		errKinds:  make(map[string]metric.AddOption, len(errorKinds)),
		series:    make(map[string]*series, len(o.keys)),
	}
	obs.wait, errs[0] = meter.Float64Histogram("distsem.sem.acquire.wait", metric.WithUnit("s"),
		metric.WithDescription("Time Acquire spent queued, by outcome (0 when granted at once)."),
		metric.WithExplicitBucketBoundaries(o.buckets...))
	obs.inUse, errs[1] = meter.Int64UpDownCounter("distsem.sem.in_use", metric.WithUnit("{permit}"),
		metric.WithDescription("Permit weight held by this process."))
	obs.waiting, errs[2] = meter.Int64UpDownCounter("distsem.sem.waiting", metric.WithUnit("{call}"),
		metric.WithDescription("Acquire calls of this process in the queue."))
	obs.lost, errs[3] = meter.Int64Counter("distsem.sem.lost_leases", metric.WithUnit("{lease}"),
		metric.WithDescription("Permits whose lease was lost while held."))
	obs.errs, errs[4] = meter.Int64Counter("distsem.sem.backend_errors", metric.WithUnit("{error}"),
		metric.WithDescription("Backend failures, by kind."))
	if err := errors.Join(errs[:]...); err != nil {
		otel.Handle(err)
	}

	// Every series exists from the start, at zero, as promsem's do.
	ctx := context.Background()
	for _, k := range errorKinds {
		obs.errKinds[k] = metric.WithAttributeSet(attribute.NewSet(ErrorTypeKey.String(k)))
		obs.errs.Add(ctx, 0, obs.errKinds[k])
	}
	byLabel := map[string]*series{}
	get := func(l string) *series {
		if s := byLabel[l]; s != nil {
			return s
		}
		attr := SemaphoreKey.String(l)
		s := &series{
			attr:      attr,
			set:       metric.WithAttributeSet(attribute.NewSet(attr)),
			acquired:  metric.WithAttributeSet(attribute.NewSet(attr, acquired)),
			abandoned: metric.WithAttributeSet(attribute.NewSet(attr, abandoned)),
		}
		obs.inUse.Add(ctx, 0, s.set)
		obs.waiting.Add(ctx, 0, s.set)
		obs.lost.Add(ctx, 0, s.set)
		byLabel[l] = s
		return s
	}
	other := label(o.other)
	for _, k := range o.keys {
		if label(k) == other {
			panic("otelsem: key " + k + " has the WithOtherLabel value as its label")
		}
		obs.series[core.KeyLabel(k)] = get(label(k)) // events name a long key by its KeyLabel
	}
	obs.other = get(other)
	return obs
}

// Observe records e. It implements core.Observer.
//
// EventAcquired and EventAbandoned end a wait: each records a span of
// e.Wait that ends now, as a child of the span in e.Ctx, and a sample of
// the wait histogram. EventLost adds a span event to the span in e.Ctx:
// the span of the call that acquired the permit, such as the request's.
// The gauges follow promsem's rules: waiting counts EventWait up and, when
// the wait ends, an EventAbandoned or an EventAcquired with a non-zero Wait
// down; in use adds the Weight of EventAcquired and subtracts that of
// EventReleased. Metrics are recorded with e.Ctx, so that a metric reader
// with exemplars links them to the trace.
func (o *Observer) Observe(e core.Event) {
	s := o.series[e.Name]
	if s == nil {
		s = o.other
	}
	ctx := e.Context()
	switch e.Kind {
	case core.EventWait:
		o.waiting.Add(ctx, 1, s.set)
	case core.EventAcquired:
		if e.Wait > 0 {
			o.waiting.Add(ctx, -1, s.set)
		}
		o.wait.Record(ctx, e.Wait.Seconds(), s.acquired)
		o.inUse.Add(ctx, e.Weight, s.set)
		o.span(ctx, s, e, acquired)
	case core.EventAbandoned:
		o.waiting.Add(ctx, -1, s.set)
		o.wait.Record(ctx, e.Wait.Seconds(), s.abandoned)
		o.span(ctx, s, e, abandoned)
	case core.EventReleased:
		o.inUse.Add(ctx, -e.Weight, s.set)
	case core.EventLost:
		o.lost.Add(ctx, 1, s.set)
		attrs := []attribute.KeyValue{s.attr, WeightKey.Int64(e.Weight)}
		if e.Err != nil {
			attrs = append(attrs, ErrorTypeKey.String(errorKind(e.Err)))
		}
		trace.SpanFromContext(ctx).AddEvent(LeaseLostEventName, trace.WithAttributes(attrs...))
	case core.EventBackendError:
		o.errs.Add(ctx, 1, o.errKinds[errorKind(e.Err)])
	}
}

// span records the wait that e ends, from now-e.Wait to now. No state
// joins EventWait to the end of its wait: the span is made whole when the
// wait is over.
func (o *Observer) span(ctx context.Context, s *series, e core.Event, outcome attribute.KeyValue) {
	if !o.rootSpans && !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	end := time.Now()
	attrs := make([]attribute.KeyValue, 4, 5)
	attrs[0], attrs[1], attrs[2], attrs[3] = s.attr, WeightKey.Int64(e.Weight), outcome, WaitKey.Float64(e.Wait.Seconds())
	why := ""
	if e.Kind == core.EventAbandoned {
		why = abandonKind(ctx, e.Err)
		attrs = append(attrs, ErrorTypeKey.String(why))
	}
	_, span := o.tracer.Start(ctx, SpanName, trace.WithTimestamp(end.Add(-e.Wait)),
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	if why != "" {
		span.SetStatus(codes.Error, why)
	}
	span.End(trace.WithTimestamp(end))
}
