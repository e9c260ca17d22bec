package core

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode"

	"github.com/redis/go-redis/v9"
)

// Redis is a semaphore shared by every process that uses the same Redis,
// key prefix and name. See the package documentation for its guarantees.
type Redis struct {
	b        *redisBackend
	name     string
	label    string // the name observers see: name, or the key of a keyed one
	keys     []string
	limit    int64 // configured; the limit stored in Redis wins
	owned    bool  // Close closes b
	fallback *Local
	clock    serverClock // Redis TIME against the local clock
}

var _ Semaphore = (*Redis)(nil)

// NewRedis returns the semaphore name of limit permits on Redis. client may
// be a standalone, Sentinel failover or Cluster client; all keys of one
// semaphore share the hash tag {name}. It panics on a nil client, a limit
// <= 0, or a name that is empty or contains '{', '}' or white space.
//
// The limit lives in Redis. The first process to use the semaphore stores
// its configured limit; a process configured with a different limit adopts
// the stored one (Stats reports it), so processes never disagree and never
// overbook. SetLimit changes it for everyone.
//
// NewRedis starts no goroutine; the first Acquire that has to wait starts
// one pub/sub listener and one renewal loop, which Close stops.
func NewRedis(client redis.UniversalClient, name string, limit int64, opts ...Option) *Redis {
	cfg := buildConfig(opts)
	b := newRedisBackend(client, cfg)
	checkName(name)
	return b.semaphore(name, limit, true)
}

// NewRedisKeyed returns one Redis semaphore per key, named name + ":" + key,
// all sharing one pub/sub listener and one renewal loop. Keys may come from
// untrusted input: a key that is long or has characters that are unsafe in
// a Redis key is replaced by a hash of it. See Keyed for the memory bound.
func NewRedisKeyed(client redis.UniversalClient, name string, defaultLimit int64, opts ...Option) *Keyed {
	cfg := buildConfig(opts)
	b := newRedisBackend(client, cfg)
	checkName(name)
	return newKeyed(defaultLimit, cfg, func(key string, limit int64) keyedBackend {
		s := b.semaphore(name+":"+safeKey(key), limit, false)
		s.label = key
		return s
	}, b.close)
}

func checkName(name string) {
	if name == "" {
		panic("core: semaphore name must not be empty")
	}
	if i := strings.IndexFunc(name, func(r rune) bool { return r == '{' || r == '}' || unicode.IsSpace(r) }); i >= 0 {
		panic(fmt.Sprintf("core: semaphore name %q must not contain '{', '}' or white space", name))
	}
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
// error.
func (s *Redis) SetLimit(ctx context.Context, limit int64) error {
	if limit <= 0 {
		return invalid("limit %d must be positive", limit)
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
	r, err := s.run(ctx, scriptStats, s.limit)
	if err != nil {
		return Stats{}, unavailable("stats", s.name, err)
	}
	return Stats{Limit: r.limit, InUse: r.code, Waiting: r.value}, nil
}

// Close takes this process's queued Acquire calls out of the Redis queue
// (each leave bounded by the operation timeout, all at once), then stops the
// pub/sub listener, the renewal loop and the background clean-up and waits
// for them. Queued Acquire calls return ErrClosed, and so do later ones; none
// returns a permit after Close. Permits still held are no longer renewed and their Lost channels are
// closed; Release still returns them at once, otherwise they come back when
// their lease ends. Close does not close the Redis client.
func (s *Redis) Close() error {
	if !s.owned {
		return nil
	}
	return s.b.close()
}

// safeKey keeps a key readable in Redis when it is short and plain, and
// hashes it otherwise, so untrusted keys cannot break the hash tag.
func safeKey(key string) string {
	if len(key) > 0 && len(key) <= 64 && strings.IndexFunc(key, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-/:", r))
	}) < 0 {
		return key
	}
	sum := sha256.Sum256([]byte(key))
	return "#" + hex.EncodeToString(sum[:16])
}
