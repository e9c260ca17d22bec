package redissem

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
)

// Leased is a Redis semaphore in the leased-shares mode: instead of
// deciding every grant in Redis, each process leases a share of the limit,
// kept in Redis and renewed with its heartbeat, and grants within it
// without a round trip. The shares never sum above the limit. When they do
// not suffice (a process's head caller needs more than its whole share),
// that process queues in Redis, and every unit freed anywhere goes at once
// to the process that has waited longest: the releasing process gives it
// back in the release itself (one script), which hands it over and tells
// that process by pub/sub. That process then has its turn: the unit serves
// its queued callers one after another without a round trip, for as many
// grants as callers were queued in it when the turn began, and the release
// that ends the turn gives it back. See docs/GUARANTEES.md, "Leased
// shares", for what it guarantees: FIFO within a process and arrival order
// between processes when contended, tokens that fence only within a
// process, and permits with no ID that another process could adopt.
//
// It pays off when the same few processes use a semaphore again and again
// with short holds: a process reuses its share with no round trip. Prefer
// Semaphore when most uses of a semaphore come from another process than
// the last one (many keys, each used now and then across a fleet): a unit
// that an idle process keeps must be asked back, a push and a give-back,
// before it moves, so there the callers of the leased mode wait longer,
// and where that happens at most uses it makes fewer grants per second
// than Semaphore. The figures are in
// https://github.com/distsem/distsem/blob/main/bench/BENCHMARKS.md.
//
// Every process of one semaphore must use the same mode: the modes keep
// separate state in Redis, so a mix would admit up to twice the limit.
type Leased struct {
	s *Semaphore // the semaphore's keys and its process's machinery
	l *leased
}

var _ core.LimitSemaphore = (*Leased)(nil)

// NewLeased returns the semaphore name of limit permits on Redis in the
// leased-shares mode. It takes New's options and panics as New does.
func NewLeased(client redis.UniversalClient, name string, limit int64, opts ...Option) *Leased {
	cfg := buildConfig("NewLeased", takesNone, opts)
	checkName("NewLeased", name)
	checkLimit("NewLeased: limit", limit)
	return newLeasedSem(newRedisBackend("NewLeased", client, cfg).semaphore(name, limit, true))
}

// NewLeasedKeyed is NewKeyed in the leased-shares mode: one Leased per key,
// all sharing one process's machinery. It takes NewKeyed's options and
// panics as NewKeyed does. Keyed.Adopt and ReleaseID refuse its permits.
func NewLeasedKeyed(client redis.UniversalClient, name string, defaultLimit int64, opts ...Option) *core.Keyed {
	return newKeyed("NewLeasedKeyed", takesKeyed, client, name, defaultLimit, opts, func(s *Semaphore) core.LimitSemaphore { return newLeasedSem(s) })
}

func newLeasedSem(s *Semaphore) *Leased { return &Leased{s: s, l: newLeased(s)} }

// Acquire blocks until the permits are granted within this process's share,
// in FIFO order among this process's callers, ctx ends, the semaphore is
// closed or the backend fails (then the failure policy decides). With a
// permit free in the share and nobody queued in this process it makes no
// round trip; otherwise it queues in this process, and if the whole share
// cannot serve it the process takes what it lacks from free capacity (one
// script, run by this call) or, with none free, queues in Redis at once
// and is handed units as other processes free them, in arrival order.
// Every permit has the share's lease, so a per-call core.WithLeaseTTL is
// an ErrInvalidArgument error.
func (s *Leased) Acquire(ctx context.Context, opts ...core.AcquireOption) (*core.Permit, error) {
	return s.l.acquire(ctx, false, opts)
}

// TryAcquire grants the permits if they are free within this process's
// share and nobody is queued in this process. Otherwise, if Redis told
// this process within the last 25 ms that another process waits for
// capacity (as x/sync's TryAcquire fails while others wait), or that the
// processes' shares hold the whole limit, it returns an ErrNoPermit error
// at once, with no round trip. Otherwise it waits for one
// round trip that asks Redis for more share (bounded by ctx), tries once
// more, and returns an ErrNoPermit error if that did not suffice. A
// failed TryAcquire leaves no demand and no queued call behind.
func (s *Leased) TryAcquire(ctx context.Context, opts ...core.AcquireOption) (*core.Permit, error) {
	return s.l.acquire(ctx, true, opts)
}

// SetLimit stores a new limit in Redis for every process sharing the
// semaphore, as Semaphore.SetLimit does; the shares are rebalanced to it.
func (s *Leased) SetLimit(ctx context.Context, limit int64) error {
	if err := limitError(limit); err != nil {
		return err
	}
	return s.l.setLimit(ctx, limit)
}

// Stats reports this process's holders and waiters as they are, and the
// other processes' as of their last heartbeat.
func (s *Leased) Stats(ctx context.Context) (core.Stats, error) { return s.l.stats(ctx) }

// Close gives the share back (or, if permits are still held, lets its lease
// end), closes Lost on held permits and fails queued calls with
// core.ErrClosed. It stops the process's goroutines of this semaphore and
// waits for them. Close does not close the Redis client.
func (s *Leased) Close() error { return s.s.Close() }
