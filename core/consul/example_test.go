package consul_test

import (
	"context"
	"fmt"
	"log"

	"github.com/hashicorp/consul/api"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/consul"
)

// At most 8 report queries run at once across the fleet; the token fences
// writes of a holder whose session ended while it was paused.
func Example() {
	client, err := api.NewClient(api.DefaultConfig()) // CONSUL_HTTP_ADDR, default 127.0.0.1:8500
	if err != nil {
		log.Fatal(err)
	}
	sem := consul.New(client, "reports-db", 8, core.WithOnError(func(err error) { log.Print(err) }))
	defer sem.Close()

	ctx := context.Background()
	p, err := sem.Acquire(ctx, core.WithWeight(2))
	if err != nil {
		log.Fatal(err)
	}
	defer p.Release(context.WithoutCancel(ctx))
	fmt.Println("run the report with fencing token", p.Token())
}
