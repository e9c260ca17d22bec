// Package quorumbench measures redissem.NewQuorum against a single Redis
// semaphore: commands per Acquire+Release, latency percentiles, throughput
// under contention, and the effect of one slow master (a proxy that delays
// its replies). It starts its own redis-servers (servertest.StartRedis).
//
//	cd bench && go test -run '^$' -bench . -benchtime 2000x ./quorumbench/
package quorumbench
