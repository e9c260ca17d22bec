package redissem

import (
	"context"
	"sync/atomic"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/backend"

	"github.com/redis/go-redis/v9"
)

// Semaphore is a semaphore shared by every process that uses the same
// Redis, key prefix and name. See the package documentation for its guarantees.
type Semaphore struct {
	b        *redisBackend
	name     string
	label    string // the name observers see: name, or the key of a keyed one
	notify   string // channel of this process's grants (per semaphore on Cluster)
	keys     []string
	limit    int64 // configured; the limit stored in Redis wins
	owned    bool  // Close closes b
	fallback *core.Local
	args     evalArgs     // keys and notify, boxed once for the scripts (redis_run.go)
	clock    serverClock  // Redis TIME against the local clock
	seen     atomic.Int64 // the limit in force, as the last script said (Quorum)
	probeAt  atomic.Int64 // unix ns: the next queued Acquire probes its channel (redis_acquire.go)
	ownerEnd atomic.Int64 // unix ns: this process's owner record lasts at least until then (redis_owner.go)
	fairEnc  string       // the configured Fairness, as the scripts read it (redis_fair.go)
}

var _ core.Semaphore = (*Semaphore)(nil)

// New returns the semaphore name of limit permits on Redis. client may be
// a standalone, Sentinel failover or Cluster client; all keys of one
// semaphore share the hash tag {name}. It panics on a nil client, a limit
// not in [1, core.MaxLimit], a bad option or one it does not take (see
// Option), or a name that is empty or contains '{', '}', '#' (reserved for
// keyed semaphores, see NewKeyed) or white space.
//
// The limit lives in Redis. The first process to use the semaphore stores
// its configured limit; a process configured with a different limit adopts
// the stored one (Stats reports it), so processes never disagree and never
// overbook. SetLimit changes it for everyone.
//
// New starts no goroutine; the first Acquire that has to wait starts one
// pub/sub listener and one renewal loop, which Close stops.
//
// The first New or NewKeyed on a client adds one hook to it (on a
// ClusterClient, to the node clients it creates from then on) that only
// notes whether the latest dial failed, so that an operation timeout names
// a refused connection (see WithOperationTimeout).
func New(client redis.UniversalClient, name string, limit int64, opts ...Option) *Semaphore {
	cfg := buildConfig("New", takesFair|takesAck, opts)
	checkName("New", name)
	checkLimit("New: limit", limit)
	checkFairness("New", cfg, limit)
	return newRedisBackend("New", client, cfg).semaphore(name, limit, true)
}

// NewKeyed returns one Redis semaphore per key, all sharing one pub/sub
// listener and one renewal loop. Keys may come from untrusted input: see
// core.Keyed for the memory bound. It takes WithLimits and WithMaxIdleKeys
// besides New's options, and panics as New does, and if defaultLimit or a
// WithLimits limit is not in [1, core.MaxLimit].
//
// The semaphore of key is named core.Key.Name(name) in Redis: name + "#"
// + the key, readable, with every byte outside [A-Za-z0-9._/:-] escaped as
// %XX, when that is 1 to 64 bytes, and name + "##" + 32 hex digits of the
// key's SHA-256 otherwise. Since plain names cannot contain '#', no key can
// address another keyed semaphore's key or a New semaphore, whatever the
// key.
func NewKeyed(client redis.UniversalClient, name string, defaultLimit int64, opts ...Option) *core.Keyed {
	return newKeyed("NewKeyed", takesKeyed|takesFair|takesAck, client, name, defaultLimit, opts, func(s *Semaphore) core.LimitSemaphore { return s })
}

// newKeyed makes ctor's keyed semaphore: each key's semaphore is the
// Semaphore of the key's name, as mode makes it (NewKeyed: itself;
// NewLeasedKeyed: a Leased around it).
func newKeyed(ctor string, t takes, client redis.UniversalClient, name string, defaultLimit int64, opts []Option, mode func(*Semaphore) core.LimitSemaphore) *core.Keyed {
	cfg := buildConfig(ctor, t, opts)
	checkName(ctor, name)
	checkLimit(ctor+": default limit", defaultLimit)
	checkFairness(ctor, cfg, defaultLimit)
	b := newRedisBackend(ctor, client, cfg)
	return backend.NewKeyed(name, defaultLimit, func(k core.Key, limit int64) core.LimitSemaphore {
		s := b.semaphore(k.Name(name), limit, false)
		s.label = k.Label
		return mode(s)
	}, b.close, cfg.shared...)
}

// Acquire blocks until the permits are granted in FIFO order across every
// process, ctx ends, the semaphore is closed or the backend fails (then the
// failure policy decides). No connection is held while it waits: the
// releasing script hands the permit over and the waiting process is told
// by pub/sub. If ctx ends, the waiter leaves the Redis queue at once, and a
// grant that raced it is passed on to the next waiter.
func (s *Semaphore) Acquire(ctx context.Context, opts ...core.AcquireOption) (*core.Permit, error) {
	return s.acquire(ctx, false, opts)
}

// TryAcquire grants the permits only if they are free and nobody is queued,
// in one round trip; otherwise it returns an ErrNoPermit error.
func (s *Semaphore) TryAcquire(ctx context.Context, opts ...core.AcquireOption) (*core.Permit, error) {
	return s.acquire(ctx, true, opts)
}

// SetLimit stores a new limit in Redis for every process sharing the
// semaphore; the meta key then no longer expires when idle. Raising it
// grants queued waiters at once; lowering it admits no one until the
// permits in use fall below it, and fails at once every queued request
// heavier than it (wherever it is in the queue) with an ErrInvalidArgument
// error. A limit that is not in [1, MaxLimit] is an ErrInvalidArgument
// error and changes nothing.
func (s *Semaphore) SetLimit(ctx context.Context, limit int64) error {
	if err := limitError(limit); err != nil {
		return err
	}
	if _, err := s.run(ctx, scriptSetLimit, limit); err != nil {
		err = unavailable("set limit", s.name, err)
		s.b.report(s.label, err)
		return err
	}
	return nil
}

// Stats returns the limit in force (the one stored in Redis), the permits
// in use and the number of queued waiters, each level's share of both, and
// the number of queues with waiters (the default flow's included), after
// reaping expired leases.
func (s *Semaphore) Stats(ctx context.Context) (core.Stats, error) {
	r, err := s.run(ctx, scriptStats, s.limit)
	if err != nil {
		return core.Stats{}, unavailable("stats", s.name, err)
	}
	st := core.Stats{Limit: r.limit, InUse: r.code, Waiting: r.value}
	if err := parseLevels(&st, r.levels); err != nil {
		return core.Stats{}, unavailable("stats", s.name, err)
	}
	return st, nil
}

// Close takes this process's queued Acquire calls out of the Redis queue
// (each leave bounded by the operation timeout, all at once), then stops the
// pub/sub listener, the renewal loop and the background clean-up and waits
// for them. Queued Acquire calls return ErrClosed, and so do later ones; an
// Acquire whose grant reached this process before Close returns that permit,
// already lost, and no permit is granted after Close. Permits still held are
// no longer renewed and their Lost channels are closed; Release still
// returns them at once, otherwise they come back when their lease ends.
// Close does not close the Redis client.
//
// Close also waits for every round trip to Redis still in flight, also one
// whose caller already returned (a call returns when its ctx ends, even
// while Redis stalls). A round trip's ctx ends within the operation
// timeout; go-redis then stops retrying, dialing and waiting for a pooled
// connection, and the write or read under way ends by the client's own
// WriteTimeout and ReadTimeout (3s each by default), or by the ctx deadline
// with ContextTimeoutEnabled. So Close returns within about the operation
// timeout plus the client's WriteTimeout and ReadTimeout; with those
// timeouts disabled (-1), a stalled Redis holds Close until it answers or
// the connection breaks.
func (s *Semaphore) Close() error {
	if !s.owned {
		return nil
	}
	return s.b.close()
}
