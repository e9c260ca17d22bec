package core_test

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/distsem/distsem/core"
)

// A handler holds a permit of a reentrant semaphore of one permit and calls
// a helper that acquires the same semaphore: the helper's Acquire nests in
// the handler's permit instead of waiting for it forever.
func ExampleReentrant() {
	backend := core.NewLocal(1)
	sem := core.Reentrant(backend)
	ctx := context.Background()

	helper := func(ctx context.Context) {
		p, err := sem.Acquire(ctx) // nested: returns at once
		if err != nil {
			fmt.Println(err)
			return
		}
		defer p.Release(ctx) // does nothing: the outer permit stays held
		fmt.Println("helper runs with token", p.Token() == core.PermitFromContext(ctx).Token())
	}

	p, err := sem.Acquire(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	helper(core.ContextWithPermit(ctx, p))
	st, _ := backend.Stats(ctx)
	fmt.Println("in use after the helper:", st.InUse)
	_ = p.Release(ctx)
	st, _ = backend.Stats(ctx)
	fmt.Println("in use after the outer release:", st.InUse)
	// Output:
	// helper runs with token true
	// in use after the helper: 1
	// in use after the outer release: 0
}

// At most two of the five workers run at once.
func ExampleNewLocal() {
	sem := core.NewLocal(2)
	ctx := context.Background()
	var wg sync.WaitGroup
	for range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := sem.Acquire(ctx)
			if err != nil {
				return
			}
			defer p.Release(ctx)
			// ... work ...
		}()
	}
	wg.Wait()
	st, _ := sem.Stats(ctx)
	fmt.Println("in use after all workers:", st.InUse)
	// Output: in use after all workers: 0
}

// Per-route limits: a default for every key, and overrides.
func ExampleNewLocalKeyed() {
	routes := core.NewLocalKeyed(10, core.WithLimits(map[string]int64{"/export": 1}))
	defer routes.Close()
	ctx := context.Background()
	p, _ := routes.Acquire(ctx, "/export")
	_, err := routes.TryAcquire(ctx, "/export")
	fmt.Println("/export full:", errors.Is(err, core.ErrNoPermit))
	q, err := routes.TryAcquire(ctx, "/search")
	fmt.Println("/search free:", err == nil)
	_ = p.Release(ctx)
	_ = q.Release(ctx)
	// Output:
	// /export full: true
	// /search free: true
}
