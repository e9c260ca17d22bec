package redissem_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/internal/servertest"
)

// TestACLEachRightNeeded removes each right of the minimum ACL in turn.
// Every right is needed: the first Acquire fails with ErrUnavailable naming
// it, before any write, and no call hangs. Checking the rights first
// matters: a script that failed half-way (HDEL, ZREM, ZREMRANGEBYSCORE,
// PUBLISH denied after its first write) would leave its writes behind, so
// that Release reported a failure although the permit was handed on, or a
// waiting Acquire hung until its ctx ended.
func TestACLEachRightNeeded(t *testing.T) {
	admin := realClient(t)
	for _, right := range strings.Fields(aclCommands) {
		cmd := strings.TrimPrefix(right, "+")
		t.Run(cmd, func(t *testing.T) {
			prefix := uniquePrefix(t)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			user := "distsem-acl-no-" + cmd
			args := []any{"ACL", "SETUSER", user, "reset", "on", ">pw", "resetkeys", "~" + prefix + "*",
				"resetchannels", "&" + prefix + "notify:*", "-@all"}
			for _, c := range strings.Fields(aclCommands) {
				if c != right {
					args = append(args, c)
				}
			}
			ok(t, admin.Do(ctx, args...).Err())
			t.Cleanup(func() { _ = admin.Do(context.Background(), "ACL", "DELUSER", user).Err() })
			// Scripts not cached: a user without EVAL must meet it.
			ok(t, admin.ScriptFlush(ctx).Err())
			c := redis.NewClient(&redis.Options{Addr: servertest.RedisAddr(t), Username: user, Password: "pw"})
			defer c.Close()
			// TryAcquire after a failed subscribe runs no script to fail.
			wantRightNamed(t, ctx, c, prefix, cmd, cmd != "subscribe")
		})
	}
}

// wantRightNamed checks that a user of c who lacks the right cmd sees the
// first Acquire fail with ErrUnavailable naming cmd, and, if again, a
// TryAcquire of another semaphore value after it (the check was not cached
// as passed).
func wantRightNamed(t *testing.T, ctx context.Context, c redis.UniversalClient, prefix, cmd string, again bool) {
	t.Helper()
	opts := []redissem.Option{redissem.WithKeyPrefix(prefix), redissem.WithDefaultLeaseTTL(time.Second)}
	s1 := redissem.New(c, "acl", 1, opts...)
	defer s1.Close()
	s2 := redissem.New(c, "acl", 1, opts...)
	defer s2.Close()
	named := func(err error) {
		t.Helper()
		if !errors.Is(err, core.ErrUnavailable) || !strings.Contains(strings.ToLower(err.Error()), cmd) {
			t.Fatalf("error %v, want ErrUnavailable naming %q", err, cmd)
		}
	}
	_, err := s1.Acquire(ctx)
	named(err)
	if again {
		_, err = s2.TryAcquire(ctx)
		named(err)
	}
}
