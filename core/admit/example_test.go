package admit_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/admit"
)

func ExampleNew() {
	sem := core.NewLocalKeyed(10, core.WithLimits(map[string]int64{"GET /slow": 1}))
	ctl := admit.New(sem, admit.WithMaxWait(10*time.Millisecond))
	ctx := context.Background()

	t, err := ctl.Acquire(ctx, "GET /slow")
	if err != nil {
		panic(err)
	}
	_, err = ctl.Acquire(ctx, "GET /slow") // waits 10ms, then gives up
	var rej *admit.Rejection
	if errors.As(err, &rej) {
		fmt.Println(rej.Reason, errors.Is(err, core.ErrNoPermit))
	}
	t.Release(ctx)
	// Output: no_capacity true
}

func ExampleGlobal() {
	// One limit of 2 for every key.
	ctl := admit.New(admit.Global(core.NewLocal(2)))
	ctx := context.Background()
	a, _ := ctl.Acquire(ctx, "/a")
	b, _ := ctl.Acquire(ctx, "/b")
	_, err := ctl.Acquire(ctx, "/c")
	fmt.Println(err.(*admit.Rejection).Reason)
	a.Release(ctx)
	b.Release(ctx)
	// Output: no_capacity
}

func ExampleObserverFunc() {
	ctl := admit.New(core.NewLocalKeyed(1), admit.WithObserver(admit.ObserverFunc(func(e admit.Event) {
		if e.Kind == admit.EventRejected {
			fmt.Println(e.Kind, e.Key, e.Reason)
		} else {
			fmt.Println(e.Kind, e.Key)
		}
	})))
	ctx := context.Background()
	t, _ := ctl.Acquire(ctx, "k")
	ctl.Acquire(ctx, "k")
	t.Release(ctx)
	// Output:
	// admitted k
	// rejected k no_capacity
	// released k
}
