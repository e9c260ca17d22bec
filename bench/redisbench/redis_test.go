package redisbench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/distsem/distsem/bench/internal/pairs"
	"github.com/distsem/distsem/bench/seedsem"
	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/internal/servertest"
	"github.com/redis/go-redis/v9"
)

func client(b *testing.B) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: servertest.RedisAddr(b)})
	b.Cleanup(func() { c.Close() })
	return c
}

// uniqueName keeps runs of -count N apart on one server.
func uniqueName(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano())
}

// BenchmarkUncontended is one goroutine's acquire + release of a free
// permit: two round trips, one script each, in the default mode; none
// while the process holds a share, in the leased mode.
func BenchmarkUncontended(b *testing.B) {
	b.Run("distsem", func(b *testing.B) {
		s := redissem.New(client(b), uniqueName("redisbench"), 1, redissem.WithKeyPrefix("bench:"))
		defer s.Close()
		pairs.Loop(b, s)
	})
	b.Run("leased", func(b *testing.B) {
		s := redissem.NewLeased(client(b), uniqueName("redisbench"), 4, redissem.WithKeyPrefix("bench-leased:"))
		defer s.Close()
		pairs.Loop(b, s)
	})
	b.Run("seedsem", func(b *testing.B) {
		ctx := context.Background()
		s := seedsem.New(client(b), uniqueName("redisbench"), 1, seedsem.Options{})
		defer s.Reset(ctx)
		b.ReportAllocs()
		for b.Loop() {
			rel, err := s.Acquire(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if err := rel(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("evalsha-return-1", func(b *testing.B) {
		ctx := context.Background()
		c := client(b)
		sc := redis.NewScript("return 1")
		b.ReportAllocs()
		for b.Loop() {
			if err := sc.Run(ctx, c, nil).Err(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkKeyed is the same pair through redissem.NewKeyed, on one of
// 1 000 keys in turn: the keyed lookup plus the round trips.
func BenchmarkKeyed(b *testing.B) {
	k := redissem.NewKeyed(client(b), uniqueName("redisbench-keyed"), 1, redissem.WithKeyPrefix("bench:"))
	defer k.Close()
	pairs.Keyed(b, k, 1000)
}
