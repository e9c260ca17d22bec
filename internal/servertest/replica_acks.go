package servertest

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/internal/testwait"
)

// AwaitReplicaAck returns once a replica of master acknowledges (WAIT 1)
// two writes of key in a row, each within 100ms; it fails tb after
// timeout. key must be served by master (on Cluster, a key of its slots).
//
// One acknowledged write is not enough: a write that the replica's initial
// sync carried counts as acknowledged as soon as the replica is online,
// while the master may hold back the stream of later writes until the
// replica's first ACK, which its once-a-second timer sends. A test that
// makes the next write with a short WithReplicaAck timeout would then fail
// now and then.
func AwaitReplicaAck(tb testing.TB, master redis.Cmdable, key string, timeout time.Duration) {
	tb.Helper()
	acked := 0
	testwait.Until(tb, timeout, "a replica did not acknowledge two writes in a row", func() bool {
		ctx := context.Background()
		p := master.Pipeline()
		p.Incr(ctx, key)
		w := p.Do(ctx, "wait", 1, 100)
		_, err := p.Exec(ctx)
		if n, _ := w.Int(); err == nil && n == 1 {
			acked++
		} else {
			acked = 0
		}
		return acked == 2
	})
}

// SlotMaster returns the index in masters of the node that serves key's
// slot: the one that answers a command on key without a redirect. It fails
// tb after timeout. A ClusterClient's MasterForKey is no substitute right
// after the cluster formed: for a slot missing from the slot map it has
// loaded (a node that had not yet heard of every master's slots), it names
// a random node.
func SlotMaster(tb testing.TB, masters []string, key string, timeout time.Duration) int {
	tb.Helper()
	clients := make([]*redis.Client, len(masters))
	for i, a := range masters {
		clients[i] = redis.NewClient(&redis.Options{Addr: a, MaxRetries: -1})
		defer clients[i].Close()
	}
	own := -1
	testwait.Until(tb, timeout, "no master served the key's slot", func() bool {
		for i, c := range clients {
			if c.Exists(context.Background(), key).Err() == nil {
				own = i
				return true
			}
		}
		return false
	})
	return own
}
