package redissem

import (
	"context"
	"testing"
)

// A subscription made while another was installed (on Cluster, a subscribe
// whose shard channel's subscription was replaced meanwhile) replaces it
// the way resubscribe does: the old one is closed, never left open beside
// the current one.
func TestSubscribeOverAnotherClosesIt(t *testing.T) {
	c := miniClient(t)
	ctx := context.Background()
	s := New(c, "sub", 1)
	defer s.Close()
	if err := s.b.listen(ctx, s); err != nil {
		t.Fatal(err)
	}
	s.b.mu.Lock()
	first := s.b.pubsub
	s.b.mu.Unlock()
	if err := s.b.subscribe(ctx, s); err != nil {
		t.Fatal(err)
	}
	s.b.mu.Lock()
	second := s.b.pubsub
	s.b.mu.Unlock()
	if second == first {
		t.Fatal("subscribe kept the old subscription")
	}
	if err := first.ps[0].Ping(ctx); err == nil {
		_ = first.close() // or Close would wait for its receive loop forever
		t.Fatal("the old subscription was left open beside the new one")
	}
	if err := second.ps[0].Ping(ctx); err != nil {
		t.Fatalf("the new subscription: %v", err)
	}
	// Close (deferred) waits for every receive loop: the old one's ended
	// with it, or the test would not return.
}
