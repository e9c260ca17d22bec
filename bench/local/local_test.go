package local

import (
	"context"
	"strconv"
	"testing"

	"github.com/distsem/distsem/bench/internal/pairs"
	"github.com/distsem/distsem/core"
	"golang.org/x/sync/semaphore"
)

func BenchmarkUncontended(b *testing.B) {
	b.Run("core.Local", func(b *testing.B) { pairs.Loop(b, core.NewLocal(4)) })
	b.Run("xsync", func(b *testing.B) {
		ctx := context.Background()
		s := semaphore.NewWeighted(4)
		b.ReportAllocs()
		for b.Loop() {
			if err := s.Acquire(ctx, 1); err != nil {
				b.Fatal(err)
			}
			s.Release(1)
		}
	})
}
func BenchmarkParallel(b *testing.B) {
	ctx := context.Background()
	for _, limit := range []int64{1, 4} {
		name := map[int64]string{1: "limit1", 4: "limit4"}[limit]
		b.Run(name+"/core.Local", func(b *testing.B) {
			s := core.NewLocal(limit)
			b.ReportAllocs()
			b.SetParallelism(4)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					p, err := s.Acquire(ctx)
					if err != nil {
						b.Error(err)
						return
					}
					if err := p.Release(ctx); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
		b.Run(name+"/xsync", func(b *testing.B) {
			s := semaphore.NewWeighted(limit)
			b.ReportAllocs()
			b.SetParallelism(4)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := s.Acquire(ctx, 1); err != nil {
						b.Error(err)
						return
					}
					s.Release(1)
				}
			})
		})
	}
}

// TestSameResult keeps the package's tests meaningful without the
// benchmarks: both semaphores admit limit holders and refuse one more.
func TestSameResult(t *testing.T) {
	ctx := context.Background()
	l := core.NewLocal(2)
	x := semaphore.NewWeighted(2)
	var ps []*core.Permit
	for range 2 {
		p, err := l.TryAcquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
		if !x.TryAcquire(1) {
			t.Fatal("xsync refused a free permit")
		}
	}
	if _, err := l.TryAcquire(ctx); err == nil {
		t.Error("core.Local granted a third permit")
	}
	if x.TryAcquire(1) {
		t.Error("xsync granted a third permit")
	}
	for _, p := range ps {
		if err := p.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// BenchmarkKeyed is core.NewLocalKeyed's acquire + release, one goroutine:
// on one hot key, and on 1 000 keys in turn (the keyed lookup).
func BenchmarkKeyed(b *testing.B) {
	for _, keys := range []int{1, 1000} {
		b.Run("keys"+strconv.Itoa(keys), func(b *testing.B) {
			k := core.NewLocalKeyed(1)
			defer k.Close()
			pairs.Keyed(b, k, keys)
		})
	}
}
