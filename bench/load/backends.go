package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/distsem/distsem/bench/seedsem"
	"github.com/distsem/distsem/core"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/semaphore"
)

// grant is a held permit of any backend.
type grant struct {
	release func(context.Context) error
	server  int64 // server time of the grant (Unix ns), 0 if unknown
	token   int64
}

type backend interface {
	acquire(ctx context.Context) (grant, error)
}

// grantedAt is implemented by *core.Permit once the lead adds it: the Redis
// server time of the grant.
type grantedAt interface{ GrantedAt() time.Time }

type coreSem struct{ s core.Semaphore }

func (b coreSem) acquire(ctx context.Context) (grant, error) {
	p, err := b.s.Acquire(ctx)
	if err != nil {
		return grant{}, err
	}
	g := grant{release: p.Release, token: p.Token()}
	if ga, ok := any(p).(grantedAt); ok {
		if t := ga.GrantedAt(); !t.IsZero() {
			g.server = t.UnixNano()
		}
	}
	return g, nil
}

type seedSem struct{ s *seedsem.Sem }

func (b seedSem) acquire(ctx context.Context) (grant, error) {
	rel, err := b.s.Acquire(ctx)
	if err != nil {
		return grant{}, err
	}
	return grant{release: rel}, nil
}

type xsyncSem struct{ s *semaphore.Weighted }

func (b xsyncSem) acquire(ctx context.Context) (grant, error) {
	if err := b.s.Acquire(ctx, 1); err != nil {
		return grant{}, err
	}
	return grant{release: func(context.Context) error { b.s.Release(1); return nil }}, nil
}

func openBackend(c config) (backend, func(), error) {
	switch c.backend {
	case "local":
		s := core.NewLocal(c.limit)
		return coreSem{s}, func() { s.Close() }, nil
	case "xsync":
		return xsyncSem{semaphore.NewWeighted(c.limit)}, func() {}, nil
	}
	pool := c.pool
	if pool <= 0 {
		pool = 20
		if c.backend == "seed" {
			// One connection per goroutine blocked in BRPOP, plus spares
			// for the releases.
			pool = c.childGors + 8
		}
	}
	client := redis.NewClient(&redis.Options{Addr: c.addr, PoolSize: pool, MinIdleConns: min(pool, 8)})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := client.Ping(ctx).Err(); err != nil {
		client.Close()
		return nil, nil, fmt.Errorf("redis %s: %w", c.addr, err)
	}
	switch c.backend {
	case "distsem":
		s := core.NewRedis(client, c.name, c.limit, core.WithKeyPrefix("bench:"), core.WithDefaultLeaseTTL(c.lease))
		return coreSem{s}, func() { s.Close(); client.Close() }, nil
	default:
		s := seedsem.New(client, c.name, c.limit, seedsem.Options{ID: fmt.Sprintf("p%d-%d", c.childIndex, os.Getpid())})
		return seedSem{s}, func() { client.Close() }, nil
	}
}
