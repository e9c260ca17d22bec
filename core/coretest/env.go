// Package coretest holds helpers for tests of distsem and of code built on it.
//
// It finds the real servers that tests run against.
//
// .ci/run starts redis-server and PostgreSQL on loopback and exports
// DISTSEM_REDIS_ADDR (host:port) and DISTSEM_POSTGRES_DSN. A test that needs
// one of them calls RedisAddr or PostgresDSN: when the variable is unset the
// test is skipped on a developer machine, but fails when CI is set, so CI can
// never pass by skipping.
package coretest

import (
	"os"
	"strings"
	"testing"
)

// RedisAddr returns the address of a real redis-server, or skips (fails
// under CI) when DISTSEM_REDIS_ADDR is unset.
func RedisAddr(tb testing.TB) string { return need(tb, "DISTSEM_REDIS_ADDR") }

// PostgresDSN returns the DSN of a real PostgreSQL, or skips (fails under
// CI) when DISTSEM_POSTGRES_DSN is unset.
func PostgresDSN(tb testing.TB) string { return need(tb, "DISTSEM_POSTGRES_DSN") }

func need(tb testing.TB, name string) string {
	tb.Helper()
	v := os.Getenv(name)
	if v != "" {
		return v
	}
	if os.Getenv("CI") != "" {
		tb.Fatalf("%s is not set: CI must start the server (see .ci/run)", name)
	}
	tb.Skipf("%s is not set; run .ci/run or start the server and export it", name)
	return ""
}

// RedisClusterAddrs returns the seed addresses of a real Redis Cluster from
// DISTSEM_REDIS_CLUSTER_ADDRS (comma-separated), or skips (fails under CI).
func RedisClusterAddrs(tb testing.TB) []string {
	return strings.Split(need(tb, "DISTSEM_REDIS_CLUSTER_ADDRS"), ",")
}

// RedisSentinel returns the sentinel addresses and master name of a real
// Sentinel setup from DISTSEM_REDIS_SENTINEL_ADDRS (comma-separated) and
// DISTSEM_REDIS_SENTINEL_MASTER, or skips (fails under CI).
func RedisSentinel(tb testing.TB) (addrs []string, master string) {
	return strings.Split(need(tb, "DISTSEM_REDIS_SENTINEL_ADDRS"), ","), need(tb, "DISTSEM_REDIS_SENTINEL_MASTER")
}
