package faulttest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/internal/faultproxy"
	"github.com/distsem/distsem/core/redissem"
)

// TestClose closes a semaphore that holds a permit and has two waiters
// queued, with Redis healthy, refusing connections, or blackholed. Close and
// the waiters must return within 2s (+slack), the waiters with ErrClosed;
// with Redis healthy the queue is empty when Close returns, even if the
// client is closed right after; in every state no
// goroutine is left once the client is closed, and no capacity is lost: the
// unreleased permit comes back when its lease ends.
func TestClose(t *testing.T) {
	for _, mode := range []faultproxy.Mode{faultproxy.Pass, faultproxy.Refuse, faultproxy.Blackhole} {
		name := mode.String()
		if mode == faultproxy.Pass {
			name = "healthy"
		}
		t.Run(name, func(t *testing.T) { closeIn(t, mode, name) })
	}
}

func closeIn(t *testing.T, mode faultproxy.Mode, state string) {
	const (
		ttl = 2 * time.Second
		// Close's documented bound: the default operation timeout (the
		// leaves), then the round trips in flight, which end by the
		// client's write and read timeouts (io below).
		io    = 500 * time.Millisecond
		bound = time.Second + 2*io
	)
	scenario := "close/" + state
	srv := sharedServer(t)
	pfx, name := prefix(t), "close"
	direct := newClient(t, srv.addr())
	other := redissem.New(direct, name, 1, redissem.WithKeyPrefix(pfx), redissem.WithDefaultLeaseTTL(ttl))
	defer other.Close()
	px, err := faultproxy.Start(srv.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	before := goleak.IgnoreCurrent()

	c := newClient(t, px.Addr(), func(o *redis.Options) { o.ReadTimeout, o.WriteTimeout = io, io })
	sem := redissem.New(c, name, 1, redissem.WithKeyPrefix(pfx), redissem.WithDefaultLeaseTTL(ttl))
	bg := context.Background()
	held, err := sem.Acquire(bg)
	if err != nil {
		t.Fatal(err)
	}
	var waiters []<-chan result
	for range 2 {
		waiters = append(waiters, call(func() (*core.Permit, error) { return sem.Acquire(bg) }))
	}
	awaitWaiting(t, other, 2, 10*time.Second)

	if err := px.SetMode(mode); err != nil {
		t.Fatal(err)
	}
	closeAt := time.Now()
	closed := call(func() (*core.Permit, error) { return nil, sem.Close() })
	r, ok := await(t, scenario+": Close", closed, bound+slack)
	var lateClose bool
	if ok {
		figure(t, scenario, "close", r.elapsed)
	} else {
		lateClose = true
	}
	// The common sem.Close(); client.Close(): whatever Close left to do
	// later cannot reach Redis any more.
	_ = c.Close()
	if mode == faultproxy.Pass {
		if st, err := other.Stats(bg); err != nil || st.Waiting != 0 {
			t.Errorf("Stats right after Close: %+v, %v; want no waiter left in the queue", st, err)
		}
	}
	var late []<-chan result
	for i, w := range waiters {
		r, ok := awaitFrom(t, scenario+": queued waiter", w, closeAt, bound+slack)
		if !ok {
			late = append(late, w)
			continue
		}
		if !errors.Is(r.err, core.ErrClosed) {
			t.Errorf("waiter %d after Close: permit %v, err %v; want ErrClosed", i, r.p != nil, r.err)
			release(r.p)
		}
	}
	select {
	case <-held.Lost():
	default:
		t.Error("the held permit's Lost channel is open after Close")
	}
	if err := px.SetMode(faultproxy.Pass); err != nil {
		t.Fatal(err)
	}
	if lateClose {
		drain(t, scenario+": Close", closed)
	}
	for _, w := range late {
		drain(t, scenario+": queued waiter", w)
	}
	release(held) // fails (the client is closed): the lease runs out
	_ = px.Close()
	if err := goleak.Find(before); err != nil {
		t.Errorf("goroutines left after Close in state %s: %v", state, err)
	}
	free := awaitFree(t, other, 1, ttl+2*slack)
	figure(t, scenario, "all_permits_free_after", free)
	checkCounts(t, other, direct, pfx, name)
}
