// Package adapters_test measures what httpmw, grpcmw and echomw add to a
// request: with the in-process backend against the bare handler (ns/op and
// allocs/op), and with a real redis-server (p50/p99 latency added under a
// steady load, and Redis calls per request). See bench/BENCHMARKS.md.
//
//	go test -run '^$' -bench . -benchmem ./adapters/   (from bench/, its own module)
//	DISTSEM_REDIS_ADDR=127.0.0.1:7460 go test -run '^$' -bench Redis ./adapters/
package adapters_test
