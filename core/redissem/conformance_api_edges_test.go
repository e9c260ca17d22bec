package redissem_test

// Conformance rows for the API's edges (Close, a nil ctx, the lease-TTL
// rule, ctx causes, the limit bound, option checks): every backend must
// answer them alike.

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/redissem"
)

// mustPanic runs f and returns the panic's message, failing if f returned.
func mustPanic(t *testing.T, what string, f func()) (msg string) {
	t.Helper()
	returned := false
	defer func() {
		r := recover()
		if r == nil && !returned {
			return // runtime.Goexit: f skipped or failed the test
		}
		if r == nil {
			t.Fatalf("%s: no panic", what)
		}
		msg, _ = r.(string)
		if !strings.HasPrefix(msg, "core: ") && !strings.HasPrefix(msg, "redissem: ") {
			t.Fatalf("%s: panic %v, want a \"core: …\" or \"redissem: …\" message", what, r)
		}
	}()
	f()
	returned = true
	return ""
}

// After Close every backend refuses TryAcquire and Acquire with
// ErrClosed; none grants a permit.
func TestEdgeClosedRefusesTryAcquire(t *testing.T) {
	forEach(t, func(t *testing.T, b impl) {
		ctx := context.Background()
		s := b.new(t, 2)
		ok(t, s.Close())
		if p, err := s.TryAcquire(ctx); !errors.Is(err, core.ErrClosed) || p != nil {
			t.Fatalf("TryAcquire after Close = %v, %v, want ErrClosed", p, err)
		}
		if p, err := s.Acquire(ctx); !errors.Is(err, core.ErrClosed) || p != nil {
			t.Fatalf("Acquire after Close = %v, %v, want ErrClosed", p, err)
		}
	})
}

// Release(nil) gives the permit back, as Release(Background) does;
// it never panics half-way.
func TestEdgeReleaseNilContext(t *testing.T) {
	forEach(t, func(t *testing.T, b impl) {
		s := b.new(t, 1)
		var nilCtx context.Context
		p := acquire(t, s)
		ok(t, p.Release(nilCtx))
		wantStats(t, s, 0, 0)
		q := tryAcquire(t, s)
		ok(t, q.ReleaseDetached(nilCtx, time.Minute))
		wantStats(t, s, 0, 0)
	})
}

// One lease-TTL rule on every backend: a default below 100ms makes
// the constructor panic, a per-call TTL below it is ErrInvalidArgument, and
// 100ms is accepted. The in-process backend has no lease: it panics on
// any default lease TTL (naming the option), and takes the per-call rule.
func TestEdgeLeaseTTLRule(t *testing.T) {
	forEach(t, func(t *testing.T, b impl) {
		ctx := context.Background()
		for _, d := range []time.Duration{0, -time.Second, 99 * time.Millisecond} {
			mustPanic(t, "WithDefaultLeaseTTL("+d.String()+")", func() { b.new(t, 1, optDefaultLeaseTTL(d)) })
		}
		var s sem
		if b.name == "local" {
			msg := mustPanic(t, "NewLocal with WithDefaultLeaseTTL", func() { b.new(t, 1, optDefaultLeaseTTL(100*time.Millisecond)) })
			if !strings.Contains(msg, "WithDefaultLeaseTTL") {
				t.Fatalf("panic %q does not name WithDefaultLeaseTTL", msg)
			}
			s = b.new(t, 1)
		} else {
			s = b.new(t, 1, optDefaultLeaseTTL(100*time.Millisecond))
		}
		for _, d := range []time.Duration{0, 99 * time.Millisecond} {
			if _, err := s.Acquire(ctx, core.WithLeaseTTL(d)); !errors.Is(err, core.ErrInvalidArgument) {
				t.Fatalf("WithLeaseTTL(%v): %v, want ErrInvalidArgument", d, err)
			}
		}
		p, err := s.Acquire(ctx, core.WithLeaseTTL(time.Minute))
		ok(t, err)
		ok(t, p.Release(ctx))
		p, err = s.Acquire(ctx, core.WithWeight(1)) // an option, and the default TTL
		ok(t, err)
		ok(t, p.Release(ctx))
	})
}

type causeErr struct{}

func (causeErr) Error() string { return "the cause" }

// A ctx with a cause still matches context.Canceled or
// DeadlineExceeded (and ErrNoPermit for a deadline); the cause is wrapped
// and named too. Checked before queueing and while queued.
func TestEdgeContextCause(t *testing.T) {
	forEach(t, func(t *testing.T, b impl) {
		s := b.new(t, 1)
		check := func(err error, want error) {
			t.Helper()
			if !errors.Is(err, want) || !errors.Is(err, causeErr{}) || !strings.Contains(err.Error(), "the cause") {
				t.Fatalf("err = %v, want %v with the cause", err, want)
			}
			if want == context.DeadlineExceeded && !errors.Is(err, core.ErrNoPermit) {
				t.Fatalf("err = %v, want ErrNoPermit too", err)
			}
			if want == context.Canceled && errors.Is(err, core.ErrNoPermit) {
				t.Fatalf("err = %v: a cancellation must not match ErrNoPermit", err)
			}
		}
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(causeErr{})
		_, err := s.Acquire(ctx)
		check(err, context.Canceled)

		holder := acquire(t, s)
		ctx, cancel = context.WithCancelCause(context.Background())
		errc := make(chan error, 1)
		go func() { _, err := s.Acquire(ctx); errc <- err }()
		waitQueued(t, s, 1)
		cancel(causeErr{})
		check(<-errc, context.Canceled)

		dctx, dcancel := context.WithTimeoutCause(context.Background(), 50*time.Millisecond, causeErr{})
		defer dcancel()
		_, err = s.Acquire(dctx)
		check(err, context.DeadlineExceeded)
		ok(t, holder.Release(context.Background()))
		wantStats(t, s, 0, 0)
	})
}

// Limits and weights are bounded by MaxLimit = 2^53 − 1 on every
// backend: beyond it constructors panic and calls fail with
// ErrInvalidArgument before any script runs; at it, admission is exact.
func TestEdgeLimitBound(t *testing.T) {
	const maxLimit = 1<<53 - 1
	forEach(t, func(t *testing.T, b impl) {
		ctx := context.Background()
		for _, l := range []int64{maxLimit + 1, math.MaxInt64} {
			mustPanic(t, "limit above 2^53-1", func() { b.new(t, l) })
		}
		s := b.new(t, maxLimit)
		for _, w := range []int64{maxLimit + 1, math.MaxInt64} {
			if _, err := s.TryAcquire(ctx, core.WithWeight(w)); !errors.Is(err, core.ErrInvalidArgument) {
				t.Fatalf("weight %d: %v, want ErrInvalidArgument", w, err)
			}
			if err := s.SetLimit(ctx, w); !errors.Is(err, core.ErrInvalidArgument) {
				t.Fatalf("SetLimit(%d): %v, want ErrInvalidArgument", w, err)
			}
		}
		big, err := s.TryAcquire(ctx, core.WithWeight(maxLimit-1))
		ok(t, err)
		if _, err := s.TryAcquire(ctx, core.WithWeight(2)); !errors.Is(err, core.ErrNoPermit) {
			t.Fatalf("weight 2 on top of 2^53-2 of 2^53-1: %v, want ErrNoPermit", err)
		}
		one, err := s.TryAcquire(ctx)
		ok(t, err)
		if st := stats(t, s); st.Limit != maxLimit || st.InUse != maxLimit {
			t.Fatalf("stats = %+v, want limit and in use %d", st, int64(maxLimit))
		}
		ok(t, big.Release(ctx))
		ok(t, one.Release(ctx))
		wantStats(t, s, 0, 0)
	})
	mustPanic(t, "FailLocal above 2^53-1", func() { core.FailLocal(maxLimit + 1) })
}

// Every option is checked at construction, with a clear message.
func TestEdgeOptionsValidated(t *testing.T) {
	forEach(t, func(t *testing.T, b impl) {
		// Each row in both forms; a row with redisOnly names an option of
		// the Redis backends only.
		bad := map[string]struct {
			o         opt
			redisOnly bool
		}{
			"WithMaxIdleKeys":      {o: optMaxIdleKeys(-1)},
			"WithDefaultLeaseTTL":  {o: optDefaultLeaseTTL(-time.Second)},
			"WithLimits":           {o: optLimits(map[string]int64{"a": 0})},
			"key prefix":           {o: opt{core.WithKeyPrefix("a{b}"), redissem.WithKeyPrefix("a{b}")}},
			"nil Option":           {o: opt{nil, nil}},
			"WithOperationTimeout": {o: opt{redis: redissem.WithOperationTimeout(-time.Second)}, redisOnly: true},
			"WithCircuitBreaker":   {o: opt{redis: redissem.WithCircuitBreaker(3, -time.Second)}, redisOnly: true},
			"WithOutageGrace":      {o: opt{redis: redissem.WithOutageGrace(-time.Second)}, redisOnly: true},
		}
		for want, row := range bad {
			if row.redisOnly && b.name == "local" {
				continue
			}
			if msg := mustPanic(t, want, func() { b.new(t, 1, row.o) }); !strings.Contains(msg, want) {
				t.Fatalf("panic %q does not name %q", msg, want)
			}
		}
		s := b.new(t, 1)
		if _, err := s.Acquire(context.Background(), nil); !errors.Is(err, core.ErrInvalidArgument) {
			t.Fatalf("nil AcquireOption: %v, want ErrInvalidArgument", err)
		}
	})
}
