package redissem_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/redissem"
)

// A coordinator acquires a permit and hands its ID to a worker, which
// adopts it (takes over its lease), lengthens the lease for long work and
// releases it when done. The two semaphore objects stand for two
// processes; miniredis stands in for a real server.
func ExampleSemaphore_Adopt() {
	m, _ := miniredis.Run()
	defer m.Close()
	client := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer client.Close()
	ctx := context.Background()

	coordinator := redissem.New(client, "subtasks", 4, redissem.WithDefaultLeaseTTL(time.Second))
	defer coordinator.Close()
	p, _ := coordinator.Acquire(ctx)
	id := p.ID() // passed to the worker, e.g. as an argument

	worker := redissem.New(client, "subtasks", 4)
	defer worker.Close()
	wp, err := worker.Adopt(ctx, id)
	if err != nil {
		return // core.ErrNotHeld: the lease ended before the worker started
	}
	_ = wp.SetLeaseTTL(ctx, time.Minute)
	fmt.Println("same grant:", wp.Token() == p.Token())

	<-p.Lost() // the coordinator's copy no longer holds it
	fmt.Println("coordinator's release:", errors.Is(p.Release(ctx), core.ErrNotHeld))
	fmt.Println("worker's release:", wp.Release(ctx))
	// Output:
	// same grant: true
	// coordinator's release: true
	// worker's release: <nil>
}
