// Package core is distsem's semaphore: a counting, weighted, FIFO semaphore
// shared by every process that talks to the same Redis, and an in-process
// twin with the same semantics.
//
//	sem := core.NewRedis(client, "reports-db", 8) // at most 8 holders fleet-wide
//	defer sem.Close()
//	p, err := sem.Acquire(ctx)                    // FIFO; ends with ctx
//	if err != nil {
//		return err
//	}
//	defer p.Release(context.WithoutCancel(ctx))
//
// # Guarantees of the Redis backend
//
//   - One decision, one script. Acquiring, releasing, leaving the queue,
//     renewing, changing the limit and reading the state are each one
//     atomic Lua script. Time is read only from Redis TIME; no client clock
//     is trusted.
//   - FIFO with direct hand-off. Waiters queue in Redis in arrival order,
//     shared by all processes. The script that frees a permit (a release, a
//     waiter leaving, a lease found expired) grants it to the head of the
//     queue in the same step, and publishes the grant on the channel of the
//     waiter's process; when that waiter lives in the releasing process, the
//     grant comes back in the script's reply and skips pub/sub. A request at
//     the head that does not fit blocks smaller ones behind it, as in
//     golang.org/x/sync/semaphore, so none starves. TryAcquire never barges
//     past a queued waiter.
//   - No polling, no connection per waiter. A waiting Acquire holds no Redis
//     connection; each process has one pub/sub connection. 10,000 waiters on
//     a pool of 20 connections work.
//   - Leases. Every permit has a lease (WithDefaultLeaseTTL, default 10s),
//     renewed every TTL/3 by one loop per process for all its permits. If a
//     process dies (even by SIGKILL), its permits come back when their lease
//     ends: the waiting processes wake at the earliest lease end and reap it.
//     Its queued waiters leave the queue within 2/3 of their lease TTL; a
//     permit granted to one of them in that window comes back one lease TTL
//     later. When renewal fails for longer than the lease, Permit.Lost is
//     closed. A live waiter whose heartbeats failed for that long (Redis
//     unreachable) is dropped from the queue and queues again at the back.
//   - Cancellation. A waiter whose ctx ends leaves the queue at once; if a
//     grant raced the cancellation, the same script releases the permit and
//     passes it on, so nothing leaks.
//   - Fencing tokens. Every grant gets a token that strictly increases
//     across all processes: the Redis server time in microseconds at the
//     grant, or the previous token + 1 if that is larger. So tokens keep
//     increasing even after idle keys expired, or after a failover lost the
//     last token written, as long as the primary's and the replica's clocks
//     agree to better than the failover takes.
//   - The limit lives in Redis. The first process stores its configured
//     limit; a process configured differently adopts the stored one instead
//     of overbooking. SetLimit changes it for everyone and pins it.
//   - Bounded memory. Every key has the hash tag {name} (Redis Cluster puts
//     them in one slot) and expires one minute after the last lease or
//     waiter would have, unless the limit was pinned by SetLimit.
//
// # What a Redis failover can do
//
// Redis replication is asynchronous. After a failover (Sentinel or
// Cluster), grants, releases and queue entries acknowledged by the old
// primary may be missing on the new one. The semaphore then over-admits (up
// to twice the limit) until the leases granted before the failover end, at
// most one lease TTL later, and a holder whose entry vanished sees Lost and
// gets ErrNotHeld from Release. Waiters whose queue entry vanished queue
// again when their next heartbeat finds them gone. Use the semaphore to
// protect capacity (an efficiency limit), not for mutual exclusion; where a
// resource must reject stale holders, have it check Permit.Token.
//
// # Errors
//
// Outcomes stay distinguishable with errors.Is: context.Canceled (the
// caller gave up), ErrNoPermit (no capacity: TryAcquire, or a ctx deadline
// that passed while waiting, which also matches context.DeadlineExceeded),
// ErrUnavailable (the backend failed; see WithFailurePolicy), ErrInvalidArgument,
// ErrNotHeld and ErrClosed. A ctx with a cause (context.WithCancelCause,
// WithTimeoutCause) still gives context.Canceled or DeadlineExceeded; the
// cause is wrapped as well and named in the message. Constructors panic on
// programmer errors, with a "core: …" message: a nil client, a limit
// outside [1, MaxLimit], a bad name or a bad option (see Option).
//
// # Untrusted input
//
// Keys of keyed semaphores may come from requests. A key cannot reach
// another semaphore: keyed semaphores are named name + "#" + key in Redis,
// and plain names cannot contain '#'. Memory is bounded in bytes: keys
// longer than MaxKeyLen are kept as their SHA-256, and at most
// WithMaxIdleKeys idle keys are kept (see Keyed). Limits and weights above
// MaxLimit (2^53 − 1, exact in the scripts' Lua numbers) are refused in Go
// before any script runs.
package core
