package otelsem_test

import (
	"context"
	"errors"
	"maps"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/otelsem"
	"github.com/distsem/distsem/core/redissem"
)

// A wait is a span under the caller's, from when Acquire began to wait to
// the grant; a grant at once is a span of zero length.
func TestWaitSpanCoversTheWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tel := newTelemetry(otelsem.WithKeys("db"))
		sem := core.NewLocal(3, core.WithName("db"), core.WithObserver(tel.obs))
		defer sem.Close()
		tracer := tel.tp.Tracer("test")

		ctx, first := tracer.Start(t.Context(), "first")
		held, err := sem.Acquire(ctx, core.WithWeight(3))
		if err != nil {
			t.Fatal(err)
		}
		first.End()

		ctx, second := tracer.Start(t.Context(), "second")
		done := make(chan error)
		go func() {
			p, err := sem.Acquire(ctx, core.WithWeight(2))
			if err == nil {
				err = p.Release(ctx)
			}
			done <- err
		}()
		synctest.Wait() // the second Acquire waits
		time.Sleep(2 * time.Second)
		held.Release(t.Context())
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		second.End()

		tel.wantTree(t, "first\n  distsem.wait\nsecond\n  distsem.wait\n")
		for _, c := range []struct {
			parent trace.Span
			weight string
			wait   time.Duration
		}{{first, "3", 0}, {second, "2", 2 * time.Second}} {
			s := childOf(t, tel, c.parent)
			if d := s.EndTime().Sub(s.StartTime()); d != c.wait {
				t.Errorf("span under %s lasts %v, want %v", c.parent.SpanContext().SpanID(), d, c.wait)
			}
			want := map[string]string{"distsem.semaphore": "db", "distsem.weight": c.weight,
				"distsem.outcome": "acquired", "distsem.wait_seconds": fmtSeconds(c.wait)}
			if got := attrs(s.Attributes()); !maps.Equal(got, want) {
				t.Errorf("attributes %v, want %v", got, want)
			}
			if s.SpanKind() != trace.SpanKindInternal || s.Status().Code != codes.Unset {
				t.Errorf("kind %v, status %v: want internal, unset", s.SpanKind(), s.Status())
			}
		}
	})
}

// A wait that ends without a permit is a span with status Error and the
// reason in error.type.
func TestAbandonedWaitSpan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tel := newTelemetry()
		sem := core.NewLocal(1, core.WithObserver(tel.obs))
		held, _ := sem.Acquire(t.Context())
		tracer := tel.tp.Tracer("test")

		ctx, parent := tracer.Start(t.Context(), "deadline")
		wctx, cancel := context.WithTimeout(ctx, time.Second)
		if _, err := sem.Acquire(wctx); !errors.Is(err, core.ErrNoPermit) {
			t.Fatalf("err = %v, want ErrNoPermit", err)
		}
		cancel()
		parent.End()

		ctx, parent2 := tracer.Start(t.Context(), "closed")
		go func() {
			synctest.Wait()
			sem.Close()
		}()
		if _, err := sem.Acquire(ctx); !errors.Is(err, core.ErrClosed) {
			t.Fatalf("err = %v, want ErrClosed", err)
		}
		parent2.End()
		held.Release(t.Context())

		for _, c := range []struct {
			parent trace.Span
			why    string
			wait   time.Duration
		}{{parent, "deadline_exceeded", time.Second}, {parent2, "closed", 0}} {
			s := childOf(t, tel, c.parent)
			got := attrs(s.Attributes())
			if got["distsem.outcome"] != "abandoned" || got["error.type"] != c.why || got["distsem.semaphore"] != "other" {
				t.Errorf("attributes %v, want outcome abandoned, error.type %s, semaphore other", got, c.why)
			}
			if s.Status().Code != codes.Error || s.Status().Description != c.why {
				t.Errorf("status %v, want Error %q", s.Status(), c.why)
			}
			if d := s.EndTime().Sub(s.StartTime()); d != c.wait {
				t.Errorf("span lasts %v, want %v", d, c.wait)
			}
		}
	})
}

// An Acquire outside any trace makes no span, unless WithRootSpans.
func TestRootSpans(t *testing.T) {
	for _, c := range []struct {
		opts []otelsem.Option
		want string
	}{{nil, ""}, {[]otelsem.Option{otelsem.WithRootSpans()}, "distsem.wait\n"}} {
		tel := newTelemetry(c.opts...)
		sem := core.NewLocal(1, core.WithObserver(tel.obs))
		p, err := sem.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		p.Release(context.Background())
		if got := tel.tree(); got != c.want {
			t.Errorf("tree %q, want %q", got, c.want)
		}
		if p, _ := tel.metric(t, "distsem.sem.acquire.wait", "distsem.semaphore=other", "distsem.outcome=acquired"); p.count != 1 {
			t.Errorf("wait histogram has %d samples, want 1 either way", p.count)
		}
	}
}

// A lease lost while held is an event on the span of the call that
// acquired the permit, which is still open.
func TestLeaseLostEvent(t *testing.T) {
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()
	tel := newTelemetry(otelsem.WithKeys("jobs"))
	reported := make(chan struct{})
	both := signal(tel.obs, map[core.EventKind]chan struct{}{core.EventLost: reported})
	sem := redissem.New(rdb, "jobs", 1, redissem.WithObserver(both), redissem.WithDefaultLeaseTTL(300*time.Millisecond))
	defer sem.Close()

	ctx, job := tel.tp.Tracer("test").Start(context.Background(), "job")
	p, err := sem.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m.SetTime(time.Now().Add(time.Hour)) // the lease ends behind the holder's back
	<-p.Lost()
	<-reported // reported before Lost closed
	p.Release(ctx)
	job.End()

	tel.wantTree(t, "job [distsem.lease_lost]\n  distsem.wait\n")
	e := tel.span(t, "job").Events()[0]
	if got, want := attrs(e.Attributes), map[string]string{"distsem.semaphore": "jobs", "distsem.weight": "1"}; !maps.Equal(got, want) {
		t.Errorf("event attributes %v, want %v", got, want)
	}
	if v, _ := tel.metric(t, "distsem.sem.lost_leases", "distsem.semaphore=jobs"); v.value != 1 {
		t.Errorf("lost_leases{jobs} = %v, want 1", v.value)
	}
}

// childOf returns the one recorded child of parent.
func childOf(tb testing.TB, tel *telemetry, parent trace.Span) sdktrace.ReadOnlySpan {
	tb.Helper()
	var found []sdktrace.ReadOnlySpan
	for _, s := range tel.spans.Ended() {
		if s.Parent().SpanID() == parent.SpanContext().SpanID() {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		tb.Fatalf("%d children of %s, want 1; tree:\n%s", len(found), parent.SpanContext().SpanID(), tel.tree())
	}
	return found[0]
}

func fmtSeconds(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'g', -1, 64) }
