package redissem_test

import (
	"context"
	"testing"

	"github.com/distsem/distsem/core/redissem"
)

// TestRedisTokensSurviveLostState: a failover that lost the last writes
// leaves an old token counter behind, and idle keys expire; either way the
// next token must still be larger than every token handed out before.
func TestRedisTokensSurviveLostState(t *testing.T) {
	c, m := miniClient(t)
	s := redissem.New(c, "tok", 1)
	defer s.Close()
	ctx := context.Background()
	last := int64(0)
	next := func() {
		t.Helper()
		p := acquire(t, s)
		if p.Token() <= last {
			t.Fatalf("token %d after %d: not increasing", p.Token(), last)
		}
		last = p.Token()
		ok(t, p.Release(ctx))
	}
	next()
	next()
	m.HSet("distsem:{tok}:m", "tok", "5") // a stale counter
	next()
	for _, k := range m.Keys() { // the keys expired while idle
		m.Del(k)
	}
	next()
}
