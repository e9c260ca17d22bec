package adaptive_test

import (
	"context"
	"fmt"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/adaptive"
)

// An in-process semaphore whose limit adapts; a network semaphore takes
// redisstore.New(client, name) in place of the MemStore.
func ExampleNew() {
	sem := core.NewLocal(16)
	lim, err := adaptive.New(sem, &adaptive.MemStore{}, adaptive.WithBounds(2, 64))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer lim.Close()

	ctx := context.Background()
	p, err := lim.Acquire(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	err = queryTheDatabase()
	// The permit's hold time is the sample's latency; the outcome says
	// whether the database was in trouble.
	_ = p.Release(adaptive.ContextWithOutcome(ctx, adaptive.OutcomeOf(err)))
	fmt.Println("query done")

	_, err = adaptive.New(sem, &adaptive.MemStore{}, adaptive.WithBounds(8, 2))
	fmt.Println(err)
	// Output:
	// query done
	// core: invalid argument: adaptive: lower bound 8 is above the upper bound 2
}

func queryTheDatabase() error { return nil }
