package promadmit_test

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/admit"
	"github.com/distsem/distsem/core/admit/promadmit"
)

func ExampleNew() {
	limits := map[string]int64{"GET /work": 2}
	sem := core.NewLocalKeyed(10, core.WithLimits(limits))

	// Only the keys of the overrides table get their own label value.
	col := promadmit.New(promadmit.WithKeys("GET /work"))
	reg := prometheus.NewRegistry()
	reg.MustRegister(col)

	ctl := admit.New(sem, admit.WithObserver(col))
	ctx := context.Background()
	t1, _ := ctl.Acquire(ctx, "GET /work")
	t2, _ := ctl.Acquire(ctx, "GET /work")
	_, err := ctl.Acquire(ctx, "GET /work")
	fmt.Println(err.(*admit.Rejection).Reason)
	t3, _ := ctl.Acquire(ctx, "GET /anything/else")

	fmt.Println(testutil.CollectAndCount(col, "distsem_admit_in_flight"), "in_flight series")
	t1.Release(ctx)
	t2.Release(ctx)
	t3.Release(ctx)
	// Output:
	// no_capacity
	// 2 in_flight series
}
