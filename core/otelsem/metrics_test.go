package otelsem_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/otelsem"
	"github.com/distsem/distsem/core/redissem"
)

func TestMetricsTrackAcquireWaitAndRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tel := newTelemetry(otelsem.WithKeys("a"))
		sem := core.NewLocalKeyed(2, core.WithObserver(tel.obs))
		defer sem.Close()
		value := func(name string, attrs ...string) float64 {
			t.Helper()
			p, ok := tel.metric(t, name, append([]string{"distsem.semaphore=a"}, attrs...)...)
			if !ok {
				t.Fatalf("no %s%v", name, attrs)
			}
			return p.value
		}
		if v := value("distsem.sem.in_use"); v != 0 {
			t.Fatalf("in_use{a} before any Acquire = %v, want 0 (series exist from the start)", v)
		}
		held, err := sem.Acquire(t.Context(), "a", core.WithWeight(2))
		if err != nil {
			t.Fatal(err)
		}
		if v := value("distsem.sem.in_use"); v != 2 {
			t.Fatalf("in_use{a} = %v, want 2", v)
		}
		done := make(chan error)
		go func() {
			p, err := sem.Acquire(t.Context(), "a")
			if err == nil {
				err = p.Release(t.Context())
			}
			done <- err
		}()
		synctest.Wait()
		if v := value("distsem.sem.waiting"); v != 1 {
			t.Fatalf("waiting{a} = %v, want 1", v)
		}
		time.Sleep(2 * time.Second) // fake time: the waiter waits 2s
		held.Release(t.Context())
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if v := value("distsem.sem.waiting"); v != 0 {
			t.Fatalf("waiting{a} after = %v, want 0", v)
		}
		if v := value("distsem.sem.in_use"); v != 0 {
			t.Fatalf("in_use{a} after = %v, want 0", v)
		}
		if p, _ := tel.metric(t, "distsem.sem.acquire.wait", "distsem.semaphore=a", "distsem.outcome=acquired"); p.count != 2 || p.value != 2 {
			t.Fatalf("acquired waits: %d samples summing %vs, want 2 summing 2s (0 and 2)", p.count, p.value)
		}

		// A waiter that gives up is an abandoned sample, and leaves the queue.
		held, _ = sem.Acquire(t.Context(), "a", core.WithWeight(2))
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if _, err := sem.Acquire(ctx, "a"); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v", err)
		}
		held.Release(t.Context())
		if p, _ := tel.metric(t, "distsem.sem.acquire.wait", "distsem.semaphore=a", "distsem.outcome=abandoned"); p.count != 1 || p.value != 1 {
			t.Fatalf("abandoned waits: %d samples summing %vs, want 1 of 1s", p.count, p.value)
		}
		if v := value("distsem.sem.waiting"); v != 0 {
			t.Fatalf("waiting{a} after abandon = %v, want 0", v)
		}
	})
}

// Keys not named, however many and however long, fold into "other": the
// attribute sets stay bounded, in metrics and spans alike.
func TestAttributesBounded(t *testing.T) {
	long := strings.Repeat("é", 200) // 400 bytes
	tel := newTelemetry(otelsem.WithKeys("a", long))
	sem := core.NewLocalKeyed(10, core.WithObserver(tel.obs))
	defer sem.Close()
	ctx, parent := tel.tp.Tracer("test").Start(t.Context(), "request")
	var held []*core.Permit
	for i := range 50 {
		p, err := sem.Acquire(ctx, fmt.Sprintf("client-%d-%s", i, strings.Repeat("x", 1000)))
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, p)
	}
	p, _ := sem.Acquire(ctx, long)
	held = append(held, p)
	parent.End()
	if n := tel.series(t, "distsem.sem.in_use"); n != 3 {
		t.Fatalf("%d in_use series, want 3 (a, the long key, other)", n)
	}
	if p, _ := tel.metric(t, "distsem.sem.in_use", "distsem.semaphore=other"); p.value != 50 {
		t.Fatalf("in_use{other} = %v, want 50", p.value)
	}
	cut := strings.Repeat("é", otelsem.MaxLabelLen/2)
	if p, _ := tel.metric(t, "distsem.sem.in_use", "distsem.semaphore="+cut); p.value != 1 {
		t.Fatalf("in_use of the long key under its cut value = %v, want 1", p.value)
	}
	values := map[string]int{}
	for _, s := range tel.spans.Ended() {
		if s.Name() == otelsem.SpanName {
			values[attrs(s.Attributes())["distsem.semaphore"]]++
		}
	}
	if len(values) != 2 || values["other"] != 50 || values[cut] != 1 {
		t.Fatalf("distsem.semaphore of the wait spans: %v, want other 50 times and the cut key once", values)
	}
	for _, p := range held {
		p.Release(t.Context())
	}
}

func TestNewRefusesOtherAsAKey(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.HasPrefix(fmt.Sprint(r), "otelsem: ") {
			t.Fatalf("recovered %v, want an otelsem: panic", r)
		}
	}()
	otelsem.New(otelsem.WithKeys("other"))
}

// A real backend failure: Redis is not there.
func TestBackendErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	defer rdb.Close()
	tel := newTelemetry()
	if n := tel.series(t, "distsem.sem.backend_errors"); n != 5 {
		t.Fatalf("%d backend_errors series before any error, want 5 (one per error.type)", n)
	}
	sem := redissem.New(rdb, "down", 1, redissem.WithObserver(tel.obs))
	defer sem.Close()
	if _, err := sem.Acquire(t.Context()); !errors.Is(err, core.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	if p, _ := tel.metric(t, "distsem.sem.backend_errors", "error.type=network"); p.value < 1 {
		t.Fatalf("backend_errors{error.type=network} = %v, want >= 1", p.value)
	}
}
