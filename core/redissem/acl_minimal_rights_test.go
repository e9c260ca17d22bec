package redissem_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/internal/servertest"
)

// aclCommands is the minimum set of Redis commands the library needs: the
// commands its Lua scripts call, plus EVALSHA and EVAL to run them and
// SUBSCRIBE for grant notifications. A Redis Cluster client also needs
// aclClusterCommands. Keys match "<prefix>*" and channels "<prefix>notify:*".
// Keep it in step with docs/OPERATIONS.md (TestACLDocumented); TestACLCommandsCoverScripts
// fails when a script calls a command not listed here.
const aclCommands = "+evalsha +eval +subscribe +time +hmget +hset +hget +hgetall +hdel +exists +get +set +del +pexpireat +persist +zadd +zpopmin +zcard +zrange +zrangebyscore +zremrangebyscore +zrem +zscore +publish +pubsub|numsub"

// aclClusterCommands are the further rights of a Cluster client: the slot
// map, and sharded pub/sub (each semaphore's shard channel, through which
// a grant sees whether its waiter's process is still there).
const aclClusterCommands = "+cluster|slots +spublish +pubsub|shardnumsub +ssubscribe +sunsubscribe"

// TestACLCommandsCoverScripts derives the command list from the scripts.
func TestACLCommandsCoverScripts(t *testing.T) {
	files, err := filepath.Glob("lua/*.lua")
	ok(t, err)
	if len(files) == 0 {
		t.Fatal("no scripts found")
	}
	// A command is the first argument of redis.call, or one of its choices:
	// redis.call(shard and 'SPUBLISH' or 'PUBLISH', ...) (lua/inline.lua).
	call := regexp.MustCompile(`redis\.call\(([^,]*),`)
	name := regexp.MustCompile(`'([A-Za-z]+)'`)
	used := map[string]bool{"evalsha": true, "eval": true, "subscribe": true, "ssubscribe": true, "sunsubscribe": true}
	for _, f := range files {
		src, err := os.ReadFile(f)
		ok(t, err)
		for _, m := range call.FindAllStringSubmatch(string(src), -1) {
			for _, c := range name.FindAllStringSubmatch(m[1], -1) {
				used[strings.ToLower(c[1])] = true
			}
		}
	}
	var listed []string // commands, without their subcommand
	for _, c := range strings.Fields(aclCommands + strings.TrimPrefix(aclClusterCommands, "+cluster|slots")) {
		c, _, _ = strings.Cut(strings.TrimPrefix(c, "+"), "|")
		listed = append(listed, c)
	}
	for c := range used {
		if !slices.Contains(listed, c) {
			t.Errorf("the scripts call %s, which aclCommands (and docs/OPERATIONS.md) lack", c)
		}
	}
	for _, c := range listed {
		if !used[c] {
			t.Errorf("aclCommands lists %s, which nothing uses: remove it here and in docs/OPERATIONS.md", c)
		}
	}
}

// aclClient returns a client logged in as a new Redis user that has only
// the rights of aclCommands on keys "<prefix>*" and channels
// "<prefix>notify:*". The user is deleted at cleanup.
func aclClient(t *testing.T, prefix string) *redis.Client {
	t.Helper()
	admin := realClient(t)
	ctx := context.Background()
	user := "distsem-acl-" + strings.Trim(prefix, ":")
	args := []any{"ACL", "SETUSER", user, "reset", "on", ">pw", "resetkeys", "~" + prefix + "*",
		"resetchannels", "&" + prefix + "notify:*", "-@all"}
	for _, c := range strings.Fields(aclCommands) {
		args = append(args, c)
	}
	ok(t, admin.Do(ctx, args...).Err())
	t.Cleanup(func() { _ = admin.Do(context.Background(), "ACL", "DELUSER", user).Err() })
	c := redis.NewClient(&redis.Options{Addr: servertest.RedisAddr(t), Username: user, Password: "pw"})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestACLMinimal runs every script (acquire, queue, hand-off across
// processes by pub/sub, renewal, release, set limit, stats, keyed) as a
// Redis user with only the rights of aclCommands, and checks that a key
// outside the user's pattern is refused, so the rights are really enforced.
func TestACLMinimal(t *testing.T) {
	prefix := uniquePrefix(t)
	c := aclClient(t, prefix)
	// A missing right must fail the test, not hang it.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var mu sync.Mutex
	var errs []error
	onErr := redissem.WithOnError(func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() })
	opts := []redissem.Option{redissem.WithKeyPrefix(prefix), redissem.WithDefaultLeaseTTL(300 * time.Millisecond), onErr}
	// Scripts not cached on the server: the first run of each falls back
	// from EVALSHA to EVAL (as after a restart or a failover).
	admin := realClient(t)
	ok(t, admin.ScriptFlush(ctx).Err())
	// Two backends on one semaphore: like two processes, so a grant goes
	// by PUBLISH to the other one's channel.
	s1 := redissem.New(c, "acl", 1, opts...)
	defer s1.Close()
	s2 := redissem.New(c, "acl", 1, opts...)
	defer s2.Close()

	p1, err := s1.Acquire(ctx)
	ok(t, err)
	got := make(chan *core.Permit, 1)
	go func() {
		p, err := s2.Acquire(ctx)
		if err != nil {
			t.Error(err)
		}
		got <- p
	}()
	waitQueued(t, s1, 1)
	// Wait (observing Redis, as the admin) until the renewal loop has
	// renewed p1's lease: the heartbeat script ran under the ACL.
	hkey := prefix + "{acl}:h"
	first, err := admin.ZRangeWithScores(ctx, hkey, 0, 0).Result()
	ok(t, err)
	if len(first) != 1 {
		t.Fatalf("holders = %v, want one", first)
	}
	for {
		now, err := admin.ZRangeWithScores(ctx, hkey, 0, 0).Result()
		ok(t, err)
		if len(now) == 1 && now[0].Score > first[0].Score {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the lease was never renewed")
		}
	}
	ok(t, p1.Release(ctx))
	p2 := <-got
	if p2 == nil {
		t.FailNow()
	}
	ok(t, s2.SetLimit(ctx, 2))
	p3, err := s1.TryAcquire(ctx)
	ok(t, err)
	if st, err := s1.Stats(ctx); err != nil || st.InUse != 2 || st.Limit != 2 {
		t.Fatalf("stats = %+v, %v", st, err)
	}
	ok(t, p2.Release(ctx))
	ok(t, p3.Release(ctx))

	k := redissem.NewKeyed(c, "aclk", 1, opts...)
	defer k.Close()
	kp, err := k.Acquire(ctx, "GET /x")
	ok(t, err)
	ok(t, kp.Release(ctx))

	// A holder that stops renewing (its backend closed) is reaped.
	s3 := redissem.New(c, "acl", 2, opts...)
	_, err = s3.Acquire(ctx)
	ok(t, err)
	ok(t, s3.Close())
	for stats(t, s1).InUse != 0 {
		if ctx.Err() != nil {
			t.Fatal("the expired lease was never reaped")
		}
	}

	mu.Lock()
	if len(errs) > 0 {
		t.Fatalf("backend errors under the minimal ACL: %v", errors.Join(errs...))
	}
	mu.Unlock()

	// Outside the key pattern: refused, so the rights above were enforced.
	other := redissem.New(c, "acl", 1, redissem.WithKeyPrefix("not-"+prefix))
	defer other.Close()
	if _, err := other.TryAcquire(ctx); !errors.Is(err, core.ErrUnavailable) || !strings.Contains(fmt.Sprint(err), "NOPERM") {
		t.Fatalf("TryAcquire outside the key pattern: %v, want ErrUnavailable (NOPERM)", err)
	}
}

// TestACLMinimalCluster runs a Cluster client as a user with the rights of
// aclCommands plus aclClusterCommands, set on every node.
func TestACLMinimalCluster(t *testing.T) {
	addrs := servertest.RedisClusterAddrs(t)
	prefix := uniquePrefix(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	t.Cleanup(func() { _ = admin.Close() })
	user := "distsem-acl-" + strings.Trim(prefix, ":")
	args := []any{"ACL", "SETUSER", user, "reset", "on", ">pw", "resetkeys", "~" + prefix + "*",
		"resetchannels", "&" + prefix + "notify:*", "-@all"}
	for _, c := range strings.Fields(aclCommands + " " + aclClusterCommands) {
		args = append(args, c)
	}
	each := func(args ...any) error {
		return admin.ForEachShard(ctx, func(ctx context.Context, n *redis.Client) error { return n.Do(ctx, args...).Err() })
	}
	ok(t, each(args...))
	t.Cleanup(func() { _ = each("ACL", "DELUSER", user) })
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, Username: user, Password: "pw"})
	t.Cleanup(func() { _ = c.Close() })

	opts := []redissem.Option{redissem.WithKeyPrefix(prefix)}
	for _, name := range []string{"a", "b", "c", "d"} { // several slots
		s1 := redissem.New(c, name, 1, opts...)
		s2 := redissem.New(c, name, 1, opts...)
		p1, err := s1.Acquire(ctx)
		ok(t, err)
		got := make(chan error, 1)
		go func() {
			p, err := s2.Acquire(ctx)
			if err == nil {
				err = p.Release(ctx)
			}
			got <- err
		}()
		waitQueued(t, s1, 1)
		ok(t, p1.Release(ctx)) // hands over to s2 by PUBLISH
		ok(t, <-got)
		ok(t, s1.Close())
		ok(t, s2.Close())
	}
}
