package faulttest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/internal/faultproxy"
	"github.com/distsem/distsem/core/redissem"
)

// slack is added to every "returns by its deadline" bound: the machine the
// suite runs on may be loaded. The real figure is logged.
const slack = 500 * time.Millisecond

var policies = []struct {
	name string
	p    core.FailurePolicy
}{
	{"FailClosed", core.FailClosed},
	{"FailOpen", core.FailOpen},
	{"FailLocal", core.FailLocal(8)}, // enough local permits for every concurrent call
}

// TestOutage blackholes, or refuses, the connection to Redis under each
// failure policy, with a permit held elsewhere and a waiter queued before
// the fault. It asserts that every call answers by
// its ctx deadline (plus slack), that the policy applies (FailOpen and
// FailLocal grant token-0 permits, FailClosed fails with ErrUnavailable or
// the ctx's error), that a waiter queued before the outage gets the policy
// within one lease TTL, that service is back soon after the heal, and that
// afterwards no capacity is lost and goroutines and heap are flat.
func TestOutage(t *testing.T) {
	srv := sharedServer(t)
	for _, mode := range []faultproxy.Mode{faultproxy.Blackhole, faultproxy.Refuse} {
		for _, pol := range policies {
			t.Run(mode.String()+"/"+pol.name, func(t *testing.T) { outage(t, srv, mode, pol.name, pol.p, false) })
		}
	}
	// go-redis ignores a ctx's deadline on the socket unless
	// ContextTimeoutEnabled is set: the same blackhole with it set shows
	// what core does when go-redis honours the ctx.
	for _, pol := range policies {
		t.Run("blackhole-ctxclient/"+pol.name, func(t *testing.T) { outage(t, srv, faultproxy.Blackhole, pol.name, pol.p, true) })
	}
}

func outage(t *testing.T, srv *server, mode faultproxy.Mode, polName string, pol core.FailurePolicy, ctxClient bool) {
	const (
		limit = 2
		ttl   = 2 * time.Second
	)
	scenario := "outage/" + mode.String() + "/" + polName
	var clientOpts []func(*redis.Options)
	if ctxClient {
		scenario = "outage/blackhole-ctxclient/" + polName
		clientOpts = append(clientOpts, func(o *redis.Options) { o.ContextTimeoutEnabled = true })
	}
	pfx, name := prefix(t), "outage"
	direct := newClient(t, srv.addr())
	other := redissem.New(direct, name, limit, redissem.WithKeyPrefix(pfx), redissem.WithDefaultLeaseTTL(ttl))
	defer other.Close()

	px, err := faultproxy.Start(srv.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	opts := []redissem.Option{redissem.WithKeyPrefix(pfx), redissem.WithDefaultLeaseTTL(ttl), redissem.WithFailurePolicy(pol)}
	sem := redissem.New(newClient(t, px.Addr(), clientOpts...), name, limit, opts...)
	defer sem.Close()
	fresh := redissem.New(newClient(t, px.Addr(), clientOpts...), name, limit, opts...) // a new process: never subscribed
	defer fresh.Close()

	bg := context.Background()
	warm, err := sem.Acquire(bg) // subscribes, fills the pool
	if err != nil {
		t.Fatal(err)
	}
	release(warm)
	full, err := other.Acquire(bg, core.WithWeight(limit))
	if err != nil {
		t.Fatal(err)
	}
	queuedCtx, cancelQueued := context.WithTimeout(bg, 4*ttl)
	defer cancelQueued()
	queued := call(func() (*core.Permit, error) { return sem.Acquire(queuedCtx) })
	awaitWaiting(t, other, 1, 10*time.Second)
	base := measure(px)

	if err := px.SetMode(mode); err != nil {
		t.Fatal(err)
	}
	faultAt := time.Now()
	// Calls that must answer by their deadline, whatever Redis does.
	type timed struct {
		what     string
		deadline time.Duration
		policy   bool // long enough for the policy to apply
		ch       <-chan result
	}
	withCtx := func(d time.Duration, cancelAt time.Duration, f func(context.Context) (*core.Permit, error)) <-chan result {
		return call(func() (*core.Permit, error) {
			ctx, cancel := context.WithTimeout(bg, d)
			defer cancel()
			if cancelAt > 0 {
				time.AfterFunc(cancelAt, cancel)
			}
			return f(ctx)
		})
	}
	acq := func(ctx context.Context) (*core.Permit, error) { return sem.Acquire(ctx) }
	try := func(ctx context.Context) (*core.Permit, error) { return sem.TryAcquire(ctx) }
	calls := []timed{
		{"TryAcquire 1s", time.Second, false, withCtx(time.Second, 0, try)},
		{"Acquire 1s", time.Second, false, withCtx(time.Second, 0, acq)},
		{"Acquire cancelled at 500ms", 500 * time.Millisecond, false, withCtx(30*time.Second, 500*time.Millisecond, acq)},
		{"first Acquire of a new process 1s", time.Second, false, withCtx(time.Second, 0, func(ctx context.Context) (*core.Permit, error) { return fresh.Acquire(ctx) })},
		{"TryAcquire 3s", 3 * time.Second, true, withCtx(3*time.Second, 0, try)},
		{"Acquire 3s", 3 * time.Second, true, withCtx(3*time.Second, 0, acq)},
	}
	var late []timed
	var firstFallback time.Duration
	for _, c := range calls {
		r, ok := await(t, scenario+": "+c.what, c.ch, c.deadline+slack)
		if !ok {
			late = append(late, c)
			continue
		}
		figure(t, scenario, "call", c.what, "answered", r.elapsed, "err", errString(r.err))
		if r.p != nil && r.p.Token() != 0 {
			t.Errorf("%s: got a permit with token %d during the outage; a fallback permit has token 0", c.what, r.p.Token())
		}
		if r.p != nil && (firstFallback == 0 || r.elapsed < firstFallback) {
			firstFallback = r.elapsed
		}
		if c.policy {
			checkPolicy(t, c.what, polName, r)
		}
		release(r.p)
	}
	// After these failures a circuit breaker may be open: one more call
	// shows how fast the policy then applies.
	after := withCtx(time.Second, 0, try)
	if r, ok := await(t, scenario+": TryAcquire after the failures", after, time.Second+slack); ok {
		figure(t, scenario, "call", "TryAcquire after the failures", "answered", r.elapsed, "err", errString(r.err))
		release(r.p)
	} else {
		late = append(late, timed{what: "TryAcquire after the failures", ch: after})
	}
	// The waiter queued before the outage gets the policy within one TTL.
	if r, ok := awaitFrom(t, scenario+": waiter queued before the outage", queued, faultAt, ttl+slack); ok {
		figure(t, scenario, "call", "queued waiter", "answered_after_fault", time.Since(faultAt), "err", errString(r.err))
		checkPolicy(t, "waiter queued before the outage", polName, r)
		release(r.p)
	} else {
		late = append(late, timed{what: "waiter queued before the outage", ch: queued})
	}
	if firstFallback > 0 {
		figure(t, scenario, "first_fallback_permit", firstFallback) // within the operation timeout
	}

	if err := px.SetMode(faultproxy.Pass); err != nil {
		t.Fatal(err)
	}
	healAt := time.Now()
	release(full)
	// Normal service: a Redis-issued permit through the healed proxy.
	var back time.Duration
	for {
		ctx, cancel := context.WithTimeout(bg, time.Second)
		p, err := sem.TryAcquire(ctx)
		cancel()
		if err == nil && p.Token() != 0 {
			back = time.Since(healAt)
			release(p)
			break
		}
		release(p)
		if time.Since(healAt) > 3*ttl {
			t.Fatalf("no Redis-issued permit %v after the heal: %v", time.Since(healAt), err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	figure(t, scenario, "normal_service_after_heal", back, "fault_lasted", healAt.Sub(faultAt))
	if back > time.Second+slack {
		t.Errorf("normal service %v after the heal, want within 1s (+%v slack)", back, slack)
	}
	for _, c := range late {
		drain(t, scenario+": "+c.what, c.ch)
	}
	free := awaitFree(t, other, limit, ttl+slack)
	checkCounts(t, other, direct, pfx, name)
	figure(t, scenario, "all_permits_free_after_heal", time.Since(healAt)-back+free)
	awaitFlat(t, base, ttl+slack, px)
}

// checkPolicy asserts that r is what the failure policy promises.
func checkPolicy(t testing.TB, what, polName string, r result) {
	t.Helper()
	switch polName {
	case "FailClosed":
		if r.err == nil || !errors.Is(r.err, core.ErrUnavailable) && !errors.Is(r.err, context.DeadlineExceeded) {
			t.Errorf("%s under FailClosed: permit %v, err %v; want ErrUnavailable", what, r.p != nil, r.err)
		}
	default:
		if r.err != nil || r.p == nil {
			t.Errorf("%s under %s: err %v; want a fallback permit", what, polName, r.err)
		} else if r.p.Token() != 0 {
			t.Errorf("%s under %s: fallback permit has token %d, want 0", what, polName, r.p.Token())
		}
	}
}

func errString(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}
