// Package faulttest is distsem's fault suite: its tests run the Redis
// backend of core against real redis-server processes, found or started
// through internal/servertest (the scenarios that kill, stall or restart Redis
// always start their own, from the redis-server on PATH), and inject faults
// with an in-process TCP proxy (core/internal/faultproxy), SIGKILL, DEBUG
// SLEEP and server restarts.
//
// Unlike the fault tests inside core/redissem, which each check one
// behaviour under one fault and may use that package's test hooks, these
// are whole scenarios through redissem's exported API: processes or
// semaphores under load through a fault, logged as figures.
//
// Every scenario asserts an invariant of core (no permit lost, no more
// holders than the limit, every call bounded by its ctx, nothing leaked) and
// logs what it measured twice: in words, and as one machine-readable line
//
//	FIGURE {"scenario":"...","key":value,...}
//
// which is also appended to the file named by DISTSEM_FAULT_FIGURES, if set.
// Durations are given in milliseconds, in keys ending in "_ms". Timings are
// logged, never asserted, except for generous bounds on "returns by its
// deadline".
//
// Run the suite (about two minutes):
//
//	go test -race -count=1 -v ./core/faulttest/
//
// Without redis-server on PATH the suite is skipped, unless CI is set: then
// it fails. DISTSEM_FAULTTEST_PORTS=lo-hi makes the servers pick their ports
// in that range (servertest's DISTSEM_TEST_PORTS, which it sets when unset);
// DISTSEM_REDIS_ADDR names a server for the scenarios that leave it
// running. DISTSEM_SOAK=10m runs the soak scenario (random faults for that
// long); it is off otherwise. DISTSEM_FAILOVER_REPS=n repeats the Sentinel
// crash with WithReplicaAck n times, and the same crash without it (see
// TestSentinelFailoverFollowsMaster). See docs/RELIABILITY.md for the
// scenarios and what they measured.
package faulttest
