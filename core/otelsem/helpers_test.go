package otelsem_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/distsem/distsem/core"
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
	rm := t.collect(tb)
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
	for _, sm := range t.collect(tb).ScopeMetrics {
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

func (t *telemetry) collect(tb testing.TB) metricdata.ResourceMetrics {
	tb.Helper()
	var rm metricdata.ResourceMetrics
	if err := t.reader.Collect(context.Background(), &rm); err != nil {
		tb.Fatal(err)
	}
	return rm
}

// wantTree fails tb unless the span tree is want.
func (t *telemetry) wantTree(tb testing.TB, want string) {
	tb.Helper()
	if got := t.tree(); got != want {
		tb.Fatalf("span tree:\n%s\nwant:\n%s", got, want)
	}
}

// get serves h behind otelhttp's handler, sends it a GET of path through
// otelhttp's transport under a span named "test", and returns the status.
// Both ends propagate the trace with W3C trace context.
func (t *telemetry) get(tb testing.TB, h http.Handler, path string) int {
	tb.Helper()
	prop := otelhttp.WithPropagators(propagation.TraceContext{})
	srv := httptest.NewServer(otelhttp.NewHandler(h, "server", otelhttp.WithTracerProvider(t.tp), prop))
	defer srv.Close()
	client := &http.Client{Transport: otelhttp.NewTransport(http.DefaultTransport, otelhttp.WithTracerProvider(t.tp), prop)}
	defer client.CloseIdleConnections()
	ctx, test := t.tp.Tracer("test").Start(context.Background(), "test")
	defer test.End()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+path, nil)
	resp, err := client.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// queuedWait checks the one wait span: a grant of semaphore that queued
// for some time.
func (t *telemetry) queuedWait(tb testing.TB, semaphore string) {
	tb.Helper()
	s := t.span(tb, otelsem.SpanName)
	if got := attrs(s.Attributes()); got["distsem.semaphore"] != semaphore || got["distsem.outcome"] != "acquired" {
		tb.Errorf("wait span attributes %v, want semaphore %s, outcome acquired", got, semaphore)
	}
	if d := s.EndTime().Sub(s.StartTime()); d <= 0 {
		tb.Errorf("the wait of a queued Acquire is a span of %v, want > 0", d)
	}
}

// signal returns obs followed by closing the channel of each event kind in
// on, for a test to wait for that event; each kind must come once.
func signal(obs core.Observer, on map[core.EventKind]chan struct{}) core.Observer {
	return core.ObserverFunc(func(e core.Event) {
		obs.Observe(e)
		if ch := on[e.Kind]; ch != nil {
			close(ch)
		}
	})
}
