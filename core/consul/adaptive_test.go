package consul_test

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/adaptive"
	"github.com/distsem/distsem/core/adaptive/redisstore"
	"github.com/distsem/distsem/core/consul"
	"github.com/distsem/distsem/internal/adaptivetest"
	"github.com/distsem/distsem/internal/servertest"
)

// The adaptive limit on a Consul semaphore, its windows in Redis: three
// processes, each with its own Consul client, semaphore, Redis client and
// Limiter. The controller moves the limit stored in Consul, one process
// computes each window (another once it stops), and every process's
// semaphore sees the limit of the last decision (adaptivetest.Fleet).
func TestAdaptiveLimitMovesTheConsulLimitEveryProcessSees(t *testing.T) {
	prefix := uniquePrefix()
	name := strings.TrimSuffix(prefix, "/") // unique in Redis too
	adaptivetest.Fleet(t, 100*time.Millisecond, func() (adaptivetest.Sem, adaptive.Store) {
		rc := redis.NewClient(&redis.Options{Addr: servertest.RedisAddr(t)})
		t.Cleanup(func() { rc.Close() })
		return consul.New(newClient(t), name, 8, core.WithKeyPrefix(prefix)), redisstore.New(rc, name)
	})
}
