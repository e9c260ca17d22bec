package redissem_test

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/redissem"
)

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

// Two semaphore objects with the same name share one limit, as two
// processes would. (miniredis stands in for a real server here.)
func ExampleNew() {
	m, _ := miniredis.Run()
	defer m.Close()
	client := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer client.Close()

	a := redissem.New(client, "reports-db", 1)
	defer a.Close()
	b := redissem.New(client, "reports-db", 1)
	defer b.Close()

	ctx := context.Background()
	p, _ := a.Acquire(ctx)
	_, err := b.TryAcquire(ctx)
	fmt.Println("second holder refused:", errors.Is(err, core.ErrNoPermit))
	_ = p.Release(ctx)
	q, err := b.TryAcquire(ctx)
	fmt.Println("after release:", err == nil, q.Token() > p.Token())
	_ = q.Release(ctx)
	// Output:
	// second holder refused: true
	// after release: true true
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
