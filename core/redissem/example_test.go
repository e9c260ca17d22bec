package redissem_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/redissem"
)

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
