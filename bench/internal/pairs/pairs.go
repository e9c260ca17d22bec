// Package pairs holds the loops of the acquire + release micro-benchmarks
// (bench/local, bench/redisbench), so that every backend is measured by
// the same code.
package pairs

import (
	"context"
	"strconv"
	"testing"

	"github.com/distsem/distsem/core"
)

// Loop runs b.N acquire + release pairs of s, one at a time.
func Loop(b *testing.B, s core.Semaphore) {
	ctx := context.Background()
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
}

// Keyed runs b.N acquire + release pairs of k, one at a time, on keys
// "k0" … "k<n-1>" in turn.
func Keyed(b *testing.B, k core.KeyedSemaphore, n int) {
	ctx := context.Background()
	names := make([]string, n)
	for i := range names {
		names[i] = "k" + strconv.Itoa(i)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		p, err := k.Acquire(ctx, names[i%n])
		if err != nil {
			b.Fatal(err)
		}
		if err := p.Release(ctx); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
