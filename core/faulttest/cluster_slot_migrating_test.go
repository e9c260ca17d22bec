package faulttest

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/internal/servertest"
)

// TestClusterSlotMigrating: while a semaphore's slot is held MIGRATING for
// 1 s, Redis answers its scripts with ASK and TRYAGAIN (every script
// declares four keys, some of them missing). Acquire and Release must not
// return ErrUnavailable for the whole migration: they retry within their
// ctx and succeed once the slot is stable.
func TestClusterSlotMigrating(t *testing.T) {
	set := servertest.StartCluster(t, 2, 0)
	ctx := context.Background()
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: set.Addrs})
	defer c.Close()
	const name = "mig"
	slot, s, d, srcID, dstID := slotMasters(t, ctx, c, set.Addrs, name)
	// migrate marks the slot migrating for 1 s, then stable again.
	migrate := func() <-chan struct{} {
		t.Helper()
		if err := d.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", srcID).Err(); err != nil {
			t.Fatal(err)
		}
		if err := s.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", dstID).Err(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		time.AfterFunc(time.Second, func() {
			defer close(done)
			_ = s.Do(ctx, "CLUSTER", "SETSLOT", slot, "STABLE").Err()
			_ = d.Do(ctx, "CLUSTER", "SETSLOT", slot, "STABLE").Err()
		})
		return done
	}
	sem := redissem.New(c, name, 2, redissem.WithKeyPrefix("mg:"), redissem.WithDefaultLeaseTTL(3*time.Second))
	defer sem.Close()

	// An idle semaphore: no key exists, ASK then TRYAGAIN on the target.
	done := migrate()
	start := time.Now()
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	p, err := sem.Acquire(actx)
	cancel()
	if err != nil {
		t.Fatalf("Acquire during the migration: %v", err)
	}
	figure(t, "cluster-migrating", "acquire", time.Since(start))
	<-done

	// A held semaphore: some keys exist, TRYAGAIN on the source.
	done = migrate()
	start = time.Now()
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := p.Release(rctx); err != nil {
		t.Fatalf("Release during the migration: %v", err)
	}
	figure(t, "cluster-migrating", "release", time.Since(start))
	<-done
}

// slotMasters returns the slot of semaphore name's keys, clients of the
// master that serves it (s) and of another master (d), and their node ids:
// what a test needs to move or migrate the slot. The clients close at the
// end of the test.
func slotMasters(t *testing.T, ctx context.Context, c *redis.ClusterClient, addrs []string, name string) (slot int64, s, d *redis.Client, srcID, dstID string) {
	t.Helper()
	slot, err := c.ClusterKeySlot(ctx, "{"+name+"}").Result()
	if err != nil {
		t.Fatal(err)
	}
	src, err := c.MasterForKey(ctx, "{"+name+"}")
	if err != nil {
		t.Fatal(err)
	}
	dstAddr := addrs[0]
	if dstAddr == src.Options().Addr {
		dstAddr = addrs[1]
	}
	s = redis.NewClient(&redis.Options{Addr: src.Options().Addr})
	d = redis.NewClient(&redis.Options{Addr: dstAddr})
	t.Cleanup(func() { s.Close(); d.Close() })
	id := func(c *redis.Client) string {
		v, err := c.Do(ctx, "CLUSTER", "MYID").Text()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	return slot, s, d, id(s), id(d)
}
