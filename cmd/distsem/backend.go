package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/hashicorp/consul/api"
	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/consul"
	"github.com/distsem/distsem/core/redissem"
)

// semaphore is what the commands use of a backend's semaphore.
type semaphore interface {
	core.LimitSemaphore
	Close() error
}

// backend opens the semaphores of one Redis or Consul.
type backend interface {
	// open returns the semaphore name, configured with limit (the limit
	// stored in the backend wins) and leases of ttl (0: the library's
	// default). A name, limit or ttl the backend refuses is a usage error.
	open(name string, limit int64, ttl time.Duration) (semaphore, error)
	// stored reports whether the backend holds any state of the semaphore
	// name, without creating any.
	stored(ctx context.Context, name string) (bool, error)
	// close closes the client.
	close() error
}

// newBackend returns the backend that f names. It does no I/O.
func newBackend(f *backendFlags) (backend, error) {
	switch f.kind {
	case "redis":
		raw := envOr(f.redisURL, "REDIS_URL")
		if raw == "" {
			return nil, usageErrorf("no Redis: give -redis URL or set REDIS_URL")
		}
		c, err := newRedisClient(raw)
		if err != nil {
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err // its message would repeat the URL, password included
			}
			return nil, usageErrorf("bad Redis URL: %v", err)
		}
		return &redisBackend{client: c, prefix: f.prefix}, nil
	case "consul":
		cfg := api.DefaultConfig() // reads CONSUL_HTTP_ADDR, CONSUL_HTTP_TOKEN, ...
		if f.consulAddr != "" {
			cfg.Address = f.consulAddr
		}
		c, err := api.NewClient(cfg)
		if err != nil {
			return nil, usageErrorf("bad Consul address: %v", err)
		}
		return &consulBackend{client: c, prefix: f.prefix}, nil
	}
	return nil, usageErrorf("-backend must be redis or consul, not %q", f.kind)
}

type redisBackend struct {
	client redis.UniversalClient
	prefix string
}

func (b *redisBackend) open(name string, limit int64, ttl time.Duration) (semaphore, error) {
	opts := []redissem.Option{redissem.WithKeyPrefix(b.prefix)}
	if ttl != 0 {
		opts = append(opts, redissem.WithDefaultLeaseTTL(ttl))
	}
	return construct(func() semaphore { return redissem.New(b.client, name, limit, opts...) })
}

// stored looks for the semaphore's state hash and its pinned limit, keys
// named as core/redissem names them. Stats would store the limit it was
// configured with when neither exists, as a first Acquire does, and a
// status must change nothing.
func (b *redisBackend) stored(ctx context.Context, name string) (bool, error) {
	tag := b.prefix + "{" + name + "}:"
	n, err := b.client.Exists(ctx, tag+"m", tag+"p").Result()
	if err != nil {
		return false, fmt.Errorf("%w: %s: %v", core.ErrUnavailable, name, err)
	}
	return n > 0, nil
}

func (b *redisBackend) close() error { return b.client.Close() }

type consulBackend struct {
	client *api.Client
	prefix string
}

func (b *consulBackend) open(name string, limit int64, ttl time.Duration) (semaphore, error) {
	opts := []core.Option{core.WithKeyPrefix(b.prefix)}
	if ttl != 0 {
		opts = append(opts, core.WithDefaultLeaseTTL(ttl))
	}
	return construct(func() semaphore { return consul.New(b.client, name, limit, opts...) })
}

// stored looks for keys under the semaphore's prefix (see consul.New).
func (b *consulBackend) stored(ctx context.Context, name string) (bool, error) {
	q := (&api.QueryOptions{}).WithContext(ctx)
	keys, _, err := b.client.KV().Keys(b.prefix+name+"/", "", q)
	if err != nil {
		return false, fmt.Errorf("%w: %s: %v", core.ErrUnavailable, name, err)
	}
	return len(keys) > 0, nil
}

func (b *consulBackend) close() error { return nil }

// construct calls a constructor with arguments from the command line. The
// library's constructors panic on arguments that a program should never
// pass (a bad name, limit or option); here they came from the user, and
// the panic's message becomes a usage error.
func construct(f func() semaphore) (s semaphore, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, usageErrorf("%v", r)
		}
	}()
	return f(), nil
}

// backendError is the exit error of err, returned by a semaphore.
func backendError(err error) error {
	var e *exitError
	switch {
	case errors.As(err, &e):
		return err
	case errors.Is(err, core.ErrInvalidArgument):
		return &exitError{code: exitUsage, msg: err.Error()}
	case errors.Is(err, core.ErrUnavailable):
		return &exitError{code: exitUnavailable, msg: err.Error()}
	}
	return &exitError{code: exitSoftware, msg: err.Error()}
}
