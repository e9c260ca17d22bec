package redisbench

import (
	"context"
	"fmt"
	"testing"
	"time"

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

func BenchmarkUncontended(b *testing.B) {
	ctx := context.Background()
	name := fmt.Sprintf("redisbench-%d", time.Now().UnixNano())
	b.Run("distsem", func(b *testing.B) {
		s := redissem.New(client(b), name, 1, redissem.WithKeyPrefix("bench:"))
		defer s.Close()
		b.ReportAllocs()
		for b.Loop() {
			p, err := s.Acquire(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if err := p.Release(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("seed", func(b *testing.B) {
		c := client(b)
		s := seedsem.New(c, name, 1, seedsem.Options{})
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
