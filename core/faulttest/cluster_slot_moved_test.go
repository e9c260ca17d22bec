package faulttest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/internal/servertest"
)

// TestClusterSlotMoved: a semaphore's slot moves, keys and all, to another
// master while a process waits on it. The master that gives up the slot
// drops that process's shard subscription (SUNSUBSCRIBE), and the process
// subscribes again on the new master, so the grant that follows a release
// reaches the waiter at once. Had it not followed, the new master's
// SPUBLISH would count no subscriber and skip the live waiter, which would
// queue again only after its next heartbeat (a third of the 30 s lease).
func TestClusterSlotMoved(t *testing.T) {
	set := servertest.StartCluster(t, 2, 0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := redis.NewClusterClient(&redis.ClusterOptions{Addrs: set.Addrs})
	defer admin.Close()
	const name = "mv"
	slot, s, d, srcID, dstID := slotMasters(t, ctx, admin, set.Addrs, name)

	opts := []redissem.Option{redissem.WithKeyPrefix(prefix(t)), redissem.WithDefaultLeaseTTL(30 * time.Second)}
	ca := redis.NewClusterClient(&redis.ClusterOptions{Addrs: set.Addrs})
	defer ca.Close()
	cb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: set.Addrs})
	defer cb.Close()
	a := redissem.New(ca, name, 1, opts...)
	defer a.Close()
	b := redissem.New(cb, name, 1, opts...)
	defer b.Close()
	p, err := b.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := call(func() (*core.Permit, error) { return a.Acquire(ctx) })
	awaitWaiting(t, a, 1, 10*time.Second)

	// Move the slot with its keys, as redis-cli --cluster reshard does.
	do := func(c *redis.Client, args ...any) {
		t.Helper()
		if err := c.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	do(d, "CLUSTER", "SETSLOT", slot, "IMPORTING", srcID)
	do(s, "CLUSTER", "SETSLOT", slot, "MIGRATING", dstID)
	keys, err := s.Do(ctx, "CLUSTER", "GETKEYSINSLOT", slot, 100).StringSlice()
	if err != nil || len(keys) == 0 {
		t.Fatalf("keys in slot %d: %v %v", slot, keys, err)
	}
	host, port, _ := strings.Cut(d.Options().Addr, ":")
	args := []any{"MIGRATE", host, port, "", 0, 5000, "KEYS"}
	for _, k := range keys {
		args = append(args, k)
	}
	do(s, args...)
	do(d, "CLUSTER", "SETSLOT", slot, "NODE", dstID)
	do(s, "CLUSTER", "SETSLOT", slot, "NODE", dstID)

	start := time.Now()
	if err := p.Release(ctx); err != nil {
		t.Fatalf("Release after the move: %v", err)
	}
	r, ok := awaitFrom(t, "the waiter after the slot moved", got, start, 5*time.Second)
	if !ok {
		drain(t, "the waiter", got)
		return
	}
	if r.err != nil {
		t.Fatalf("Acquire: %v", r.err)
	}
	figure(t, "cluster-slot-moved", "grant_after_release", r.done.Sub(start))
	release(r.p)
}
