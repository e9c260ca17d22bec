package backend_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/backend"
)

// chanSem is a toy backend: a buffered channel of slots, in process. A real
// backend keeps its state elsewhere (core/redissem, core/consul) but builds
// its permits the same way.
type chanSem struct {
	slots  chan struct{}
	cfg    backend.Config
	tokens atomic.Int64
}

func newChanSem(limit int, opts ...core.Option) *chanSem {
	return &chanSem{slots: make(chan struct{}, limit), cfg: backend.ResolveOptions(opts...)}
}

func (s *chanSem) Acquire(ctx context.Context, opts ...core.AcquireOption) (*core.Permit, error) {
	return s.acquire(ctx, false, opts)
}

func (s *chanSem) TryAcquire(ctx context.Context, opts ...core.AcquireOption) (*core.Permit, error) {
	return s.acquire(ctx, true, opts)
}

func (s *chanSem) acquire(ctx context.Context, try bool, opts []core.AcquireOption) (*core.Permit, error) {
	spec, err := backend.ResolveAcquire(s.cfg.LeaseTTL, opts...)
	if err != nil {
		return nil, err
	}
	if err := spec.RefuseFlow("chanSem"); err != nil {
		return nil, err
	}
	if spec.Weight != 1 {
		return nil, fmt.Errorf("%w: chanSem grants one permit at a time", core.ErrInvalidArgument)
	}
	if try {
		select {
		case s.slots <- struct{}{}:
		default:
			return nil, fmt.Errorf("%w: chanSem", core.ErrNoPermit)
		}
	} else {
		select {
		case s.slots <- struct{}{}:
		case <-ctx.Done():
			return nil, backend.WaitError(ctx, "chanSem")
		}
	}
	return backend.NewPermit(s, backend.Grant{Weight: 1, Token: s.tokens.Add(1)}), nil
}

// ReleasePermit implements backend.Releaser: Permit.Release calls it once.
func (s *chanSem) ReleasePermit(context.Context, *core.Permit) error {
	<-s.slots
	return nil
}

// A backend hands out permits made by NewPermit; Release, tokens and
// core's wrappers, such as Reentrant, then work as on any backend.
func Example() {
	ctx := context.Background()
	sem := core.Reentrant(newChanSem(1))
	p, err := sem.Acquire(ctx)
	if err != nil {
		panic(err)
	}
	inner, _ := sem.Acquire(core.ContextWithPermit(ctx, p)) // nested: does not wait
	_, err = sem.TryAcquire(ctx)                            // another caller: the slot is taken
	fmt.Println(p.Token(), inner.Token(), errors.Is(err, core.ErrNoPermit))
	_ = inner.Release(ctx) // a nested Release does nothing
	_ = p.Release(ctx)
	_ = p.Release(ctx) // the backend's release runs once
	q, _ := sem.TryAcquire(ctx)
	fmt.Println(q.Token())
	// Output:
	// 1 1 true
	// 2
}
