package core

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
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

func (s *Redis) acquire(ctx context.Context, try bool, opts []AcquireOption) (*Permit, error) {
	a, err := buildAcquire(s.b.cfg.leaseTTL, opts)
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, ctxError(ctx, s.name)
	}
	if try {
		id := rand.Text()
		r, err := s.run(ctx, scriptAcquire, s.limit, id, a.weight, a.ttl.Milliseconds(), 1)
		if err != nil {
			if ctx.Err() != nil {
				s.leave(ctx, id, a.ttl) // the script may have run
				return nil, ctxError(ctx, s.name)
			}
			return s.failed(ctx, "acquire", err, true, opts, a.weight)
		}
		switch r.code {
		case 1:
			return s.granted(id, a, r.value, r.nowUS, 0), nil
		case -1:
			return nil, invalid("weight %d exceeds the limit %d of %q", a.weight, r.limit, s.name)
		}
		return nil, fmt.Errorf("%w: %q", ErrNoPermit, s.name)
	}
	if err := s.b.listen(ctx); err != nil {
		if ctx.Err() != nil {
			return nil, ctxError(ctx, s.name)
		}
		if err == ErrClosed {
			return nil, err
		}
		return s.failed(ctx, "subscribe", err, false, opts, a.weight)
	}
	p, err := s.wait(ctx, a)
	if err != nil {
		if errors.Is(err, ErrUnavailable) {
			return s.failed(ctx, "acquire", err, false, opts, a.weight)
		}
		return nil, err
	}
	return p, nil
}

// wait enqueues and waits for the grant. A waiter evicted from the queue
// while alive (its heartbeats failed for 2/3 of its TTL) queues again.
func (s *Redis) wait(ctx context.Context, a acquireConfig) (p *Permit, err error) {
	w := &redisWaiter{s: s, id: rand.Text(), ttl: a.ttl, ch: make(chan grantNote, 1)}
	var start time.Time // set once queued
	var queueUS int64
	defer func() {
		if err != nil && !start.IsZero() {
			s.b.cfg.observe(Event{Kind: EventAbandoned, Name: s.label, Weight: a.weight, Wait: time.Since(start), Err: err})
		}
	}()
	for {
		if err := s.b.addWaiter(w); err != nil {
			return nil, err
		}
		r, err := s.run(ctx, scriptAcquire, s.limit, w.id, a.weight, a.ttl.Milliseconds(), 0)
		if err != nil {
			s.b.removeWaiter(w)
			s.leave(ctx, w.id, a.ttl) // the script may have run
			if ctx.Err() != nil {
				return nil, ctxError(ctx, s.name)
			}
			err = unavailable("acquire", s.name, err)
			s.b.report(s.label, err)
			return nil, err
		}
		switch r.code {
		case 1:
			s.b.removeWaiter(w)
			return s.granted(w.id, a, r.value, r.nowUS, since(start)), nil
		case -1:
			s.b.removeWaiter(w)
			return nil, invalid("weight %d exceeds the limit %d of %q", a.weight, r.limit, s.name)
		}
		s.b.queued(w, r.value)
		queueUS = r.nowUS
		if start.IsZero() {
			start = time.Now()
			s.b.cfg.observe(Event{Kind: EventWait, Name: s.label, Weight: a.weight})
		}

		var n grantNote
		select {
		case n = <-w.ch:
		case <-ctx.Done():
			s.b.removeWaiter(w)
			s.leave(ctx, w.id, a.ttl)
			return nil, ctxError(ctx, s.name)
		case <-s.b.stop:
			s.b.removeWaiter(w)
			s.leave(ctx, w.id, a.ttl)
			return nil, ErrClosed
		}
		switch {
		case n.token == -1:
			return nil, invalid("weight %d exceeds the lowered limit of %q", a.weight, s.name)
		case n.token == -2:
			continue // evicted while alive: queue again
		case ctx.Err() != nil:
			// Granted as ctx ended: pass the permit on (go.dev/issue/63615).
			s.leave(ctx, w.id, a.ttl)
			return nil, ctxError(ctx, s.name)
		}
		p := s.granted(w.id, a, n.token, n.grantUS, time.Since(start))
		p.queueUS = queueUS
		return p, nil
	}
}

func since(t time.Time) time.Duration {
	if t.IsZero() {
		return 0
	}
	return time.Since(t)
}

// granted makes the permit of holder id and tracks it for renewal.
func (s *Redis) granted(id string, a acquireConfig, token, grantUS int64, waited time.Duration) *Permit {
	p := &Permit{owner: s, weight: a.weight, token: token, id: id, ttl: a.ttl.Milliseconds(),
		lost: make(chan struct{}), grantUS: grantUS}
	s.b.hold(s, p)
	s.b.cfg.observe(Event{Kind: EventAcquired, Name: s.label, Weight: a.weight, Wait: waited})
	return p
}

// leave takes waiter id out of the queue, or releases its permit if the
// grant raced, with a ctx that outlives the caller's. On failure the entry
// expires by itself within the lease TTL.
func (s *Redis) leave(ctx context.Context, id string, ttl time.Duration) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ttl)
	defer cancel()
	if _, err := s.run(ctx, scriptRelease, s.limit, id); err != nil {
		s.b.report(s.label, unavailable("leave queue", s.name, err))
	}
}

// failed applies the failure policy to a backend error.
func (s *Redis) failed(ctx context.Context, op string, cause error, try bool, opts []AcquireOption, weight int64) (*Permit, error) {
	err := cause
	if !errors.Is(err, ErrUnavailable) {
		err = unavailable(op, s.name, cause)
		s.b.report(s.label, err)
	}
	switch s.b.cfg.policy.mode {
	case 1:
		return &Permit{owner: nopOwner{}, weight: weight}, nil
	case 2:
		if try {
			return s.fallback.TryAcquire(ctx, opts...)
		}
		return s.fallback.Acquire(ctx, opts...)
	}
	return nil, err
}

func (s *Redis) release(ctx context.Context, p *Permit) error {
	s.b.unhold(s, p)
	if ctx.Err() != nil {
		// A request ctx is often over by release time; giving up here
		// would hold the permit until its lease ends.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), time.Duration(p.ttl)*time.Millisecond)
		defer cancel()
	}
	r, err := s.run(ctx, scriptRelease, s.limit, p.id)
	if err != nil {
		err = unavailable("release", s.name, err)
		s.b.report(s.label, err)
		return err
	}
	s.b.cfg.observe(Event{Kind: EventReleased, Name: s.label, Weight: p.weight})
	if r.code != 1 {
		return fmt.Errorf("%w: %q token %d", ErrNotHeld, s.name, p.token)
	}
	return nil
}

// run runs one script on s's keys with ARGV = limit, channel, args...,
// and delivers the grants its reply carries for this process's waiters
// (the in-process hand-off that skips pub/sub).
func (s *Redis) run(ctx context.Context, sc *redis.Script, limit int64, args ...any) (reply, error) {
	argv := make([]any, 0, 2+len(args))
	argv = append(argv, limit, s.b.channel)
	argv = append(argv, args...)
	v, err := sc.Run(ctx, s.b.client, s.keys, argv...).Slice()
	if err != nil {
		return reply{}, err
	}
	r, err := parseReply(v)
	s.b.deliver(r.notes)
	return r, err
}

// SetLimit stores a new limit in Redis for every process sharing the
// semaphore; the meta key then no longer expires when idle. Raising it
// grants queued waiters at once; lowering it admits no one until the
// permits in use fall below it, and fails queued requests heavier than it
// with an ErrInvalidArgument error.
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

// Close stops the pub/sub listener and the renewal loop and waits for them.
// Queued Acquire calls leave the queue and return ErrClosed, and so do later
// ones. Permits still held are no longer renewed and their Lost channels are
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
