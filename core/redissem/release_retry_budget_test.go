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

// TestReleaseBudgetUnderBlackhole: Release retries a release whose reply
// was lost within twice the operation timeout, then returns ErrUnavailable,
// even with a ctx that never ends: the budget is a deadline that Release
// sets on its ctx itself.
func TestReleaseBudgetUnderBlackhole(t *testing.T) {
	p := newFaultProxy(t, servertest.RedisAddr(t))
	op := 300 * time.Millisecond
	s := redissem.New(proxyClient(t, p, nil), "budget", 1, redissem.WithKeyPrefix(uniquePrefix(t)),
		redissem.WithOperationTimeout(op), redissem.WithCircuitBreaker(0, 0)) // no breaker: every retry is sent
	defer s.Close()
	pm := acquire(t, s)
	ok(t, p.SetMode(faultproxy.Blackhole))
	var err error
	took := within(t, 2*op+slack, "Release under a blackhole", func() error {
		err = pm.Release(context.Background())
		return nil
	})
	if !errors.Is(err, core.ErrUnavailable) {
		t.Fatalf("Release under a blackhole: %v, want ErrUnavailable", err)
	}
	t.Logf("returned after %v (budget %v)", took, 2*op)
	ok(t, p.SetMode(faultproxy.Pass))
}
