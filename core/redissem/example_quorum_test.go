package redissem_test

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core/redissem"
)

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
