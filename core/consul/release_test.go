package consul_test

import (
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/consul"
)

// traffic counts a client's requests.
type traffic struct {
	requests  atomic.Int64
	lists     atomic.Int64 // GET of a prefix (recurse)
	conflicts atomic.Int64 // transactions whose check failed (409)
}

// countingClient returns a client of the test agent that counts its
// requests into n.
func countingClient(t *testing.T, n *traffic) *api.Client {
	t.Helper()
	newClient(t) // skips or fails without an agent
	tr := &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second}
	c, err := api.NewClient(&api.Config{Address: agentAddr, HttpClient: &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		n.requests.Add(1)
		if r.URL.Query().Has("recurse") {
			n.lists.Add(1)
		}
		resp, err := tr.RoundTrip(r)
		if err == nil && resp.StatusCode == http.StatusConflict {
			n.conflicts.Add(1)
		}
		return resp, err
	})}})
	ok(t, err)
	t.Cleanup(tr.CloseIdleConnections)
	return c
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Below the whole limit, a Release is one transaction that cannot fail,
// however much .lock changed since its process last read it (here another
// process released and a third was granted): releases do not race each
// other, or the grants, on .lock. The head of the queue grants itself on
// the deletion, FIFO, with a larger token, and when all is released
// nothing is left under the prefix.
func TestReleaseBelowLimitIsOneWrite(t *testing.T) {
	ctx := background()
	var n traffic
	pfx := uniquePrefix()
	prefix := core.WithKeyPrefix(pfx)
	a := consul.New(countingClient(t, &n), "rel", 2, prefix)
	b := consul.New(newClient(t), "rel", 2, prefix)
	c := consul.New(newClient(t), "rel", 2, prefix)
	t.Cleanup(func() { _ = a.Close(); _ = b.Close(); _ = c.Close() })
	pa, err := a.Acquire(ctx)
	ok(t, err)
	pb, err := b.Acquire(ctx)
	ok(t, err)
	type grant struct {
		p   *core.Permit
		err error
	}
	got := make(chan grant, 2)
	for i := range 2 {
		go func() { p, err := c.Acquire(ctx); got <- grant{p, err} }()
		waitQueued(t, b, int64(i+1))
	}
	ok(t, pb.Release(ctx))
	first := <-got
	ok(t, first.err)
	if first.p.Token() <= pb.Token() {
		t.Fatalf("token %d after %d, want larger", first.p.Token(), pb.Token())
	}

	n.requests.Store(0)
	ok(t, pa.Release(ctx))
	if n, f := n.requests.Load(), n.conflicts.Load(); n != 1 || f != 0 {
		t.Fatalf("Release made %d requests, %d of them failed transactions; want 1 and 0", n, f)
	}
	second := <-got
	ok(t, second.err)
	if second.p.Token() <= first.p.Token() {
		t.Fatalf("token %d after %d, want larger", second.p.Token(), first.p.Token())
	}
	ok(t, first.p.Release(ctx))
	ok(t, second.p.Release(ctx))
	wantStats(t, b, 0, 0)
	keys, _, err := newClient(t).KV().Keys(pfx, "", nil)
	ok(t, err)
	if len(keys) > 0 {
		t.Fatalf("left behind: %q", keys)
	}
}

// A waiter whose predecessor was just granted grants itself from the .lock
// state that grant stored, which the predecessor's key carries: one write
// after its blocking query, no read of the queue in between, so grants
// follow each other down the queue one round trip apart.
func TestGrantBehindReadsNothing(t *testing.T) {
	ctx := background()
	var n traffic
	prefix := core.WithKeyPrefix(uniquePrefix())
	a := consul.New(newClient(t), "behind", 2, prefix)
	b := consul.New(newClient(t), "behind", 2, prefix)
	c := consul.New(countingClient(t, &n), "behind", 2, prefix)
	t.Cleanup(func() { _ = a.Close(); _ = b.Close(); _ = c.Close() })
	whole, err := a.Acquire(ctx, core.WithWeight(2))
	ok(t, err)
	type grant struct {
		p   *core.Permit
		err error
	}
	head, behind := make(chan grant, 1), make(chan grant, 1)
	go func() { p, err := b.Acquire(ctx); head <- grant{p, err} }()
	waitQueued(t, a, 1)
	go func() { p, err := c.Acquire(ctx); behind <- grant{p, err} }()
	waitQueued(t, a, 2)
	n.lists.Store(0)
	ok(t, whole.Release(ctx)) // hands one permit to the head; one stays free
	g0, g1 := <-head, <-behind
	ok(t, g0.err)
	ok(t, g1.err)
	if l := n.lists.Load(); l != 0 {
		t.Fatalf("the waiter behind the head read the queue %d times after its turn came, want 0", l)
	}
	if g1.p.Token() <= g0.p.Token() {
		t.Fatalf("token %d after %d: want larger", g1.p.Token(), g0.p.Token())
	}
	ok(t, g0.p.Release(ctx))
	ok(t, g1.p.Release(ctx))
	wantStats(t, a, 0, 0)
}

// A waiter whose read of the queue fails after its predecessor's grant
// woke it returns ErrUnavailable and leaves the queue (the read's error
// was once lost in a shadowed variable, and the next loop dereferenced a
// nil snapshot).
func TestWaiterReadFailsAfterWake(t *testing.T) {
	ctx := background()
	newClient(t)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	var fail atomic.Bool
	failing, err := api.NewClient(&api.Config{Address: agentAddr, HttpClient: &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if fail.Load() && r.Method == http.MethodGet && r.URL.Query().Has("recurse") {
			return nil, errors.New("injected: lists fail")
		}
		return tr.RoundTrip(r)
	})}})
	ok(t, err)
	prefix := core.WithKeyPrefix(uniquePrefix())
	a := consul.New(newClient(t), "fail", 1, prefix)
	b := consul.New(failing, "fail", 1, prefix)
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	holder, err := a.Acquire(ctx)
	ok(t, err)
	head := make(chan *core.Permit, 1)
	go func() { p, _ := a.Acquire(ctx); head <- p }()
	waitQueued(t, a, 1)
	got := make(chan error, 1)
	go func() { _, err := b.Acquire(ctx); got <- err }()
	waitQueued(t, a, 2)
	fail.Store(true)
	ok(t, holder.Release(ctx)) // hands off to the head, whose grant wakes b
	if err := <-got; !errors.Is(err, core.ErrUnavailable) {
		t.Fatalf("Acquire = %v, want ErrUnavailable", err)
	}
	p := <-head
	if p == nil {
		t.Fatal("the head was not granted")
	}
	ok(t, p.Release(ctx))
	wantStats(t, a, 0, 0)
}
