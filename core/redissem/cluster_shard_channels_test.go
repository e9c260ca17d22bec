package redissem_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/internal/servertest"
	"github.com/distsem/distsem/internal/testwait"
)

// awaitNoShardChannels polls the servers until the client named client has
// no shard channel subscribed (an unsubscribe takes effect on the server
// after its reply), and fails t with what if that takes until ctx's
// deadline.
func awaitNoShardChannels(ctx context.Context, t *testing.T, admin *redis.ClusterClient, client, what string) {
	t.Helper()
	deadline, _ := ctx.Deadline()
	left, done := 0, false
	defer func() {
		if !done {
			t.Logf("%d shard channels left", left)
		}
	}()
	testwait.Until(t, time.Until(deadline), what, func() bool {
		_, left, _ = shardSubs(ctx, t, admin, client)
		return left == 0
	})
	done = true
}

// clusterClients returns a Cluster client named after name (unique per
// call, so that CLIENT LIST tells its connections apart) and an unnamed
// admin client, both closed at the test's end.
func clusterClients(t *testing.T, name string) (c, admin *redis.ClusterClient, client string) {
	addrs := servertest.RedisClusterAddrs(t)
	client = name + strconv.FormatInt(time.Now().UnixNano(), 36)
	c = redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, ClientName: client})
	t.Cleanup(func() { _ = c.Close() })
	admin = redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	t.Cleanup(func() { _ = admin.Close() })
	return c, admin, client
}

// TestClusterKeyedShardSubscriptions: on Cluster a process that waits on
// many keyed semaphores (many slots) subscribes one shard channel per key
// on one connection per master, not one connection per key, and every
// grant reaches its waiter through them.
func TestClusterKeyedShardSubscriptions(t *testing.T) {
	prefix := uniquePrefix(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, admin, client := clusterClients(t, "shard")
	opts := []redissem.Option{redissem.WithKeyPrefix(prefix)}
	holders := redissem.NewKeyed(admin, "kk", 1, opts...)
	defer holders.Close()
	waiters := redissem.NewKeyed(c, "kk", 1, opts...)
	defer waiters.Close()

	const n = 40
	var held []*core.Permit
	for i := range n {
		p, err := holders.TryAcquire(ctx, "key"+strconv.Itoa(i))
		ok(t, err)
		held = append(held, p)
	}
	got := make(chan error, n)
	for i := range n {
		go func() {
			p, err := waiters.Acquire(ctx, "key"+strconv.Itoa(i))
			if err == nil {
				err = p.Release(ctx)
			}
			got <- err
		}()
	}
	deadline, _ := ctx.Deadline()
	for i := range n {
		testwait.Until(t, time.Until(deadline), fmt.Sprintf("key%d: waiter not queued", i), func() bool {
			st, err := waiters.Stats(ctx, "key"+strconv.Itoa(i))
			ok(t, err)
			return st.Waiting == 1
		})
	}

	conns, channels, masters := shardSubs(ctx, t, admin, client)
	if conns > masters || channels != n {
		t.Errorf("%d subscription connections with %d shard channels on %d masters, want at most one per master and %d channels", conns, channels, masters, n)
	}
	t.Logf("%d keyed waiters: %d subscription connections, %d shard channels", n, conns, channels)

	for _, p := range held {
		ok(t, p.Release(ctx))
	}
	for range n {
		select {
		case err := <-got:
			ok(t, err)
		case <-ctx.Done():
			t.Fatal("a keyed waiter was not served")
		}
	}
}

// shardSubs counts, over the masters of a Cluster, the pub/sub connections
// of the client named client and their shard channels.
func shardSubs(ctx context.Context, t *testing.T, admin *redis.ClusterClient, client string) (conns, channels, masters int) {
	t.Helper()
	var mu sync.Mutex // ForEachMaster runs on every master at once
	ok(t, admin.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		list, err := m.Do(ctx, "CLIENT", "LIST", "TYPE", "pubsub").Text()
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		masters++
		for _, line := range strings.Split(list, "\n") {
			if !strings.Contains(line, " name="+client+" ") {
				continue
			}
			conns++
			for _, f := range strings.Fields(line) {
				if v, found := strings.CutPrefix(f, "ssub="); found {
					k, _ := strconv.Atoi(v)
					channels += k
				}
			}
		}
		return nil
	}))
	return conns, channels, masters
}

// TestClusterIdleShardChannelsDropped: a process that stops using keyed
// semaphores drops their shard channels (SUNSUBSCRIBE) within about two
// lease TTLs, although it subscribes nothing new; they used to stay until
// another semaphore was subscribed. A key used again is subscribed again
// and its waiter served.
func TestClusterIdleShardChannelsDropped(t *testing.T) {
	prefix := uniquePrefix(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, admin, client := clusterClients(t, "idle")
	const ttl = time.Second
	opts := []redissem.Option{redissem.WithKeyPrefix(prefix), redissem.WithDefaultLeaseTTL(ttl)}
	sems := redissem.NewKeyed(c, "idle", 1, opts...)
	defer sems.Close()
	holders := redissem.NewKeyed(admin, "idle", 1, opts...)
	defer holders.Close()

	const n = 10
	start := time.Now()
	for i := range n {
		p, err := sems.Acquire(ctx, "key"+strconv.Itoa(i)) // subscribes its channel first
		ok(t, err)
		ok(t, p.Release(ctx))
	}
	if _, channels, _ := shardSubs(ctx, t, admin, client); channels != n {
		t.Fatalf("%d shard channels after %d keys were used, want %d", channels, n, n)
	}
	awaitNoShardChannels(ctx, t, admin, client, fmt.Sprintf("shard channels still subscribed after their keys were last used (lease TTL %v)", ttl))
	t.Logf("idle shard channels dropped %v after the first of %d keys was used (lease TTL %v)", time.Since(start), n, ttl)

	h, err := holders.TryAcquire(ctx, "key0")
	ok(t, err)
	got := make(chan error, 1)
	go func() {
		p, err := sems.Acquire(ctx, "key0")
		if err == nil {
			err = p.Release(ctx)
		}
		got <- err
	}()
	deadline, _ := ctx.Deadline()
	testwait.Until(t, time.Until(deadline), "the waiter on key0 was not queued", func() bool {
		st, err := sems.Stats(ctx, "key0")
		ok(t, err)
		return st.Waiting == 1
	})
	ok(t, h.Release(ctx))
	select {
	case err := <-got:
		ok(t, err)
	case <-ctx.Done():
		t.Fatal("the waiter on a key used again was not served")
	}
}

// TestClusterResubscribeRacingSweep: a resubscribe reads the shard
// channels in use, a sweep then drops one of them as idle (on the old
// subscription), and the new subscription, which subscribes what it read,
// replaces the old one. The channel it holds must stay tracked, so that the
// next sweep drops it: it used to stay subscribed, untracked, until Close.
func TestClusterResubscribeRacingSweep(t *testing.T) {
	prefix := uniquePrefix(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, admin, client := clusterClients(t, "resweep")
	s := redissem.New(c, "resweep", 1, redissem.WithKeyPrefix(prefix))
	defer s.Close()

	ok(t, redissem.ListenShard(ctx, s))
	if sub, tracked := redissem.ShardChannels(s); len(sub) != 1 || !slices.Equal(sub, tracked) {
		t.Fatalf("after the first wait's subscription: subscribed %v, tracked %v, want one, the same", sub, tracked)
	}
	later := time.Now().Add(time.Hour) // every channel idle
	redissem.ResubscribeDuring(s, func() { redissem.SweepShardsAt(s, later) })
	sub, tracked := redissem.ShardChannels(s)
	for _, ch := range sub {
		if !slices.Contains(tracked, ch) {
			t.Fatalf("after a resubscribe raced a sweep: %s subscribed but not tracked (subscribed %v, tracked %v)", ch, sub, tracked)
		}
	}
	redissem.SweepShardsAt(s, later)
	if sub, tracked := redissem.ShardChannels(s); len(sub)+len(tracked) != 0 {
		t.Fatalf("after the next sweep: subscribed %v, tracked %v, want none", sub, tracked)
	}
	awaitNoShardChannels(ctx, t, admin, client, "shard channels still subscribed on the servers after the sweep")
}

// listeningKeyed returns a keyed semaphore named name on Cluster, and its
// key "a", whose shard channel is subscribed (as by a's first wait), with a
// ctx of a minute; all end with the test.
func listeningKeyed(t *testing.T, name string) (context.Context, *core.Keyed, *redissem.Semaphore) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	c, _, _ := clusterClients(t, name)
	k := redissem.NewKeyedRecorded(c, name, 1, redissem.WithKeyPrefix(uniquePrefix(t)))
	t.Cleanup(func() { _ = k.Close() })
	a := redissem.KeyedRedis(k, "a")
	ok(t, redissem.ListenShard(ctx, a))
	return ctx, k, a
}

// TestClusterResubscribeRacingFirstWait: a resubscribe reads the shard
// channels in use, a semaphore's first wait then subscribes its channel on
// the old subscription, and the new subscription replaces the old one. The
// new one must subscribe that channel too: it used to lack it, so a grant
// to that waiter found nobody listening and skipped it, until the waiter's
// heartbeat (a third of the lease) queued it again.
func TestClusterResubscribeRacingFirstWait(t *testing.T) {
	ctx, k, a := listeningKeyed(t, "refirst")
	b := redissem.KeyedRedis(k, "b")
	var during error
	redissem.ResubscribeDuring(a, func() { during = redissem.ListenShard(ctx, b) })
	ok(t, during)
	sub, tracked := redissem.ShardChannels(a)
	if len(tracked) != 2 || !slices.Equal(sub, tracked) {
		t.Fatalf("after a first wait raced a resubscribe: subscribed %v, tracked %v, want both channels in both", sub, tracked)
	}
}

// TestClusterConcurrentAddsOfOneChannel: two calls that subscribe the same
// shard channel at once on a master's connection (a first wait, and a new
// subscription catching up) both end at its confirmation. The second used
// to take the first's place in the wait, which then lasted until its ctx
// ended.
func TestClusterConcurrentAddsOfOneChannel(t *testing.T) {
	ctx, k, a := listeningKeyed(t, "twoadds")
	var b *redissem.Semaphore
	for i := 0; b == nil; i++ {
		if i == 1000 {
			t.Fatal("no key of 1000 has its channel on the master of a's")
		}
		if s := redissem.KeyedRedis(k, "b"+strconv.Itoa(i)); redissem.SameMaster(ctx, a, s) {
			b = s
		}
	}
	actx, acancel := context.WithTimeout(ctx, 5*time.Second)
	defer acancel()
	for i, err := range redissem.AddShardConcurrently(actx, b, 2) {
		if err != nil {
			t.Fatalf("add %d of the same channel: %v", i, err)
		}
	}
	if sub, tracked := redissem.ShardChannels(a); len(sub) != 2 || !slices.Equal(sub, tracked) {
		t.Fatalf("subscribed %v, tracked %v, want both channels in both", sub, tracked)
	}
}
