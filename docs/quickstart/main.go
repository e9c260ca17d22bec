package main

import (
	"context"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core/redissem"
)

func main() {
	srv, err := miniredis.Run() // an embedded Redis; in production, your own
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	client := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	sem := redissem.New(client, "reports-db", 2) // 2 at once, in every process that uses "reports-db"
	defer sem.Close()

	ctx := context.Background()
	var wg sync.WaitGroup
	for job := range 5 {
		wg.Go(func() {
			p, err := sem.Acquire(ctx) // waits, in FIFO order, for a free permit
			if err != nil {
				log.Fatal(err)
			}
			defer p.Release(ctx)
			if st, err := sem.Stats(ctx); err == nil {
				fmt.Printf("job %d runs, %d of %d permits in use\n", job, st.InUse, st.Limit)
			}
			time.Sleep(50 * time.Millisecond) // the work
		})
	}
	wg.Wait()
}
