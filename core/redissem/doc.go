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
//     that wait, in arrival order, by the same script-and-push hand-off,
//     and serve there the callers queued when they arrive.
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
// WithReplicaAck, WithOperationTimeout, WithCircuitBreaker,
// WithOutageGrace, WithFailurePolicy, and for a quorum WithMasterTimeout
// and WithClockDrift) are in
// https://github.com/distsem/distsem/blob/main/docs/OPERATIONS.md. Every
// key of a semaphore carries the hash tag {name}, so it lives in one
// Cluster slot, and expires a minute after its last lease or waiter unless
// SetLimit pinned the limit.
//
// # Flows and priority levels
//
// A Semaphore (New, NewKeyed) serves core.WithFlow and core.WithLevel. The
// leased mode serves flows within each process (its share's queue is
// fair; a process's demand is the sum of its flows', so flows do not
// reach the rebalancing of shares) and level 0 only; the quorum refuses
// both. Both refuse WithFairness by name. Each
// grant, made by the same script that frees the capacity, goes first to
// the highest level with waiters that holds less than its reserve
// (core.Fairness.Reserves), else to the highest level with waiters; within
// the level, to the queue whose turn it is by deficit round robin, the
// permit's weight its cost and the weight of the flow at the queue's head
// (core.Fairness.Weights, default 1) its quantum. An idle level or flow
// costs the others nothing. The candidate chosen is granted when it fits;
// one that does not fit yet (a heavy permit) holds back every grant until
// it does, in every level, as the head of the FIFO queue does: nothing
// behind it overtakes it, and it cannot starve.
//
// Flow ids are untrusted: each level has 64 queues, and a flow is dealt a
// hand of 8 of them by a hash of its id (shuffle sharding, as Kubernetes'
// API Priority and Fairness does; core/internal/fair.Hand, computed in Go).
// A flow with no waiters joins the shortest queue of its hand; one with
// waiters joins its own again, so its waiters stay FIFO, and its entry in
// the map of flows to queues goes with its last waiter. State in Redis is
// thus the waiters plus at most 64 queue counters per level, whatever the
// number of flow ids: 100,000 waiters of distinct flows took 524 bytes
// each (MEMORY USAGE of the semaphore's keys), and nothing per flow was
// left once they left. A quiet flow waits behind a heavy one only if every
// queue of its hand holds a heavy flow; with n heavy flows, dealt hands at
// random, the chance of that is 2.3e-10 for n = 1, 0.080 for n = 10 and
// 0.99999 for n = 100 (the inclusion-exclusion sum over k of (-1)^k C(8,k)
// (C(64-k,8)/C(64,8))^n). It then queues behind that heavy flow's waiters
// in the queue they share, which has its turn among the others.
//
// The default flow at level 0 keeps the FIFO queue and the scripts' fast
// paths: a semaphore that never sees a flow or a level costs what it did,
// and one with waiters of flows decides every grant on the general path.
// The Fairness is stored with the semaphore's state in Redis (see
// WithFairness and Semaphore.SetFairness); a keyed semaphore's keys all
// start with the constructor's, and core.Keyed.SetFairness changes one
// key's.
//
// # Untrusted input
//
// Keys of keyed semaphores may come from requests: see core.Keyed. A key
// cannot reach another semaphore: keyed semaphores are named name + "#" +
// key in Redis, and plain names cannot contain '#'. Limits and weights
// above core.MaxLimit (2^53 − 1, exact in the scripts' Lua numbers) are
// refused in Go before any script runs.
package redissem
