package faulttest

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/internal/servertest"
)

// server is a redis-server for a scenario, found or started by servertest
// (see its package documentation): a private one (newServer) that the
// scenario may stop, stall or restart, or the test binary's shared one.
type server struct {
	shared string                  // the shared server's address
	own    *servertest.RedisServer // nil for the shared server
}

// newServer starts a redis-server of its own for tb, stopped when tb ends.
// Without redis-server on PATH the test is skipped, or fails when CI is set.
func newServer(tb testing.TB) *server {
	tb.Helper()
	return &server{own: servertest.StartRedis(tb)}
}

// sharedServer returns the redis-server for the scenarios that do not stop
// or stall it (DISTSEM_REDIS_ADDR, else one started for the test binary);
// each scenario uses its own key prefix. TestMain stops it.
func sharedServer(tb testing.TB) *server {
	tb.Helper()
	return &server{shared: servertest.RedisAddr(tb)}
}

func (s *server) addr() string {
	if s.own == nil {
		return s.shared
	}
	return s.own.Addr()
}

// restart kills the server and starts it again, empty, on the same port.
func (s *server) restart(tb testing.TB) {
	tb.Helper()
	if s.own == nil {
		tb.Fatal("restart of the shared redis-server")
	}
	s.own.Restart()
}

// newClient returns a go-redis client with default options, as a new user
// would make it (opts may change it), closed when tb ends.
func newClient(tb testing.TB, addr string, opts ...func(*redis.Options)) *redis.Client {
	o := &redis.Options{Addr: addr}
	for _, f := range opts {
		f(o)
	}
	c := redis.NewClient(o)
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// prefix returns a key prefix of its own for tb.
func prefix(tb testing.TB) string {
	name := strings.NewReplacer("/", ".", " ", "_", "{", "", "}", "").Replace(tb.Name())
	return fmt.Sprintf("ft:%s:%x:", name, rand.Uint64()&0xffffff)
}
