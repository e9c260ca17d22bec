package redissem_test

// Keyed semaphores under untrusted keys: Close racing releases, keys that
// cannot reach another semaphore, memory bounded per key, options checked.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/redissem"
)

// Close while thousands of releases run must not race on the
// entries map (it was "fatal error: concurrent map iteration and map
// write" with the race detector off, a reported race with it on). The idle
// list is full (the default 4096), so every release evicts a key.
func TestKeyedCloseRacesReleases(t *testing.T) {
	ctx := context.Background()
	for round := range 3 {
		k := core.NewLocalKeyed(1)
		for i := range 4096 {
			p, err := k.Acquire(ctx, fmt.Sprint("/idle/", i))
			ok(t, err)
			ok(t, p.Release(ctx))
		}
		permits := make([]*core.Permit, 4000)
		for i := range permits {
			p, err := k.Acquire(ctx, fmt.Sprint("/k/", round, "/", i))
			ok(t, err)
			permits[i] = p
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for i := g; i < len(permits); i += 4 {
					if err := permits[i].Release(ctx); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		close(start)
		ok(t, k.Close())
		wg.Wait()
		if _, err := k.Acquire(ctx, "/k/0"); !errors.Is(err, core.ErrClosed) {
			t.Fatalf("Acquire after Close: %v, want ErrClosed", err)
		}
	}
}

// On Redis: keyed "X" with key "tenant:vip", keyed "X:tenant" with
// key "vip" and New("X:tenant:vip") are three semaphores; a client
// key used first cannot set the limit of a plain semaphore.
func TestKeyedKeyCannotReachAnotherSemaphore(t *testing.T) {
	clients := map[string]func(t *testing.T) (redis.UniversalClient, []redissem.Option){
		"miniredis": func(t *testing.T) (redis.UniversalClient, []redissem.Option) {
			c, _ := miniClient(t)
			return c, nil
		},
		"redis": func(t *testing.T) (redis.UniversalClient, []redissem.Option) {
			return realClient(t), []redissem.Option{redissem.WithKeyPrefix(uniquePrefix(t))}
		},
	}
	for name, newClient := range clients {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			c, opts := newClient(t)
			x := redissem.NewKeyed(c, "X", 1, opts...)
			defer x.Close()
			xt := redissem.NewKeyed(c, "X:tenant", 1, opts...)
			defer xt.Close()
			plain := redissem.New(c, "X:tenant:vip", 1, opts...)
			defer plain.Close()
			p1, err := x.TryAcquire(ctx, "tenant:vip")
			ok(t, err)
			p2, err := xt.TryAcquire(ctx, "vip")
			ok(t, err)
			p3, err := plain.TryAcquire(ctx)
			ok(t, err)
			for _, p := range []*core.Permit{p1, p2, p3} {
				ok(t, p.Release(ctx))
			}

			y := redissem.NewKeyed(c, "Y", 50, opts...)
			defer y.Close()
			q, err := y.Acquire(ctx, "admin:export")
			ok(t, err)
			defer q.Release(ctx)
			victim := redissem.New(c, "Y:admin:export", 1, opts...)
			defer victim.Close()
			v, err := victim.TryAcquire(ctx)
			ok(t, err)
			defer v.Release(ctx)
			if _, err := victim.TryAcquire(ctx); !errors.Is(err, core.ErrNoPermit) {
				t.Fatalf("second holder of a limit-1 semaphore: %v, want ErrNoPermit", err)
			}
			if st, err := victim.Stats(ctx); err != nil || st.Limit != 1 {
				t.Fatalf("victim stats = %+v, %v, want limit 1", st, err)
			}
		})
	}
}

// In process: a short key that spells the hash of a long key is
// another key.
func TestKeyedShortKeySpellingAHash(t *testing.T) {
	for name, newKeyed := range keyedBackends() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			k := newKeyed(t, 1)
			defer k.Close()
			long := strings.Repeat("L", core.MaxKeyLen+1)
			sum := sha256.Sum256([]byte(long))
			for _, short := range []string{hex.EncodeToString(sum[:]), "#" + hex.EncodeToString(sum[:16])} {
				p, err := k.TryAcquire(ctx, long)
				ok(t, err)
				q, err := k.TryAcquire(ctx, short)
				ok(t, err)
				ok(t, p.Release(ctx))
				ok(t, q.Release(ctx))
			}
		})
	}
}

// The memory kept per key is bounded in bytes. 64 keys of 1 MiB
// kept at most a few MiB of heap (it was 64 MiB and more), the names
// observers see are at most MaxKeyLen bytes, and so are the Redis keys.
func TestKeyedLongKeysBoundedInBytes(t *testing.T) {
	for name, newKeyed := range keyedBackends() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			var mu sync.Mutex
			longest := 0
			obs := core.ObserverFunc(func(e core.Event) {
				mu.Lock()
				longest = max(longest, len(e.Name))
				mu.Unlock()
			})
			k := newKeyed(t, 1, optObserver(obs))
			defer k.Close()
			before := heapInUse()
			for i := range 64 {
				key := fmt.Sprintf("%02d", i) + strings.Repeat("x", 1<<20)
				p, err := k.Acquire(ctx, key)
				ok(t, err)
				ok(t, p.Release(ctx))
			}
			if grown := int64(heapInUse()) - int64(before); grown > 16<<20 {
				t.Fatalf("64 keys of 1 MiB kept %d MiB of heap", grown>>20)
			}
			mu.Lock()
			defer mu.Unlock()
			if longest > core.MaxKeyLen || longest == 0 {
				t.Fatalf("longest observed name: %d bytes, want 1..%d", longest, core.MaxKeyLen)
			}
			runtime.KeepAlive(k)
		})
	}
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// Redis keys stay short whatever the key.
func TestKeyedRedisKeyNamesBounded(t *testing.T) {
	c, m := miniClient(t)
	k := redissem.NewKeyed(c, "routes", 1)
	defer k.Close()
	ctx := context.Background()
	for _, key := range []string{strings.Repeat("y", 1<<20), "GET /x y", "{evil}", ""} {
		p, err := k.Acquire(ctx, key)
		ok(t, err)
		ok(t, p.Release(ctx))
	}
	for _, key := range m.Keys() {
		if len(key) > 128 || strings.Count(key, "{") != 1 || strings.Count(key, "}") != 1 {
			t.Fatalf("Redis key %.200q: want one hash tag and at most 128 bytes", key)
		}
	}
}

// A keyed semaphore with a negative idle bound is refused at
// construction (it used to unlink the idle list's sentinel and panic on the
// next Release).
func TestKeyedOptionsValidated(t *testing.T) {
	for name, newKeyed := range keyedBackends() {
		t.Run(name, func(t *testing.T) {
			msg := mustPanic(t, "WithMaxIdleKeys(-1)", func() { newKeyed(t, 1, optMaxIdleKeys(-1)) })
			if !strings.Contains(msg, "WithMaxIdleKeys") {
				t.Fatalf("panic %q does not name the option", msg)
			}
			mustPanic(t, "default limit 2^53", func() { newKeyed(t, 1<<53) })
			mustPanic(t, "WithLimits 2^53", func() { newKeyed(t, 1, optLimits(map[string]int64{"a": 1 << 53})) })
			k := newKeyed(t, 1, optMaxIdleKeys(0))
			defer k.Close()
			ctx := context.Background()
			for range 3 {
				p, err := k.Acquire(ctx, "a")
				ok(t, err)
				ok(t, p.Release(ctx))
			}
			if err := k.SetLimit(ctx, "a", 1<<53); !errors.Is(err, core.ErrInvalidArgument) {
				t.Fatalf("SetLimit(2^53): %v, want ErrInvalidArgument", err)
			}
			if n := k.Len(); n != 0 {
				t.Fatalf("Len = %d with WithMaxIdleKeys(0), want 0", n)
			}
		})
	}
}
