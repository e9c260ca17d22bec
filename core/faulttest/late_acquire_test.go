package faulttest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/internal/faultproxy"
	"github.com/distsem/distsem/core/redissem"
)

// TestLateAcquire delays the bytes to and from Redis by 400 ms each way,
// beyond a TryAcquire's 100 ms ctx, so the acquire script arrives after the
// caller gave up and after (or with) its clean-up. The
// caller answers by its ctx (+slack), and Redis must not keep the permit for
// it: another process can take every permit within 1s (+slack), not after
// a lease.
func TestLateAcquire(t *testing.T) {
	const (
		limit = 1
		ttl   = 5 * time.Second
	)
	srv := sharedServer(t)
	pfx, name := prefix(t), "late"
	direct := newClient(t, srv.addr())
	other := redissem.New(direct, name, limit, redissem.WithKeyPrefix(pfx), redissem.WithDefaultLeaseTTL(ttl))
	defer other.Close()
	px, err := faultproxy.Start(srv.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	sem := redissem.New(newClient(t, px.Addr()), name, limit, redissem.WithKeyPrefix(pfx), redissem.WithDefaultLeaseTTL(ttl))
	defer sem.Close()
	bg := context.Background()
	warm, err := sem.TryAcquire(bg) // a connection in the pool, the server clock known
	if err != nil {
		t.Fatal(err)
	}
	release(warm)

	px.SetLatency(faultproxy.Upstream, faultproxy.Latency{Fixed: 400 * time.Millisecond})
	px.SetLatency(faultproxy.Downstream, faultproxy.Latency{Fixed: 400 * time.Millisecond})
	ctx, cancel := context.WithTimeout(bg, 100*time.Millisecond)
	begin := time.Now()
	p, err := sem.TryAcquire(ctx)
	answered := time.Since(begin)
	cancel()
	if answered > 100*time.Millisecond+slack {
		t.Errorf("TryAcquire with a 100ms ctx answered after %v", answered)
	}
	if err == nil {
		t.Logf("TryAcquire succeeded despite the delay (token %d)", p.Token())
		release(p)
	} else if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, core.ErrUnavailable) {
		t.Errorf("TryAcquire with a 100ms ctx: %v, want the ctx's error", err)
	}
	px.SetLatency(faultproxy.Upstream, faultproxy.Latency{})
	px.SetLatency(faultproxy.Downstream, faultproxy.Latency{})
	free := awaitFree(t, other, limit, time.Second+slack)
	figure(t, "late_acquire", "answered", answered, "err", errString(err), "all_permits_free_after", free, "lease_ttl", ttl)
	checkCounts(t, other, direct, pfx, name)
}
