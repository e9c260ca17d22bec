// Package consul is distsem's semaphore on Consul: the same contract as
// core's Redis backend (core.Semaphore, weights, FIFO, the stored limit,
// SetLimit, Stats, Close, fencing tokens, the failure policy and the same
// errors), for users who want a consensus store rather than Redis. It is
// its own module, so github.com/hashicorp/consul/api stays out of the
// module graph of users who do not import it.
//
//	sem := consul.New(client, "reports-db", 8) // at most 8 holders fleet-wide
//	defer sem.Close()
//	p, err := sem.Acquire(ctx)                 // FIFO; ends with ctx
//	if err != nil {
//		return err
//	}
//	defer p.Release(context.WithoutCancel(ctx))
//
// # Layout
//
// The keys of semaphore name live under P = prefix + name + "/". P+".lock"
// holds {"limit", "holders": [{"id", "w"}]}; every grant is a
// check-and-set on it (a Consul transaction), as in Consul's own semaphore
// recipe. Each Acquire creates a contender key P+id, locked by its
// process's session, whose value is its weight. A holder counts while it
// is listed in .lock and its key exists: a release deletes the key, and
// the next grant drops the entry. Contenders not listed in .lock are the
// queue, in the order of their keys' CreateIndex.
//
// # Guarantees
//
// How this backend compares with the others is in
// https://github.com/distsem/distsem/blob/main/docs/GUARANTEES.md; how it
// gives each guarantee:
//
//   - FIFO with direct hand-off. A holder of the whole limit (at limit 1,
//     every holder) releases by removing itself from .lock, deleting its
//     key and, in the same transaction, granting the head of the queue if
//     it fits (rewriting the head's key): nobody else can have been
//     granted since its own grant, so .lock is most likely unchanged (if
//     it changed, the release falls back to the delete below). Any other
//     release deletes its key in a transaction that cannot fail, and the
//     head of the queue, woken by the deletion, grants itself: with
//     several holders, each one changes .lock after the others read it,
//     so releases that rewrote .lock raced each other and retried. Only
//     the head is ever granted. A head that does not fit blocks the
//     waiters behind it, as in golang.org/x/sync/semaphore, so none
//     starves; TryAcquire never passes a queued waiter.
//   - No herd. The head of the queue runs a blocking query on P (a release,
//     a holder's session ending, a new limit decide its turn); every other
//     waiter runs a blocking query on the key of the waiter just ahead of
//     it, which changes only when that one is granted or leaves. So a
//     release wakes the head, and a grant the one waiter behind it, which
//     grants itself at once if the permits left still fit it: a grant
//     writes the .lock value it stores into the grantee's key too, so the
//     waiter behind learns .lock's state and index from the key it
//     watches, and its check-and-set needs no read. Each waiting Acquire
//     holds one HTTP connection to the agent for its blocking query; the
//     agent accepts 200 per client address by default
//     (http_max_conns_per_client), which bounds the waiters per host.
//   - Cancellation. Blocking queries carry the caller's ctx: a cancelled
//     Acquire returns at once (not after the query's wait, which is 5s and
//     only bounds how long a waiter can miss its own key vanishing), after
//     deleting its key; a grant that raced the cancellation is released and
//     handed on, so nothing leaks.
//   - Leases are Consul sessions. Each Semaphore value has one session
//     (TTL = core.WithDefaultLeaseTTL, default 10s, behavior "delete")
//     that locks all its contender keys, renewed every TTL/3 by one loop.
//     If the process dies, Consul invalidates the session between one and
//     two TTLs later (Consul's own grace) and deletes its keys: its waiters
//     leave the queue, and its permits are reaped from .lock by the next
//     write (the head of the queue wakes on the deletion and writes). When
//     renewal fails for longer than the TTL, or Consul reports the session
//     gone, every permit held under it sees Lost and its Release returns
//     ErrNotHeld; a waiter whose key vanished queues again at the back.
//   - LockDelay is 0, deliberately. Consul's lock-delay stops a key locked
//     by an invalidated session from being locked again for a while, to
//     give a paused holder time to notice. Here no key is ever locked
//     twice: every Acquire locks a fresh contender key, and capacity comes
//     back through the .lock check-and-set, which lock-delay does not
//     govern. A non-zero delay would protect nothing and would only make
//     re-queueing after a lost session fail for its duration. A holder
//     that was paused past its session's end is fenced by its token
//     instead (below), and learns it from Lost.
//   - Fencing tokens. A permit's token is the Raft index of the write that
//     granted it (the ModifyIndex its contender key got). Each write grants
//     at most one permit, so tokens strictly increase across all processes,
//     and they survive leader changes because they are Raft log positions.
//   - The limit lives in .lock. The first process to use the semaphore
//     stores its configured limit; a process configured differently adopts
//     the stored one. SetLimit changes it for everyone and pins it; an
//     unpinned .lock is deleted when nothing is held or queued.
//
// # Consistency
//
// Reads use Consul's default consistency mode; every grant is a
// check-and-set transaction applied through Raft, so a stale read only
// makes a write fail and retry. That is also why Acquire and the
// hand-off of a holder of the whole limit act on the last snapshot their
// Semaphore read, and a queueing Acquire creates its key and reads the
// queue in one transaction: in the steady state an Acquire that waits
// costs one write, one read and two blocking queries (one more write, its
// own grant, at limit > 1), and a Release one write that reads the prefix
// before its delete. Grants are serialised on the one .lock key, so the
// semaphore's rate is bounded by the agent's round-trip time and, on a
// small machine, by the agent's CPU, whatever the limit (see
// https://github.com/distsem/distsem/blob/main/bench/BENCHMARKS.md). On a LAN, give the client a transport with
// DisableCompression: Go's transport asks for gzip, and the agent then
// compresses every list of the queue (measured: about a fifth of its CPU
// per acquisition at limit 4). A holder that is paused or partitioned
// past its session's end is no longer counted: the semaphore may then
// admit more than the limit while the paused holder still works. Use the
// semaphore to protect capacity; where a resource must reject stale
// holders, have it check Permit.Token.
//
// # Errors
//
// As in core: ErrNoPermit (TryAcquire found no room, or the ctx deadline
// passed while waiting; it also matches context.DeadlineExceeded),
// context.Canceled, ErrUnavailable (Consul failed: the failure policy
// applies; WithOnError and the observer see every such error),
// ErrInvalidArgument, ErrNotHeld and ErrClosed.
package consul
