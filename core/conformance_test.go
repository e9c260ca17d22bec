package core_test

import (
	"context"
	"testing"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/semtest"
)

// keyedOne is one key of a keyed semaphore, seen as a semaphore.
type keyedOne struct {
	k   *core.Keyed
	key string
}

func (s keyedOne) Acquire(ctx context.Context, o ...core.AcquireOption) (*core.Permit, error) {
	return s.k.Acquire(ctx, s.key, o...)
}

func (s keyedOne) TryAcquire(ctx context.Context, o ...core.AcquireOption) (*core.Permit, error) {
	return s.k.TryAcquire(ctx, s.key, o...)
}

func (s keyedOne) Stats(ctx context.Context) (core.Stats, error) { return s.k.Stats(ctx, s.key) }

func (s keyedOne) SetLimit(ctx context.Context, n int64) error { return s.k.SetLimit(ctx, s.key, n) }

func (s keyedOne) Close() error { return s.k.Close() }

// TestConformance runs the conformance suite on the in-process semaphore,
// plain, keyed, and behind the reentrant wrapper.
func TestConformance(t *testing.T) {
	for _, b := range []semtest.Backend{
		{Name: "local", New: func(t *testing.T, limit int64) semtest.Sem {
			s := core.NewLocal(limit)
			t.Cleanup(func() { _ = s.Close() })
			return s
		}},
		{Name: "local-keyed", New: func(t *testing.T, limit int64) semtest.Sem {
			k := core.NewLocalKeyed(limit)
			t.Cleanup(func() { _ = k.Close() })
			return keyedOne{k, "GET /reports"}
		}},
	} {
		t.Run(b.Name, func(t *testing.T) { semtest.Run(t, b) })
	}
}
