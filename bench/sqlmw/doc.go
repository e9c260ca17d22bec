// Package sqlmw holds the benchmarks of the sqlmw driver wrapper:
//
//   - BenchmarkQuery: the cost per query of the wrapper with the in-process
//     backend (and with Redis, for scale) against the unwrapped driver,
//     SQLite in memory.
//   - BenchmarkMapReduce: the examples/mapreduce job on PostgreSQL, limited
//     fleet-wide by the Redis semaphore or per process by
//     SetMaxOpenConns(limit/workers); it reports rows/s.
//
// See ../BENCHMARKS.md for figures and the commands that produced them.
package sqlmw
