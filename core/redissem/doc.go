// Package redissem is distsem's semaphore on Redis: a counting, weighted,
// FIFO semaphore shared by every process that talks to the same Redis
// (standalone, Sentinel or Cluster), with the contract of core.Semaphore.
//
//	sem := redissem.New(client, "reports-db", 8) // at most 8 holders fleet-wide
//	defer sem.Close()
//	p, err := sem.Acquire(ctx)                   // FIFO; ends with ctx
//	if err != nil {
//		return err
//	}
//	defer p.Release(context.WithoutCancel(ctx))
//
// Three kinds of semaphore share the engine:
//
//   - Semaphore (New, NewKeyed) decides every grant in Redis, one atomic
//     Lua script per decision, with time from Redis TIME only. The script
//     that frees a permit grants it to the head of the queue and tells that
//     waiter's process over pub/sub: FIFO across processes, no polling, no
//     connection per waiter. Its permits have an ID that another process
//     can take over (Semaphore.Adopt) or release (Semaphore.ReleaseID).
//   - Leased (NewLeased, NewLeasedKeyed) leases each process a share of the
//     limit and grants within it without a round trip per permit while the
//     shares suffice; when they do not, freed units go to the processes
//     that wait, in arrival order, by the same script-and-push hand-off.
//     Increasing tokens within a process only.
//   - Quorum (NewQuorum, NewAllOf) spreads one semaphore over independent
//     masters, as Redlock (NewQuorum) or Redisson's MultiLock (NewAllOf) do.
//
// Every process of one semaphore must use the same kind: they keep separate
// state in Redis.
//
// # Guarantees
//
// What each kind promises (the limit, FIFO, leases renewed every TTL/3 by
// one loop per process, fencing tokens, the failure policy, what a Redis
// failover can do) and where it stops is written once, in
// https://github.com/distsem/distsem/blob/main/docs/GUARANTEES.md. The
// fault tests that check it, and the failover windows they measured, are in
// https://github.com/distsem/distsem/blob/main/docs/RELIABILITY.md.
//
// # Running it
//
// The semaphore takes the go-redis client you give it, with its pool, AUTH
// and TLS. The minimum Redis ACL, the Redis versions needed (7.0 on
// Cluster), and the settings for failover (WithDefaultLeaseTTL,
// WithOperationTimeout, WithCircuitBreaker, WithOutageGrace,
// WithFailurePolicy, and for a quorum WithMasterTimeout and
// WithClockDrift) are in
// https://github.com/distsem/distsem/blob/main/docs/OPERATIONS.md. Every
// key of a semaphore carries the hash tag {name}, so it lives in one
// Cluster slot, and expires a minute after its last lease or waiter unless
// SetLimit pinned the limit.
//
// # Untrusted input
//
// Keys of keyed semaphores may come from requests: see core.Keyed. A key
// cannot reach another semaphore: keyed semaphores are named name + "#" +
// key in Redis, and plain names cannot contain '#'. Limits and weights
// above core.MaxLimit (2^53 − 1, exact in the scripts' Lua numbers) are
// refused in Go before any script runs.
package redissem
