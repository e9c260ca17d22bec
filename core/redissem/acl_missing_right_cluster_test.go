package redissem_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/internal/servertest"
)

// TestACLEachClusterRightNeeded removes each sharded pub/sub right of the
// Cluster's minimum ACL in turn (the shard channels that tell a grant
// whether its waiter's process is still there): the first
// Acquire fails with ErrUnavailable naming it, and so does a TryAcquire
// (the rights check runs before the first script).
func TestACLEachClusterRightNeeded(t *testing.T) {
	addrs := servertest.RedisClusterAddrs(t)
	admin := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	t.Cleanup(func() { _ = admin.Close() })
	all := strings.Fields(aclCommands + " " + aclClusterCommands)
	for _, right := range []string{"+spublish", "+pubsub|shardnumsub", "+ssubscribe", "+sunsubscribe"} {
		cmd := strings.TrimPrefix(right, "+")
		t.Run(cmd, func(t *testing.T) {
			prefix := uniquePrefix(t)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			user := "distsem-acl-cluster-no-" + strings.ReplaceAll(cmd, "|", "-")
			args := []any{"ACL", "SETUSER", user, "reset", "on", ">pw", "resetkeys", "~" + prefix + "*",
				"resetchannels", "&" + prefix + "notify:*", "-@all"}
			for _, c := range all {
				if c != right {
					args = append(args, c)
				}
			}
			each := func(args ...any) error {
				return admin.ForEachShard(ctx, func(ctx context.Context, n *redis.Client) error { return n.Do(ctx, args...).Err() })
			}
			ok(t, each(args...))
			t.Cleanup(func() { _ = each("ACL", "DELUSER", user) })
			c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, Username: user, Password: "pw"})
			defer c.Close()
			wantRightNamed(t, ctx, c, prefix, cmd, true)
		})
	}
}
