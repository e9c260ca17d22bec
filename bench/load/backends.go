package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/bsm/redislock"
	"github.com/distsem/distsem/bench/refsem"
	"github.com/distsem/distsem/bench/seedsem"
	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/redissem"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/semaphore"
)

// grant is a held permit of any backend.
type grant struct {
	release func(context.Context) error
	server  int64 // server time of the grant (Unix ns), 0 if unknown
	token   int64
}

// backend acquires a permit of semaphore number key (0 ≤ key < -sems).
type backend interface {
	acquire(ctx context.Context, key int) (grant, error)
}

// Backends, as named by -backend. The peers (redsync, redislock) are
// mutexes: they need -limit 1. local and xsync are per process: -procs 1.
// list is -limit tokens in a Redis list, BLPOP and RPUSH: the cheapest
// hand-off between processes through Redis, with none of a semaphore's
// guarantees (a crashed holder's token is gone for good), as a ceiling.
var backendNames = []string{"distsem", "leased", "seedsem", "ref", "redsync", "redislock", "local", "xsync", "list"}

func mutexOnly(b string) bool { return b == "redsync" || b == "redislock" }
func inProcess(b string) bool { return b == "local" || b == "xsync" }

// grantedAt is implemented by *core.Permit: the Redis server time of the grant.
type grantedAt interface{ GrantedAt() time.Time }

func fromPermit(p *core.Permit) grant {
	g := grant{release: p.Release, token: p.Token()}
	if ga, ok := any(p).(grantedAt); ok {
		if t := ga.GrantedAt(); !t.IsZero() {
			g.server = t.UnixNano()
		}
	}
	return g
}

type coreSem struct{ s core.Semaphore }

func (b coreSem) acquire(ctx context.Context, _ int) (grant, error) {
	p, err := b.s.Acquire(ctx)
	if err != nil {
		return grant{}, err
	}
	return fromPermit(p), nil
}

// flowSem is distsem with -flows: each acquire names the next of its
// flows, so that the flows' code path is measured.
type flowSem struct {
	s    core.Semaphore
	opts [][]core.AcquireOption
	next atomic.Int64
}

func newFlowSem(s core.Semaphore, n int) *flowSem {
	f := &flowSem{s: s}
	for i := range n {
		f.opts = append(f.opts, []core.AcquireOption{core.WithFlow("flow-" + strconv.Itoa(i))})
	}
	return f
}

func (b *flowSem) acquire(ctx context.Context, _ int) (grant, error) {
	p, err := b.s.Acquire(ctx, b.opts[int(b.next.Add(1))%len(b.opts)]...)
	if err != nil {
		return grant{}, err
	}
	return fromPermit(p), nil
}

// keyedSem is distsem with -sems > 1: core.Keyed, one semaphore per key.
type keyedSem struct {
	k    *core.Keyed
	keys []string
}

func (b keyedSem) acquire(ctx context.Context, key int) (grant, error) {
	p, err := b.k.Acquire(ctx, b.keys[key])
	if err != nil {
		return grant{}, err
	}
	return fromPermit(p), nil
}

type seedSem struct{ s []*seedsem.Sem }

func (b seedSem) acquire(ctx context.Context, key int) (grant, error) {
	rel, err := b.s[key].Acquire(ctx)
	if err != nil {
		return grant{}, err
	}
	return grant{release: rel}, nil
}

// listSem is -limit tokens per key in a Redis list (see backendNames).
type listSem struct {
	c    redis.UniversalClient
	keys []string
}

// fillTokens puts limit tokens in KEYS[1] once per run: the first process
// to run it sets KEYS[2].
var fillTokens = redis.NewScript(`if redis.call('SET', KEYS[2], '1', 'NX') then
  for i = 1, tonumber(ARGV[1]) do redis.call('RPUSH', KEYS[1], i) end
end
return 0`)

func newListSem(ctx context.Context, c redis.UniversalClient, names []string, limit int64) (listSem, error) {
	b := listSem{c: c, keys: make([]string, len(names))}
	for i, n := range names {
		b.keys[i] = "bench-list:{" + n + "}:tokens"
		if err := fillTokens.Run(ctx, c, []string{b.keys[i], "bench-list:{" + n + "}:filled"}, limit).Err(); err != nil {
			return listSem{}, err
		}
	}
	return b, nil
}

// acquire BLPOPs a token, 100 ms at a time (a blocked read does not see
// ctx end), and its grant's release RPUSHes it back.
func (b listSem) acquire(ctx context.Context, key int) (grant, error) {
	for {
		v, err := b.c.Do(ctx, "blpop", b.keys[key], "0.1").StringSlice()
		switch {
		case err == nil:
			return grant{release: func(ctx context.Context) error {
				return b.c.RPush(context.WithoutCancel(ctx), b.keys[key], v[1]).Err()
			}}, nil
		case !errors.Is(err, redis.Nil):
			return grant{}, err
		case ctx.Err() != nil:
			return grant{}, ctx.Err()
		}
	}
}

type refSem struct{ s []*refsem.Sem }

func (b refSem) acquire(ctx context.Context, key int) (grant, error) {
	rel, err := b.s[key].Acquire(ctx)
	if err != nil {
		return grant{}, err
	}
	return grant{release: rel}, nil
}

type xsyncSem struct{ s []*semaphore.Weighted }

func (b xsyncSem) acquire(ctx context.Context, key int) (grant, error) {
	s := b.s[key]
	if err := s.Acquire(ctx, 1); err != nil {
		return grant{}, err
	}
	return grant{release: func(context.Context) error { s.Release(1); return nil }}, nil
}

type localSem struct{ s []*core.Local }

func (b localSem) acquire(ctx context.Context, key int) (grant, error) {
	p, err := b.s[key].Acquire(ctx)
	if err != nil {
		return grant{}, err
	}
	return fromPermit(p), nil
}

// redsyncSem is go-redsync/redsync with its default options (expiry 8 s,
// 32 tries, a random 50–250 ms delay between tries). When the 32 tries
// fail (ErrFailed) it calls LockContext again, so acquire blocks like the
// others.
type redsyncSem struct {
	rs   *redsync.Redsync
	keys []string
}

func (b redsyncSem) acquire(ctx context.Context, key int) (grant, error) {
	for {
		m := b.rs.NewMutex(b.keys[key])
		err := m.LockContext(ctx)
		if err == nil {
			return grant{release: func(ctx context.Context) error {
				ok, err := m.UnlockContext(ctx)
				if err == nil && !ok {
					err = errors.New("redsync: unlock did not find the lock")
				}
				return err
			}}, nil
		}
		if ctx.Err() != nil {
			return grant{}, ctx.Err()
		}
		if !errors.Is(err, redsync.ErrFailed) {
			return grant{}, err
		}
	}
}

// redislockSem is bsm/redislock. Its default retry strategy is NoRetry
// (Obtain fails at once when the lock is taken), which cannot block, so
// the harness uses the retry of its documented example
// (ExampleClient_Obtain_retry), LinearBackoff(100 ms), without the
// example's limit of 3 tries: Obtain then retries until it wins or ctx
// ends. TTL 8 s, as redsync's default expiry.
type redislockSem struct {
	c    *redislock.Client
	keys []string
}

var redislockOpts = &redislock.Options{RetryStrategy: redislock.LinearBackoff(100 * time.Millisecond)}

func (b redislockSem) acquire(ctx context.Context, key int) (grant, error) {
	for {
		l, err := b.c.Obtain(ctx, b.keys[key], 8*time.Second, redislockOpts)
		if err == nil {
			return grant{release: l.Release}, nil
		}
		if ctx.Err() != nil {
			return grant{}, ctx.Err()
		}
		if !errors.Is(err, redislock.ErrNotObtained) {
			return grant{}, err
		}
	}
}

// keyNames returns the -sems semaphore names of this run.
func keyNames(c config) []string {
	if c.sems <= 1 {
		return []string{c.name}
	}
	keys := make([]string, c.sems)
	for i := range keys {
		keys[i] = c.name + "-" + strconv.Itoa(i)
	}
	return keys
}

// newClient connects to -redis, or to the Cluster of -cluster.
func newClient(c config, pool int) redis.UniversalClient {
	if c.cluster != "" {
		return redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(c.cluster, ","), PoolSize: pool, MinIdleConns: min(pool, 8)})
	}
	return redis.NewClient(&redis.Options{Addr: c.addr, PoolSize: pool, MinIdleConns: min(pool, 8)})
}

func openBackend(c config) (backend, func(), error) {
	keys := keyNames(c)
	switch c.backend {
	case "local":
		s := make([]*core.Local, len(keys))
		for i := range s {
			s[i] = core.NewLocal(c.limit)
		}
		if len(s) == 1 {
			return coreSem{s[0]}, func() { s[0].Close() }, nil
		}
		return localSem{s}, func() {
			for _, x := range s {
				x.Close()
			}
		}, nil
	case "xsync":
		s := make([]*semaphore.Weighted, len(keys))
		for i := range s {
			s[i] = semaphore.NewWeighted(c.limit)
		}
		return xsyncSem{s}, func() {}, nil
	}
	pool := c.pool
	if pool <= 0 {
		pool = 20
		if c.backend == "seedsem" || c.backend == "list" {
			// One connection per goroutine blocked in BRPOP, plus spares
			// for the releases.
			pool = c.childGors + 8
		}
	}
	client := newClient(c, pool)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := client.Ping(ctx).Err(); err != nil {
		client.Close()
		return nil, nil, fmt.Errorf("redis %s%s: %w", c.addr, c.cluster, err)
	}
	switch c.backend {
	case "distsem", "leased":
		leased := c.backend == "leased"
		opts := []redissem.Option{redissem.WithKeyPrefix("bench:"), redissem.WithDefaultLeaseTTL(c.lease)}
		if leased {
			// Its own prefix: the modes keep separate state and must not
			// share a semaphore.
			opts[0] = redissem.WithKeyPrefix("bench-leased:")
		}
		if c.ack > 0 {
			opts = append(opts, redissem.WithReplicaAck(c.ack, c.ackWait)) // the leased mode refuses it
		}
		switch {
		case len(keys) == 1 && leased:
			s := redissem.NewLeased(client, c.name, c.limit, opts...)
			return coreSem{s}, func() { s.Close(); client.Close() }, nil
		case len(keys) == 1 && c.flows > 0:
			s := redissem.New(client, c.name, c.limit, opts...)
			return newFlowSem(s, c.flows), func() { s.Close(); client.Close() }, nil
		case len(keys) == 1:
			s := redissem.New(client, c.name, c.limit, opts...)
			return coreSem{s}, func() { s.Close(); client.Close() }, nil
		}
		newKeyed := redissem.NewKeyed
		if leased {
			newKeyed = redissem.NewLeasedKeyed
		}
		k := newKeyed(client, c.name, c.limit, opts...)
		return keyedSem{k, keys}, func() { k.Close(); client.Close() }, nil
	case "seedsem":
		s := make([]*seedsem.Sem, len(keys))
		for i, k := range keys {
			s[i] = seedsem.New(client, k, c.limit, seedsem.Options{ID: fmt.Sprintf("p%d-%d", c.childIndex, os.Getpid())})
		}
		return seedSem{s}, func() { client.Close() }, nil
	case "ref":
		p, err := refsem.NewProcess(ctx, client, fmt.Sprintf("%s:p%d-%d", c.name, c.childIndex, os.Getpid()))
		if err != nil {
			client.Close()
			return nil, nil, err
		}
		s := make([]*refsem.Sem, len(keys))
		for i, k := range keys {
			s[i] = p.New(k, c.limit, c.lease)
		}
		return refSem{s}, func() { p.Close(); client.Close() }, nil
	case "list":
		b, err := newListSem(ctx, client, keys, c.limit)
		if err != nil {
			client.Close()
			return nil, nil, err
		}
		return b, func() { client.Close() }, nil
	case "redsync":
		return redsyncSem{redsync.New(goredis.NewPool(client)), prefixed("redsync:", keys)}, func() { client.Close() }, nil
	case "redislock":
		return redislockSem{redislock.New(client), prefixed("redislock:", keys)}, func() { client.Close() }, nil
	}
	client.Close()
	return nil, nil, fmt.Errorf("unknown -backend %q", c.backend)
}

func prefixed(p string, keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = p + k
	}
	return out
}
