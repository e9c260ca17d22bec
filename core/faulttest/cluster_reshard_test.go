package faulttest

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/internal/servertest"
)

// TestClusterReshardIsQuiet moves a busy semaphore's slot, keys and all,
// from one master to the other and back, as redis-cli --cluster reshard
// does, ten times, while two processes acquire and release on it and a
// third only now and then (its client's slot map is stale every time).
// Every fourth move is slow: the slot stays MIGRATING for 2 s before its
// keys move. No caller may see an error, and the background work may not
// report the migration (MOVED, ASK, TRYAGAIN) through WithOnError: a
// routine reshard must not page whoever alerts on it. The limit holds on
// the recorded timeline.
func TestClusterReshardIsQuiet(t *testing.T) {
	set := servertest.StartCluster(t, 2, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin := redis.NewClusterClient(&redis.ClusterOptions{Addrs: set.Addrs})
	defer admin.Close()
	const name, limit = "rs", 2
	slot, a, b, aID, bID := slotMasters(t, ctx, admin, set.Addrs, name)

	var mu sync.Mutex
	var reported []string
	onError := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		reported = append(reported, err.Error())
	}
	// Leases outlast the slowest move, so that none ends while its
	// heartbeat waits for the slot.
	opts := []redissem.Option{redissem.WithKeyPrefix(prefix(t)), redissem.WithDefaultLeaseTTL(10 * time.Second),
		redissem.WithOnError(onError)}
	newSem := func() *redissem.Semaphore {
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: set.Addrs})
		t.Cleanup(func() { c.Close() })
		s := redissem.New(c, name, limit, opts...)
		t.Cleanup(func() { s.Close() })
		return s
	}
	busy1, busy2, quiet := newSem(), newSem(), newSem()

	lctx, stop := context.WithCancel(ctx)
	l := newLoad()
	l.timeout = 10 * time.Second // the caller's ctx outlasts every move
	l.run(lctx, busy1, name, 3)
	l.run(lctx, busy2, name, 3)
	var quietErrs []string
	// once acquires and releases on the quiet process, within 10 s each.
	once := func() {
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		p, err := quiet.Acquire(actx)
		if err != nil {
			quietErrs = append(quietErrs, "acquire: "+err.Error())
			return
		}
		// The hold ends before Release: the grant that Release makes may
		// return to its waiter before Release returns.
		iv := interval{from: time.Now().UnixNano(), to: time.Now().UnixNano(), weight: 1}
		rerr := p.Release(actx)
		l.mu.Lock()
		l.ivs[name] = append(l.ivs[name], iv)
		l.mu.Unlock()
		if rerr != nil {
			quietErrs = append(quietErrs, "release: "+rerr.Error())
		}
	}
	once()

	from, to := a, b
	fromID, toID := aID, bID
	for i := range 10 {
		moveSlot(t, ctx, slot, from, to, fromID, toID, i%4 == 3)
		once()
		from, to, fromID, toID = to, from, toID, fromID
	}
	stop()
	l.wg.Wait()

	if len(quietErrs) > 0 {
		t.Errorf("the quiet process saw errors: %v", quietErrs)
	}
	if n := l.errs[name] + l.relErrs[name]; n > 0 {
		t.Errorf("the busy processes saw %d acquire and %d release errors", l.errs[name], l.relErrs[name])
	}
	mu.Lock()
	defer mu.Unlock()
	var migration []string
	for _, r := range reported {
		if strings.Contains(r, "MOVED") || strings.Contains(r, "ASK") || strings.Contains(r, "TRYAGAIN") {
			migration = append(migration, r)
		}
	}
	if len(migration) > 0 {
		t.Errorf("WithOnError was told of the migration %d times, e.g. %q", len(migration), migration[0])
	}
	if p := peak(l.ivs[name]); p > limit {
		t.Errorf("%d permits held at once, limit %d", p, limit)
	}
	figure(t, "cluster-reshard", "moves", 10, "grants", len(l.ivs[name]), "reported", len(reported),
		"reported_migration", len(migration), "caller_errors", l.errs[name]+l.relErrs[name]+len(quietErrs))
	if len(reported) > 0 {
		t.Logf("reported through WithOnError: %v", reported)
	}
}

// moveSlot moves slot, keys and all, from master src to master dst (node
// ids srcID and dstID), as redis-cli --cluster reshard does. A slow move
// keeps the slot MIGRATING for 2 s before its keys move.
func moveSlot(t *testing.T, ctx context.Context, slot int64, src, dst *redis.Client, srcID, dstID string, slow bool) {
	t.Helper()
	do := func(c *redis.Client, args ...any) {
		t.Helper()
		if err := c.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	do(dst, "CLUSTER", "SETSLOT", slot, "IMPORTING", srcID)
	do(src, "CLUSTER", "SETSLOT", slot, "MIGRATING", dstID)
	if slow {
		select {
		case <-time.After(2 * time.Second): // the fault: a slot left MIGRATING
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
	}
	host, port, _ := strings.Cut(dst.Options().Addr, ":")
	for {
		keys, err := src.Do(ctx, "CLUSTER", "GETKEYSINSLOT", slot, 100).StringSlice()
		if err != nil {
			t.Fatalf("keys in slot %d: %v", slot, err)
		}
		if len(keys) == 0 {
			break
		}
		args := []any{"MIGRATE", host, port, "", 0, 5000, "KEYS"}
		for _, k := range keys {
			args = append(args, k)
		}
		do(src, args...)
	}
	do(dst, "CLUSTER", "SETSLOT", slot, "NODE", dstID)
	do(src, "CLUSTER", "SETSLOT", slot, "NODE", dstID)
	t.Logf("slot %d moved to %s", slot, dst.Options().Addr)
}
