package redissem_test

import (
	"context"
	"testing"
	"time"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/internal/faultproxy"
	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/internal/servertest"
)

// A grant delivered by the heartbeat's catch-up (its
// notification was lost) carries the real grant time, not the heartbeat's.
// Without a failover the token is the server time of the grant in µs.
func TestFaultCatchUpGrantTime(t *testing.T) {
	p := newFaultProxy(t, servertest.RedisAddr(t))
	prefix := uniquePrefix(t)
	obs, queued := queueObserver()
	s := redissem.New(proxyClient(t, p, nil), "catchup", 1, redissem.WithKeyPrefix(prefix),
		redissem.WithDefaultLeaseTTL(600*time.Millisecond), redissem.WithObserver(obs))
	defer s.Close()
	other := redissem.New(realClient(t), "catchup", 1, redissem.WithKeyPrefix(prefix))
	defer other.Close()
	ctx := context.Background()
	hp := acquire(t, other)
	res := make(chan *core.Permit, 1)
	go func() { pm, _ := s.Acquire(ctx); res <- pm }()
	<-queued
	p.SetHold(faultproxy.Tagged, faultproxy.Downstream, true) // the grant's message is held: a heartbeat catches up
	deliver := func() { p.SetHold(faultproxy.Tagged, faultproxy.Downstream, false) }
	defer deliver()
	ok(t, hp.Release(ctx))
	pm := <-res
	deliver()
	if pm == nil {
		t.Fatal("no permit")
	}
	defer pm.Release(ctx)
	if got, want := pm.GrantedAt().UnixMicro(), pm.Token(); got != want {
		t.Fatalf("GrantedAt %d µs, want the grant's time %d (%v off)", got, want, time.Duration(got-want)*time.Microsecond)
	}
}
