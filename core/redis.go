package core

import (
	"context"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// Redis is a semaphore shared by every process that uses the same Redis,
// key prefix and name. See the package documentation for its guarantees.
type Redis struct {
	b        *redisBackend
	name     string
	label    string // the name observers see: name, or the key of a keyed one
	notify   string // channel of this process's grants (per semaphore on Cluster)
	keys     []string
	limit    int64 // configured; the limit stored in Redis wins
	owned    bool  // Close closes b
	fallback *Local
	args     evalArgs     // keys and notify, boxed once for the scripts (redis_run.go)
	clock    serverClock  // Redis TIME against the local clock
	seen     atomic.Int64 // the limit in force, as the last script said (Quorum)
	leased   *leased      // WithLeasedShares; nil in the default mode
	probeAt  atomic.Int64 // unix ns: the next queued Acquire probes its channel (redis_acquire.go)
}

var _ Semaphore = (*Redis)(nil)

// NewRedis returns the semaphore name of limit permits on Redis. client may
// be a standalone, Sentinel failover or Cluster client; all keys of one
// semaphore share the hash tag {name}. It panics on a nil client, a limit
// not in [1, MaxLimit], a bad option, or a name that is empty or contains
// '{', '}', '#' (reserved for keyed semaphores, see NewRedisKeyed) or white
// space.
//
// The limit lives in Redis. The first process to use the semaphore stores
// its configured limit; a process configured with a different limit adopts
// the stored one (Stats reports it), so processes never disagree and never
// overbook. SetLimit changes it for everyone.
//
// NewRedis starts no goroutine; the first Acquire that has to wait starts
// one pub/sub listener and one renewal loop, which Close stops.
//
// The first NewRedis or NewRedisKeyed on a client adds one hook to it (on
// a ClusterClient, to the node clients it creates from then on) that only
// notes whether the latest dial failed, so that an operation timeout names
// a refused connection (see WithOperationTimeout).
func NewRedis(client redis.UniversalClient, name string, limit int64, opts ...Option) *Redis {
	cfg := buildConfig(opts)
	cfg.refuse("NewRedis", optsRedis)
	checkName(name)
	checkLimit("NewRedis limit", limit)
	return newRedisBackend(client, cfg).semaphore(name, limit, true)
}

// NewRedisKeyed returns one Redis semaphore per key, all sharing one
// pub/sub listener and one renewal loop. Keys may come from untrusted
// input: see Keyed for the memory bound. It panics as NewRedis does, and if
// defaultLimit or a WithLimits limit is not in [1, MaxLimit].
//
// The semaphore of key is named name + "#" + key in Redis when key is 1 to
// 64 bytes of [A-Za-z0-9._/:-], and name + "##" + 32 hex digits of the
// key's SHA-256 otherwise. Since plain names cannot contain '#', no key can
// address another keyed semaphore's key or a NewRedis semaphore, whatever
// the key. (Before this layout the separator was ':', which let the key
// "a:b" of keyed "X" and the key "b" of keyed "X:a" share a semaphore;
// semaphores stored under the old names are not read, and expire one
// minute after their last use unless SetLimit pinned them.)
func NewRedisKeyed(client redis.UniversalClient, name string, defaultLimit int64, opts ...Option) *Keyed {
	cfg := buildConfig(opts)
	cfg.refuse("NewRedisKeyed", optsRedis|optsKeyed)
	checkName(name)
	checkLimit("NewRedisKeyed default limit", defaultLimit)
	b := newRedisBackend(client, cfg)
	return newKeyed(defaultLimit, cfg, func(k Key, limit int64) LimitSemaphore {
		s := b.semaphore(k.Name(name), limit, false)
		s.label = k.Label
		if s.leased != nil {
			s.leased.loc.loc.name = k.Label // what observers see, as in the default mode
		}
		return s
	}, b.close)
}

// Acquire blocks until the permits are granted in FIFO order across every
// process, ctx ends, the semaphore is closed or the backend fails (then the
// failure policy decides). No connection is held while it waits: the
// releasing script hands the permit over and the waiting process is told
// by pub/sub. If ctx ends, the waiter leaves the Redis queue at once, and a
// grant that raced it is passed on to the next waiter.
func (s *Redis) Acquire(ctx context.Context, opts ...AcquireOption) (*Permit, error) {
	return s.acquire(ctx, false, opts)
}

// TryAcquire grants the permits only if they are free and nobody is queued,
// in one round trip; otherwise it returns an ErrNoPermit error.
func (s *Redis) TryAcquire(ctx context.Context, opts ...AcquireOption) (*Permit, error) {
	return s.acquire(ctx, true, opts)
}

// SetLimit stores a new limit in Redis for every process sharing the
// semaphore; the meta key then no longer expires when idle. Raising it
// grants queued waiters at once; lowering it admits no one until the
// permits in use fall below it, and fails at once every queued request
// heavier than it (wherever it is in the queue) with an ErrInvalidArgument
// error. A limit that is not in [1, MaxLimit] is an ErrInvalidArgument
// error and changes nothing.
func (s *Redis) SetLimit(ctx context.Context, limit int64) error {
	if err := limitError(limit); err != nil {
		return err
	}
	if s.leased != nil {
		return s.leased.setLimit(ctx, limit)
	}
	if _, err := s.run(ctx, scriptSetLimit, limit); err != nil {
		err = unavailable("set limit", s.name, err)
		s.b.report(s.label, err)
		return err
	}
	return nil
}

// Stats returns the limit in force (the one stored in Redis), the permits
// in use and the number of queued waiters, after reaping expired leases.
func (s *Redis) Stats(ctx context.Context) (Stats, error) {
	if s.leased != nil {
		return s.leased.stats(ctx)
	}
	r, err := s.run(ctx, scriptStats, s.limit)
	if err != nil {
		return Stats{}, unavailable("stats", s.name, err)
	}
	return Stats{Limit: r.limit, InUse: r.code, Waiting: r.value}, nil
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
func (s *Redis) Close() error {
	if !s.owned {
		return nil
	}
	return s.b.close()
}
