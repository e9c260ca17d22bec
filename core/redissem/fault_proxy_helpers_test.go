package redissem_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/internal/faultproxy"
)

// The fault tests (duplicate scripts, deadlines under outage, failure
// policy, close under faults, leftover state, orphan release) inject their
// fault with a faultproxy.Proxy between the client and a real redis-server,
// or with miniredis; none synchronises with a sleep. Bounds on "returns by
// its deadline" have 250ms or more of slack; figures go to the report.

const slack = 250 * time.Millisecond

// newFaultProxy starts a fault proxy in front of target, closed when t
// ends. It tags Redis pub/sub connections (faultproxy.Tagged).
func newFaultProxy(t *testing.T, target string) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.Start(target)
	ok(t, err)
	t.Cleanup(func() { _ = p.Close() })
	p.SetTag("\r\nsubscribe\r\n")
	return p
}

// proxyClient returns a client of p with o's other options (nil: the
// defaults), closed when t ends.
func proxyClient(t *testing.T, p *faultproxy.Proxy, o *redis.Options) *redis.Client {
	if o == nil {
		o = &redis.Options{}
	}
	o.Addr = p.Addr()
	c := redis.NewClient(o)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// queueObserver returns an observer that sends on queued each time a
// caller of its semaphore is queued (EventWait): the caller has its reply.
// One send fits in the channel; a second one blocks until the first is
// received.
func queueObserver() (obs core.Observer, queued <-chan struct{}) {
	ch := make(chan struct{}, 1)
	return core.ObserverFunc(func(e core.Event) {
		if e.Kind == core.EventWait {
			ch <- struct{}{}
		}
	}), ch
}

// within fails the test unless f returns within d, or returns an error.
func within(t *testing.T, d time.Duration, what string, f func() error) time.Duration {
	t.Helper()
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(d):
		t.Fatalf("%s: not done after %v", what, d)
	}
	took := time.Since(start)
	t.Logf("%s: %v", what, took)
	return took
}
