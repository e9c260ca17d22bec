// Package seedsem is the baseline of the benchmarks: a Go port of the
// ZSET + BRPOP design, the Redis counting semaphore of a widely copied
// article (a ZSET of acquire timestamps, a ZSET of owners scored by an
// INCR counter, and a list that blocked waiters BRPOP on), so that distsem
// can be measured side by side with it on the same Redis.
//
// # What is kept from the article
//
//   - The acquire script, word for word: it drops entries older than the
//     expiry from the timestamp ZSET (by the client's clock, as the article
//     does), intersects the owner ZSET with it, takes a number with INCR,
//     ZADDs the caller to both sets and grants if its ZRANK in the owner set
//     is below the limit.
//   - The release script, word for word: ZREM from both sets, LPUSH "n" to
//     the wait list.
//   - Blocking: a caller whose try fails BRPOPs the wait list.
//
// # What is changed, and why
//
//  1. The fix that correctness needs: the article returns true as soon as BRPOP
//     pops an element, so a woken waiter becomes a holder without any
//     check, and the release's LPUSH (which happens whether or not anyone
//     waits, so stale "n" elements pile up) can admit more than limit
//     holders. Here a woken waiter runs the acquire script again and only
//     holds if it passes; if it loses it BRPOPs again.
//  2. A failed acquire must remove its own entries. The article leaves the
//     loser's member in both sets: it keeps a rank, so after the next
//     release it is counted as a holder that nobody will ever release, and
//     the limit shrinks until the expiry clears it. The removal is done
//     inside the acquire script (three lines appended to the article's
//     script, marked below), not in a second round trip: with a separate
//     ZREM, a release landing between the failed check and the ZREM makes
//     the loser's stale entry rank below the limit, a woken waiter then
//     fails its re-check, and the release's wake-up is consumed with a
//     permit still free (an idle permit until the next release). Doing it
//     atomically is the most charitable reading of the design.
//  3. The member is unique per Acquire call. The article uses the host name
//     (`hostname`), so every thread of a machine would share one member and
//     the ZSETs could not count them; that cannot work for more than one
//     holder per host.
//  4. The article gives up after 3 BRPOP timeouts; here the wait lasts
//     until ctx ends, and a BRPOP that times out (BlockTimeout) also runs
//     the check again (so a permit freed by expiry is found).
//
// Connections: every blocked waiter pins one pool connection for the
// length of its BRPOP. Give the client a pool larger than the number of
// goroutines that may wait at once (the load driver uses goroutines + 8),
// or waiters queue for a connection and the releases behind them stall.
package seedsem

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// acquireLua is the article's acquire script, followed by the removal of a
// loser's own entries (change 2 above).
//
//go:embed acquire.lua
var acquireLua string

// releaseLua is the article's release script.
//
//go:embed release.lua
var releaseLua string

var (
	acquireScript = redis.NewScript(acquireLua)
	releaseScript = redis.NewScript(releaseLua)
)

// Sem is one semaphore of the ZSET + BRPOP design.
type Sem struct {
	client          redis.UniversalClient
	timeKey, semKey string
	seqKey, waitKey string
	limit           int64
	expire          time.Duration
	blockTimeout    time.Duration
	idPrefix        string
	seq             atomic.Uint64
}

// Options tune a Sem. Zero values take the defaults.
type Options struct {
	// Expire is the article's "expire": an entry older than this (by the
	// clients' clocks) is dropped by the next acquire. Default 10s.
	Expire time.Duration
	// BlockTimeout bounds each BRPOP, and so how late a waiter notices
	// that ctx ended. Default 250ms.
	BlockTimeout time.Duration
	// ID prefixes the member of each Acquire; it must be unique per
	// process sharing the semaphore. Default: a random-ish value from the
	// clock.
	ID string
}

// New returns the semaphore name of limit permits. Its keys are
// "seedsem:{name}:time", ":sem", ":seq" and ":wait".
func New(client redis.UniversalClient, name string, limit int64, o Options) *Sem {
	if o.Expire <= 0 {
		o.Expire = 10 * time.Second
	}
	if o.BlockTimeout <= 0 {
		o.BlockTimeout = 250 * time.Millisecond
	}
	if o.ID == "" {
		o.ID = strconv.FormatInt(time.Now().UnixNano(), 36)
	}
	k := "seedsem:{" + name + "}:"
	return &Sem{
		client: client, timeKey: k + "time", semKey: k + "sem", seqKey: k + "seq", waitKey: k + "wait",
		limit: limit, expire: o.Expire, blockTimeout: o.BlockTimeout, idPrefix: o.ID + ":",
	}
}

// ErrNoPermit is returned by TryAcquire when the check fails.
var ErrNoPermit = errors.New("seedsem: no permit")

// TryAcquire runs the acquire script once (the article's tryAcquire).
func (s *Sem) TryAcquire(ctx context.Context) (release func(context.Context) error, err error) {
	id := s.idPrefix + strconv.FormatUint(s.seq.Add(1), 10)
	ok, err := s.try(ctx, id)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, ErrNoPermit
	}
	return s.releaser(id), nil
}

// Acquire tries once and then, until it holds or ctx ends, BRPOPs the wait
// list and tries again. release gives the permit back; call it once.
func (s *Sem) Acquire(ctx context.Context) (release func(context.Context) error, err error) {
	id := s.idPrefix + strconv.FormatUint(s.seq.Add(1), 10)
	for {
		ok, err := s.try(ctx, id)
		if err != nil {
			return nil, err
		}
		if ok {
			return s.releaser(id), nil
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		// BRPOP with a fractional timeout (go-redis's BRPop rounds to
		// whole seconds). redis.Nil means it timed out: check again.
		err = s.client.Do(ctx, "brpop", s.waitKey, strconv.FormatFloat(s.blockTimeout.Seconds(), 'f', 3, 64)).Err()
		if err != nil && !errors.Is(err, redis.Nil) {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("seedsem: brpop: %w", err)
		}
	}
}

func (s *Sem) try(ctx context.Context, id string) (bool, error) {
	now := time.Now()
	ts := now.UnixMilli()
	invalid := now.Add(-s.expire).UnixMilli()
	res, err := acquireScript.Run(ctx, s.client,
		[]string{s.timeKey, s.semKey, s.seqKey},
		ts, id, s.limit, invalid).Text()
	if err != nil {
		return false, fmt.Errorf("seedsem: acquire: %w", err)
	}
	return res == "T", nil
}

func (s *Sem) releaser(id string) func(context.Context) error {
	return func(ctx context.Context) error {
		err := releaseScript.Run(ctx, s.client, []string{s.semKey, s.timeKey, s.waitKey}, id).Err()
		if err != nil && !errors.Is(err, redis.Nil) {
			return fmt.Errorf("seedsem: release: %w", err)
		}
		return nil
	}
}

// Reset deletes the semaphore's keys.
func (s *Sem) Reset(ctx context.Context) error {
	return s.client.Del(ctx, s.timeKey, s.semKey, s.seqKey, s.waitKey).Err()
}
