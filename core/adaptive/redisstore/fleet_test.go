package redisstore_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core/adaptive"
	"github.com/distsem/distsem/core/adaptive/redisstore"
	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/internal/adaptivetest"
	"github.com/distsem/distsem/internal/servertest"
)

// A fleet of processes, each with its own client, semaphore and Limiter,
// on a real Redis in both of the semaphore's modes, standalone and
// Cluster: each window is computed by one process, the controller moves
// the stored limit, every process's semaphore sees the limit of the last
// decision, and when the process that computes stops, another one
// computes the next windows from the stored state (adaptivetest.Fleet).
func TestFleetOnRedisElectsOneProcessPerWindow(t *testing.T) {
	standalone := func(t *testing.T) redis.UniversalClient {
		c := redis.NewClient(&redis.Options{Addr: servertest.RedisAddr(t)})
		t.Cleanup(func() { c.Close() })
		return c
	}
	cluster := func(t *testing.T) redis.UniversalClient {
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: servertest.RedisClusterAddrs(t)})
		t.Cleanup(func() { c.Close() })
		return c
	}
	for server, newClient := range map[string]func(*testing.T) redis.UniversalClient{"standalone": standalone, "cluster": cluster} {
		for mode, newSem := range map[string]func(c redis.UniversalClient, name string) adaptivetest.Sem{
			"default": func(c redis.UniversalClient, name string) adaptivetest.Sem { return redissem.New(c, name, 8) },
			"leased":  func(c redis.UniversalClient, name string) adaptivetest.Sem { return redissem.NewLeased(c, name, 8) },
		} {
			t.Run(server+"/"+mode, func(t *testing.T) {
				name := uniqueName(t)
				adaptivetest.Fleet(t, 50*time.Millisecond, func() (adaptivetest.Sem, adaptive.Store) {
					c := newClient(t)
					return newSem(c, name), redisstore.New(c, name)
				})
			})
		}
	}
}
