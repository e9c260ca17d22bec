package redissem_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/internal/faultproxy"
	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/internal/servertest"
)

// TestFaultAdoptTwiceIsOnce delivers the adopt script twice (a client
// retry, or a late copy): the second run must find the permit adopted and
// change nothing, so the count stays the permit's weight.
func TestFaultAdoptTwiceIsOnce(t *testing.T) {
	p := newFaultProxy(t, servertest.RedisAddr(t))
	prefix := uniquePrefix(t)
	a := redissem.New(realClient(t), "adup", 3, redissem.WithKeyPrefix(prefix), redissem.WithDefaultLeaseTTL(time.Second))
	defer a.Close()
	b := redissem.New(proxyClient(t, p, nil), "adup", 3, redissem.WithKeyPrefix(prefix))
	defer b.Close()
	ctx := context.Background()
	pa := acquire(t, a, core.WithWeight(2))
	p.SetDuplicate(true)
	pb, err := b.Adopt(ctx, pa.ID())
	p.SetDuplicate(false)
	ok(t, err)
	if pb.Weight() != 2 || pb.Token() != pa.Token() {
		t.Fatalf("adopted weight %d token %d, want 2 %d", pb.Weight(), pb.Token(), pa.Token())
	}
	wantStats(t, a, 2, 0)
	ok(t, pb.Release(ctx))
	wantStats(t, a, 0, 0)
	lostWithin(t, pa, "the original permit")
}

// TestFaultAdoptReplyLost holds the adopt script's reply until the call
// times out: Adopt returns ErrUnavailable by its operation timeout, the
// script ran, and the permit it moved is given back in the background, so
// no capacity is lost; the original permit reports Lost.
func TestFaultAdoptReplyLost(t *testing.T) {
	p := newFaultProxy(t, servertest.RedisAddr(t))
	prefix := uniquePrefix(t)
	a := redissem.New(realClient(t), "alost", 2, redissem.WithKeyPrefix(prefix), redissem.WithDefaultLeaseTTL(time.Second))
	defer a.Close()
	b := redissem.New(proxyClient(t, p, nil), "alost", 2, redissem.WithKeyPrefix(prefix),
		redissem.WithOperationTimeout(300*time.Millisecond))
	defer b.Close()
	ctx := context.Background()
	pa := acquire(t, a)
	// Load the script on the server first (another test may have flushed
	// it): a held NOSCRIPT reply would mean the script never ran.
	if _, err := b.Adopt(ctx, "not.held"); !errors.Is(err, core.ErrNotHeld) {
		t.Fatalf("Adopt of an unknown id: %v, want ErrNotHeld", err)
	}
	p.SetHold(faultproxy.All, faultproxy.Downstream, true)
	var err error
	within(t, 300*time.Millisecond+2*time.Second, "Adopt with its reply held", func() error {
		_, err = b.Adopt(ctx, pa.ID())
		return nil
	})
	if !errors.Is(err, core.ErrUnavailable) {
		t.Fatalf("Adopt with its reply held: %v, want ErrUnavailable", err)
	}
	p.SetHold(faultproxy.All, faultproxy.Downstream, false)
	lostWithin(t, pa, "the permit whose adoption lost its reply")
	wantStats(t, a, 0, 0)
	if err := pa.Release(ctx); !errors.Is(err, core.ErrNotHeld) {
		t.Fatalf("Release: %v, want ErrNotHeld", err)
	}
}
