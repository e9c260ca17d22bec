// Package redisbench holds go test benchmarks of one acquire + release on a
// real redis-server, for profiling the client side:
//
//	DISTSEM_REDIS_ADDR=127.0.0.1:7460 go test -run '^$' -bench . -benchmem \
//	    -cpuprofile cpu.out ./redisbench/   (from bench/, its own module)
//
// The multi-process figures of BENCHMARKS.md come from bench/load.
package redisbench
