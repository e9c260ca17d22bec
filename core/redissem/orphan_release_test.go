package redissem_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/internal/faultproxy"
	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/internal/servertest"
	"github.com/distsem/distsem/internal/testwait"
)

// TestFaultOrphanGrantReleased: a waiter gave up while Redis was silent,
// and its background clean-up gave up too (after a third of the TTL),
// leaving its queue entry in Redis. When Redis answers again and grants
// that entry, the grant's note must make this process release it, rather
// than leave the permit taken, unused, for the whole lease.
func TestFaultOrphanGrantReleased(t *testing.T) {
	p := newFaultProxy(t, servertest.RedisAddr(t))
	prefix := uniquePrefix(t)
	holder := redissem.New(realClient(t), "orphan", 1, redissem.WithKeyPrefix(prefix))
	defer holder.Close()
	third := redissem.New(realClient(t), "orphan", 1, redissem.WithKeyPrefix(prefix))
	defer third.Close()
	const ttl = 3 * time.Second // the orphan's lease; its entry lives 2/3 of it
	obs, queued := queueObserver()
	gaveUp := make(chan struct{}, 1)
	w := redissem.New(proxyClient(t, p, nil), "orphan", 1, redissem.WithKeyPrefix(prefix),
		redissem.WithDefaultLeaseTTL(ttl), redissem.WithOperationTimeout(100*time.Millisecond), redissem.WithObserver(obs),
		redissem.WithOnError(func(err error) {
			if errors.Is(err, core.ErrUnavailable) && strings.Contains(err.Error(), "leave queue") {
				select {
				case gaveUp <- struct{}{}:
				default:
				}
			}
		}))
	defer w.Close()
	ctx := context.Background()
	hp := acquire(t, holder)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() { _, err := w.Acquire(wctx); errc <- err }()
	<-queued
	ok(t, p.SetMode(faultproxy.Blackhole))
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Acquire: %v, want context.Canceled", err)
	}
	select { // the background leave gives up after ttl/3
	case <-gaveUp:
	case <-time.After(ttl + 10*time.Second):
		t.Fatal("the background leave never reported giving up")
	}
	// The release scripts it sent are lost with their connections; the
	// subscription (tagged) survives, as after a short partition.
	p.ResetOpen(faultproxy.Untagged)
	ok(t, p.SetMode(faultproxy.Pass))
	if st, err := holder.Stats(ctx); err != nil || st.InUse != 1 || st.Waiting != 1 {
		t.Fatalf("before release: stats %+v, %v; want the orphan's entry still queued (machine too slow for the TTL?)", st, err)
	}
	ok(t, hp.Release(ctx)) // grants the orphan's entry
	// Without the release of the orphan's grant, the permit would be taken
	// until its lease of ttl ends.
	testwait.Until(t, ttl/2, "permit still taken after the release: the orphan's grant was not released", func() bool {
		pm, err := third.TryAcquire(ctx)
		if err == nil {
			ok(t, pm.Release(ctx))
			return true
		}
		if !errors.Is(err, core.ErrNoPermit) {
			t.Fatal(err)
		}
		return false
	})
}
