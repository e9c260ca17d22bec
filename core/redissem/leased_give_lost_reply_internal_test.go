package redissem

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core/internal/faultproxy"
	"github.com/distsem/distsem/internal/servertest"
	"github.com/distsem/distsem/internal/testwait"
)

// TestLeasedGiveBackReplyLostGrantsNothing: limit 1, process A (through a
// fault proxy) holds the permit, process B queues. A's release gives the
// unit back; the script runs and hands it to B, but its reply never
// reaches A, whose call times out. A must then grant nothing from the unit
// it offered (it may be B's now), until a reply says what its share is:
// once its give-back has failed, its local share is 0 while B holds the
// permit.
func TestLeasedGiveBackReplyLostGrantsNothing(t *testing.T) {
	p, ca, cb, prefix := proxiedAndDirect(t)
	failed := make(chan struct{}, 1)
	a := NewLeased(ca, "lost", 1, WithKeyPrefix(prefix), WithDefaultLeaseTTL(time.Hour), WithOperationTimeout(300*time.Millisecond),
		WithOnError(func(error) {
			select {
			case failed <- struct{}{}:
			default:
			}
		}))
	a.l.rebalance = time.Hour
	t.Cleanup(func() { _ = a.Close() })
	b := slowLeased(t, cb, prefix, "lost", 1)
	keepShares(a, b)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	pa, err := a.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		_, err := b.Acquire(ctx) // held until the test ends
		got <- err
	}()
	testwait.Until(t, time.Minute, "A not told that B waits", func() bool {
		a.l.mu.Lock()
		defer a.l.mu.Unlock()
		return a.l.contended
	})
	testwait.Until(t, time.Minute, "B's beats not done", func() bool { return quiet(b.l) })

	// Loaded, so that the give-back's EVALSHA runs rather than waiting for
	// a NOSCRIPT reply that the proxy holds.
	if err := scriptShareGive.Load(ctx, cb).Err(); err != nil {
		t.Fatal(err)
	}
	p.SetHold(faultproxy.Untagged, faultproxy.Downstream, true) // A's replies, not its pushes
	t.Cleanup(func() { p.SetHold(faultproxy.Untagged, faultproxy.Downstream, false) })
	if err := pa.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("B: %v", err)
	}
	<-failed // the give-back timed out (in the release or in the loop)
	testwait.Until(t, time.Minute, "A's give-back not over", func() bool {
		a.l.mu.Lock()
		defer a.l.mu.Unlock()
		return !a.l.giving && !a.l.giveReq
	})
	if share := localShare(a.l); share != 0 {
		t.Fatalf("A grants from a share of %d after its give-back's reply was lost, want 0", share)
	}
}

// proxiedAndDirect starts a fault proxy in front of a real Redis (its
// pub/sub connections tagged) and returns it, a client through it, a
// client straight to Redis and a key prefix of the test's own; all are
// closed when t ends.
func proxiedAndDirect(t *testing.T) (*faultproxy.Proxy, *redis.Client, *redis.Client, string) {
	t.Helper()
	addr := servertest.RedisAddr(t)
	p, err := faultproxy.Start(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	p.SetTag("\r\nsubscribe\r\n")
	proxied := redis.NewClient(&redis.Options{Addr: p.Addr()})
	t.Cleanup(func() { _ = proxied.Close() })
	direct := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = direct.Close() })
	return p, proxied, direct, "t" + rand.Text()[:10] + ":"
}

// acquireAndRelease acquires a permit of s within d in a goroutine and
// releases it; the channel receives the outcome.
func acquireAndRelease(ctx context.Context, s *Leased, d time.Duration) <-chan error {
	got := make(chan error, 1)
	go func() {
		actx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		p, err := s.Acquire(actx)
		if err == nil {
			err = p.Release(ctx)
		}
		got <- err
	}()
	return got
}

// localShare returns the permits l's callers may hold now.
func localShare(l *leased) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.loc.State().Share
}
