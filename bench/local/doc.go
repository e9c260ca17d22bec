// Package local holds the go test benchmarks of the in-process backend
// (core.NewLocal) against golang.org/x/sync/semaphore:
//
//	go test -run '^$' -bench . -benchmem -count 5 ./local/   (from bench/, its own module)
//
// Uncontended: one goroutine, acquire + release of a free permit.
// Parallel: b.RunParallel with SetParallelism(4) (4 × GOMAXPROCS
// goroutines: 8 on the 2-core machine) on a limit of 1 and of 4, so some
// acquires wait and are handed a permit by a release.
package local
