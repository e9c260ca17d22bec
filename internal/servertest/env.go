// Package servertest holds helpers for distsem's own tests, in this module
// and in its nested modules. It finds, or starts, the real servers that
// tests run against. It is test machinery, not part of the library's API;
// the conformance suite for backends is the public package core/semtest.
//
// A test that needs a server calls RedisAddr, RedisClusterAddrs,
// RedisSentinel or PostgresDSN. Each first reads its environment variable
// (DISTSEM_REDIS_ADDR, DISTSEM_REDIS_CLUSTER_ADDRS,
// DISTSEM_REDIS_SENTINEL_ADDRS with DISTSEM_REDIS_SENTINEL_MASTER,
// DISTSEM_POSTGRES_DSN), for servers started outside the tests, as .ci/run
// does. When the variable is unset and the server's binaries are installed
// (redis-server, redis-sentinel; postgres and initdb on PATH or in
// /usr/lib/postgresql/*/bin), the first test that asks starts one for the
// whole test binary on free 127.0.0.1 ports, and sets the variable so that
// child processes the test starts use the same server. When the binaries
// are missing the test is skipped, or fails when CI is set, so CI can never
// pass by skipping. A server that is installed but does not start fails
// the test.
//
// The servers die with the test binary, however it exits: Redis gets
// SIGKILL from the kernel when its parent dies, and PostgreSQL is stopped
// (and its scratch directory removed) by a small shell process that waits
// for the test binary's end. A TestMain may also stop them itself, with
// StopServers or Exit. Starting servers needs Linux; elsewhere only the
// variables work.
//
// StartRedis starts a private redis-server for a test that kills or
// restarts it on purpose.
//
// DISTSEM_TEST_PORTS=lo-hi makes every server servertest starts listen on a
// port in that range (both ends included), for machines where several test
// runs must keep apart; unset, any free port serves.
package servertest

import (
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
)

const (
	envRedis          = "DISTSEM_REDIS_ADDR"
	envCluster        = "DISTSEM_REDIS_CLUSTER_ADDRS"
	envSentinelAddrs  = "DISTSEM_REDIS_SENTINEL_ADDRS"
	envSentinelMaster = "DISTSEM_REDIS_SENTINEL_MASTER"
	envPostgres       = "DISTSEM_POSTGRES_DSN"
)

var errUnsupportedOS = errors.New("starting servers from tests needs Linux")

// RedisAddr returns the host:port of a real redis-server: DISTSEM_REDIS_ADDR,
// else one started for this test binary (see the package documentation).
func RedisAddr(tb testing.TB) string {
	tb.Helper()
	return need(tb, envRedis, &sharedRedis)
}

// PostgresDSN returns the DSN of a real PostgreSQL: DISTSEM_POSTGRES_DSN,
// else one started for this test binary (see the package documentation).
func PostgresDSN(tb testing.TB) string {
	tb.Helper()
	return need(tb, envPostgres, &sharedPostgres)
}

// RedisClusterAddrs returns the seed addresses of a real Redis Cluster:
// DISTSEM_REDIS_CLUSTER_ADDRS (comma-separated), else a cluster of three
// masters started for this test binary.
func RedisClusterAddrs(tb testing.TB) []string {
	tb.Helper()
	return strings.Split(need(tb, envCluster, &sharedCluster), ",")
}

// RedisSentinel returns the sentinel addresses and master name of a real
// Sentinel setup: DISTSEM_REDIS_SENTINEL_ADDRS (comma-separated) and
// DISTSEM_REDIS_SENTINEL_MASTER, else a master, a replica and three
// sentinels started for this test binary.
func RedisSentinel(tb testing.TB) (addrs []string, master string) {
	tb.Helper()
	if os.Getenv(envSentinelAddrs) != "" && os.Getenv(envSentinelMaster) == "" {
		tb.Fatalf("%s is set but %s is not", envSentinelAddrs, envSentinelMaster)
	}
	addrs = strings.Split(need(tb, envSentinelAddrs, &sharedSentinel), ",")
	return addrs, os.Getenv(envSentinelMaster)
}

// StopServers stops every server that this test binary started for
// RedisAddr, RedisClusterAddrs, RedisSentinel and PostgresDSN, and waits
// for them to exit. A TestMain may call it after m.Run; the servers die
// with the process anyway. Later calls to those functions fail the test.
func StopServers() {
	for _, l := range []*lazy{&sharedRedis, &sharedCluster, &sharedSentinel, &sharedPostgres} {
		l.mu.Lock()
		if l.stop != nil {
			l.stop()
			l.stop = nil
		}
		l.stopped = true
		l.mu.Unlock()
	}
}

// Exit stops the servers (StopServers) and exits with code. It fits
// goleak's hook, which runs after the leak check:
//
//	goleak.VerifyTestMain(m, goleak.Cleanup(servertest.Exit))
func Exit(code int) {
	StopServers()
	os.Exit(code)
}

// lazy is one server shared by the tests of a test binary, started on the
// first request.
type lazy struct {
	mu      sync.Mutex
	done    bool
	err     error
	stop    func()
	stopped bool
	// start starts the server, sets its environment variables, and returns
	// how to stop it.
	start func() (stop func(), err error)
}

var (
	sharedRedis = lazy{start: func() (func(), error) {
		r, err := startRedisProc(false)
		if err != nil {
			return nil, err
		}
		os.Setenv(envRedis, r.addr())
		return r.stop, nil
	}}
	sharedPostgres = lazy{start: func() (func(), error) {
		g, err := startPostgres()
		if err != nil {
			return nil, err
		}
		os.Setenv(envPostgres, g.dsn())
		return g.stop, nil
	}}
	sharedCluster  = lazy{start: startSharedCluster}
	sharedSentinel = lazy{start: startSharedSentinel}
)

func need(tb testing.TB, name string, l *lazy) string {
	tb.Helper()
	if v := os.Getenv(name); v != "" {
		return v
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		tb.Fatalf("servertest: %s is not set and StopServers was called", name)
	}
	if !l.done {
		l.done = true
		l.stop, l.err = l.start()
	}
	if l.err != nil {
		unavailable(tb, name, l.err)
	}
	return os.Getenv(name)
}

// unavailable skips tb, or fails it when CI is set or when the server is
// installed but did not start.
func unavailable(tb testing.TB, what string, err error) {
	tb.Helper()
	if !errors.Is(err, errNotInstalled) {
		tb.Fatalf("servertest: %s: could not start a server: %v", what, err)
	}
	if os.Getenv("CI") != "" {
		tb.Fatalf("servertest: %s: %v, and CI is set: install it or give the server's address (see .ci/run)", what, err)
	}
	tb.Skipf("servertest: %s: %v; install it or give the server's address (see .ci/run)", what, err)
}
