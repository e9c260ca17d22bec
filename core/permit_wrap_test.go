package core_test

import (
	"context"
	"testing"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/backend"
)

// countingReleaser releases the inner permit and counts its calls.
type countingReleaser struct {
	inner *core.Permit
	calls int
}

func (r *countingReleaser) ReleasePermit(ctx context.Context, _ *core.Permit) error {
	r.calls++
	return r.inner.Release(ctx)
}

func TestWrapPermitStandsForInner(t *testing.T) {
	ctx := context.Background()
	sem := core.NewLocal(1)
	inner, err := sem.Acquire(ctx)
	ok(t, err)
	r := &countingReleaser{inner: inner}
	p := backend.WrapPermit(inner, r)
	if p.Token() != inner.Token() || p.Weight() != inner.Weight() || p.Lost() != inner.Lost() || p.ID() != inner.ID() {
		t.Fatalf("wrapped permit differs from inner: token %d/%d weight %d/%d", p.Token(), inner.Token(), p.Weight(), inner.Weight())
	}
	ok(t, p.Release(ctx))
	ok(t, p.Release(ctx))
	if r.calls != 1 || !inner.Released() {
		t.Fatalf("ReleasePermit calls = %d, inner released = %v; want 1, true", r.calls, inner.Released())
	}
	if _, err := sem.TryAcquire(ctx); err != nil {
		t.Fatalf("the inner permit was not given back: %v", err)
	}
}

func TestWrapPermitRefusesNil(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("WrapPermit(nil, r) did not panic")
		}
	}()
	backend.WrapPermit(nil, &countingReleaser{})
}
