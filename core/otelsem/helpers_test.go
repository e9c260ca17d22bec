package otelsem_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/distsem/distsem/core/otelsem"
	"github.com/distsem/distsem/internal/servertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.Cleanup(servertest.Exit)) }

// telemetry is an Observer with an in-memory span recorder and a manual
// metric reader behind it.
type telemetry struct {
	obs    *otelsem.Observer
	spans  *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
	reader *sdkmetric.ManualReader
}

func newTelemetry(opts ...otelsem.Option) *telemetry {
	t := &telemetry{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	t.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(t.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(t.reader))
	t.obs = otelsem.New(append([]otelsem.Option{otelsem.WithTracerProvider(t.tp), otelsem.WithMeterProvider(mp)}, opts...)...)
	return t
}

// tree draws the ended spans as a tree, one span a line, each indented
// under its parent and followed by its kind unless internal and its span
// events in brackets; siblings
// in the order they started. A span whose parent was not recorded is a
// root.
func (t *telemetry) tree() string {
	spans := t.spans.Ended()
	ids := map[string]bool{}
	for _, s := range spans {
		ids[s.SpanContext().SpanID().String()] = true
	}
	children := map[string][]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		p := ""
		if ids[s.Parent().SpanID().String()] {
			p = s.Parent().SpanID().String()
		}
		children[p] = append(children[p], s)
	}
	var b strings.Builder
	var draw func(parent string, depth int)
	draw = func(parent string, depth int) {
		kids := children[parent]
		slices.SortStableFunc(kids, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
		for _, s := range kids {
			fmt.Fprintf(&b, "%s%s", strings.Repeat("  ", depth), s.Name())
			if k := s.SpanKind(); k != trace.SpanKindInternal {
				fmt.Fprintf(&b, " (%s)", k)
			}
			for _, e := range s.Events() {
				fmt.Fprintf(&b, " [%s]", e.Name)
			}
			b.WriteString("\n")
			draw(s.SpanContext().SpanID().String(), depth+1)
		}
	}
	draw("", 0)
	return b.String()
}

// span returns the one ended span called name.
func (t *telemetry) span(tb testing.TB, name string) sdktrace.ReadOnlySpan {
	tb.Helper()
	var found []sdktrace.ReadOnlySpan
	for _, s := range t.spans.Ended() {
		if s.Name() == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		tb.Fatalf("%d spans named %q, want 1; tree:\n%s", len(found), name, t.tree())
	}
	return found[0]
}

// attrs returns a span's attributes as a map of their values' strings.
func attrs(kvs []attribute.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

// point is one data point of a metric: its value, or a histogram's count
// and sum.
type point struct {
	value float64
	count uint64
}

// metric returns the data point of the metric name whose attributes are
// exactly want (each "key=value"), and whether there is one.
func (t *telemetry) metric(tb testing.TB, name string, want ...string) (point, bool) {
	tb.Helper()
	var rm metricdata.ResourceMetrics
	if err := t.reader.Collect(context.Background(), &rm); err != nil {
		tb.Fatal(err)
	}
	slices.Sort(want)
	match := func(set attribute.Set) bool {
		var got []string
		for _, kv := range set.ToSlice() {
			got = append(got, string(kv.Key)+"="+kv.Value.String())
		}
		slices.Sort(got)
		return slices.Equal(got, want)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					if match(p.Attributes) {
						return point{value: float64(p.Value)}, true
					}
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					if match(p.Attributes) {
						return point{value: p.Sum, count: p.Count}, true
					}
				}
			}
		}
	}
	return point{}, false
}

// series counts the data points of the metric name.
func (t *telemetry) series(tb testing.TB, name string) int {
	tb.Helper()
	var rm metricdata.ResourceMetrics
	if err := t.reader.Collect(context.Background(), &rm); err != nil {
		tb.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				return len(d.DataPoints)
			case metricdata.Histogram[float64]:
				return len(d.DataPoints)
			}
		}
	}
	return 0
}
