package redissem_test

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/redissem"
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

// A lock over three independent Redis masters, as Redlock: a majority must
// grant it, so it survives the loss of one. Check the token at the resource
// and stop when Lost closes.
func ExampleNewQuorum() {
	var masters []redis.UniversalClient
	for _, addr := range []string{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"} {
		masters = append(masters, redis.NewClient(&redis.Options{Addr: addr}))
	}
	lock := redissem.NewQuorum(masters, "nightly-report", 1)
	defer lock.Close()

	ctx := context.Background()
	p, err := lock.Acquire(ctx)
	if err != nil {
		return
	}
	defer p.Release(context.WithoutCancel(ctx))
	select {
	case <-p.Lost(): // fewer than a majority still keep the lease: stop
	default:
		// write to the resource with p.Token(); it refuses older tokens
	}
}
