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
// Three kinds of semaphore share the engine: Semaphore (New, NewKeyed)
// decides every grant in Redis; Leased (NewLeased, NewLeasedKeyed) leases
// each process a share of the limit and grants within it; Quorum
// (NewQuorum, NewAllOf) spreads one semaphore over independent masters.
//
// # Guarantees
//
//   - One decision, one script. Acquiring, releasing, leaving the queue,
//     renewing, adopting or releasing a permit by ID, changing a lease or
//     the limit, and reading the state are each one atomic Lua script.
//     Time is read only from Redis TIME; no client clock is trusted for a
//     decision.
//   - Idempotent scripts, no lost capacity. Every script run twice for one
//     id (go-redis re-sends a command after a read timeout, and a blackholed
//     connection delivers it late) has the effect of one run: a repeated
//     acquire returns the same grant, a repeated release the same answer. A
//     released or cancelled id leaves a tombstone for one lease TTL, so a
//     late copy of its acquire is refused, and every acquire carries its
//     deadline in Redis time (estimated from earlier replies) after which
//     Redis refuses it. The count of permits in use is kept equal to the sum
//     of the holders' weights, and recomputed from them by every renewal,
//     so a wrong count (keys that expired apart, a pinned limit) heals.
//     go-redis's retries therefore stay on: they are safe, and a retry on a
//     fresh connection can still answer in time.
//   - Every call is bounded by its ctx. Acquire, TryAcquire, SetLimit and
//     Stats return by ctx's end plus a few milliseconds, whatever Redis
//     does, also when the go-redis client does not enable
//     ContextTimeoutEnabled. Clean-up that must still reach Redis (a
//     cancelled waiter leaving the queue) runs in the background, bounded;
//     if it never arrives, the queue entry expires within 2/3 of its lease
//     TTL, and a permit granted to it meanwhile is released as soon as the
//     grant reaches this process, not at its lease's end. Each round trip
//     is also bounded by WithOperationTimeout (1s).
//   - Failing fast. A round trip that fails or times out applies the
//     failure policy (WithFailurePolicy) at once; after 3 consecutive
//     failures a circuit breaker (WithCircuitBreaker) applies it without a
//     round trip for a cool-down of 500ms, then probes. Queued waiters get the
//     policy once the backend has been unreachable for the outage grace
//     (WithOutageGrace: 2s or TTL/3); the renewal loop notices an outage
//     within TTL/3. Permits of the fail-open and fail-local policies carry
//     token 0.
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
//     connection; each process has one pub/sub connection (on Cluster one
//     per master, with a shard channel per semaphore waited on within
//     about the last two lease TTLs). 10,000 waiters on a pool of 20
//     connections work.
//   - Leases. Every permit has a lease (WithDefaultLeaseTTL, default 10s),
//     renewed every TTL/3 by one loop per process, each semaphore's renewal
//     on its own so that a slow node delays only its semaphores. If a
//     process dies (even by SIGKILL), its permits come back when their lease
//     ends: the waiting processes wake at the earliest lease end and reap it.
//     Its queued waiters are skipped by the next grant: the grant is
//     published first, and no subscriber means the process is gone (its
//     connection closed). On Cluster, where PUBLISH counts only one node's
//     subscribers, they leave the queue within 2/3 of their lease TTL
//     instead, and a permit granted to one of them in that window comes back
//     one lease TTL later. When renewal fails for longer than the lease,
//     core.Permit.Lost is closed. A live waiter whose heartbeats failed for that
//     long, or whose subscription was down when its grant came, is dropped
//     from the queue and queues again at the back.
//   - Cancellation and Close. A waiter whose ctx ends returns at once and
//     leaves the queue in the background; if a grant raced the
//     cancellation, the same script releases the permit and passes it on, so
//     nothing leaks. Close takes the process's queued waiters out of the
//     queue before it returns (bounded by the operation timeout), and no
//     Acquire returns a permit after Close.
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
// # Leased shares (NewLeased)
//
// A through-Redis semaphore is bound by round trips and wake-ups: every
// hand-off wakes Redis, then the waiter's process. NewLeased trades
// cross-process order for in-process speed, as Google's Doorman does:
//
//   - Each process leases a share of the limit, kept in Redis (one hash
//     under the semaphore's hash tag, one script, lua/share.lua, per
//     decision, time from Redis TIME). The shares never sum above the
//     limit: a share grows only into capacity no other share holds.
//   - Within the process a FIFO in-process semaphore (core.Share) of
//     the share's size grants and hands off permits without a round trip.
//     Acquire goes to Redis only when the share is full; then the process
//     asks for more at once. TryAcquire of a process without a free permit
//     in its share waits for that one round trip (bounded by ctx), then
//     answers.
//   - Each process reports its demand (the weight held plus the weight
//     queued, the peak since its last report) with its heartbeat, every
//     TTL/3, and every 25ms while some process wants more than its share.
//     Shares are rebalanced max-min fairly by demand. A process shrinks by
//     lowering its local limit and gives the share back as its own permits
//     are released: a held permit is never revoked. Where integer shares
//     cannot be equal, the units left over rotate every 200ms, so no
//     process with waiters goes without a share for long. A process that
//     starts demanding gets free capacity at once, and otherwise its fair
//     share once the others' holders release (the tests log tens of ms).
//     A process whose head waiter is heavier than its fair share gets
//     turns too: for one rotation period at a time, its target is that
//     weight and the others share the rest, so a heavy request is not
//     starved by lighter ones elsewhere (it waits for the others' holders
//     to drain, as a heavy request at the head of the default mode's
//     queue does).
//   - A share has a lease of WithDefaultLeaseTTL (a per-call WithLeaseTTL
//     is refused), renewed by the heartbeat. A killed process's
//     share comes back when its lease ends. When renewal has failed for
//     longer than the lease, or Redis answers that the share is gone (its
//     lease ended, or a failover lost it), Lost is closed on every permit
//     the process holds on that semaphore and Release returns ErrNotHeld;
//     the process then grants nothing until it leases a share again. While
//     it has no valid share and Redis has been unreachable for the outage
//     grace, Acquire and TryAcquire (and its queued Acquire calls) take the
//     failure policy; holding a share, it keeps granting within it.
//   - Tokens. A token is epoch × 2^32 + n: epoch is the share's epoch, a
//     counter in Redis that each new share (a process joining, or coming
//     back after a lost share) increments, and n counts the grants of this
//     process since. Tokens strictly increase within a process (also
//     across its epochs), but not across processes: two processes grant
//     tokens of different epochs at the same time, and epochs start again
//     if the semaphore's key is lost. Use the default mode for fencing.
//   - Stats reports this process's holders and waiters as they are, and
//     the other processes' as of their last heartbeat.
//   - Close gives the share back (or, if permits are still held, lets its
//     lease end), closes Lost on held permits and fails queued calls with
//     ErrClosed.
//
// Choose it for short holds at high rates (queries of a few ms, many per
// second per process). Do not choose it where order across processes
// matters (FIFO holds only within a process), nor for fencing. Every
// process of one semaphore must use the same mode: the modes keep separate
// state in Redis, so a mix would admit up to twice the limit.
//
// # What a Redis failover can do
//
// Redis replication is asynchronous. After a failover (Sentinel or
// Cluster), grants, releases and queue entries acknowledged by the old
// primary may be missing on the new one. The semaphore then over-admits (up
// to twice the limit) until the leases granted before the failover end, at
// most one lease TTL later, and a holder whose entry vanished sees Lost and
// gets ErrNotHeld from Release. Waiters whose queue entry vanished queue
// again when their next heartbeat finds them gone. Releases lost the same
// way would leave phantom holders that under-admit for up to a lease; so
// each process follows the new primary with its grant subscription (a
// queued acquire probes its own channel; on Cluster, where each semaphore
// has a shard channel per process, the subscription follows each slot's
// master and a refused connection reloads the slot map) and, when
// the subscription moves, runs its releases of the last lease again (the
// release script is idempotent). Slot migration replies (TRYAGAIN, MOVED,
// ASK, and CLUSTERDOWN for up to 2 s) are retried within the caller's ctx.
// docs/RELIABILITY.md has the measured windows. Use the semaphore to
// protect capacity (an efficiency limit), not for mutual exclusion; where a
// resource must reject stale holders, have it check core.Permit.Token.
//
// # Permits that cross processes
//
// A Redis permit has an ID (core.Permit.ID), an opaque string that another
// process may receive (a subtask's argument, a queue message) and use on a
// semaphore of the same name, key prefix and Redis:
//
//   - Semaphore.Adopt takes over the permit: same weight, token and grant
//     time, under a new ID, with the adopter's default lease TTL, renewed
//     by the adopter's process from then on. One script moves the holder
//     entry and leaves a tombstone on the old ID, so only one process ever
//     renews a permit: the original *Permit's renewal finds its ID gone and
//     closes Lost (within a third of its lease TTL; its observer sees
//     EventLost), and its Release returns ErrNotHeld. The count of permits
//     in use does not change, and fencing is unchanged: the token is the
//     one granted.
//   - Semaphore.ReleaseID releases the permit, whichever process holds it, and
//     hands it to the head of the queue as Release does. The holder's
//     *Permit sees Lost at its next renewal, and its Release returns
//     ErrNotHeld. A retry after a lost reply returns nil.
//   - core.Permit.SetLeaseTTL changes a held permit's lease (in [100ms, 24h]) for
//     a holder that knows its work will be long: the lease ends ttl from
//     now, and every renewal renews it by ttl.
//
// All three are one idempotent script each, like every other decision. An
// ID that is not held (its lease ended, it was released or adopted) gives
// ErrNotHeld. core.Keyed.Adopt and ReleaseID do the same for the
// permits of a keyed semaphore, given the key. Permits of the in-process
// backend, of fallback policies, of Leased and of Quorum have an empty ID.
//
// # Untrusted input
//
// Keys of keyed semaphores may come from requests: see core.Keyed. A key
// cannot reach another semaphore: keyed semaphores are named name + "#" +
// key in Redis, and plain names cannot contain '#'. Limits and weights
// above core.MaxLimit (2^53 − 1, exact in the scripts' Lua numbers) are
// refused in Go before any script runs.
package redissem
