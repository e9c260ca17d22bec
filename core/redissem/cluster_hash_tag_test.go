package redissem_test

import (
	"context"
	"strings"
	"testing"

	"github.com/distsem/distsem/core/redissem"
)

func TestRedisKeysShareHashTag(t *testing.T) {
	c, m := miniClient(t)
	s := redissem.New(c, "route-a", 2)
	defer s.Close()
	ctx := context.Background()
	p := acquire(t, s)
	keys := m.Keys()
	if len(keys) < 3 {
		t.Fatalf("keys = %v", keys)
	}
	for _, k := range keys {
		if !strings.HasPrefix(k, "distsem:{route-a}:") {
			t.Fatalf("key %q is outside the hash tag {route-a}", k)
		}
		if ttl := m.TTL(k); ttl <= 0 {
			t.Fatalf("key %q has no idle expiry", k)
		}
	}
	ok(t, p.Release(ctx))
}
