package main

import (
	"context"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/httpmw"
)

// The README's snippets, each between a "// snippet NAME" line and an
// "// end snippet" line, one tab deeper than in the README. The README
// names each one in a comment above its block; TestREADMESnippets checks
// that the two texts are equal, so that every snippet compiles here.

func localSnippet(ctx context.Context, work func(context.Context) error) error {
	// snippet local
	sem := core.NewLocal(4)    // at most 4 at once in this process
	p, err := sem.Acquire(ctx) // waits in FIFO order, or until ctx ends
	if err != nil {
		return err
	}
	defer p.Release(context.WithoutCancel(ctx))
	return work(ctx)
	// end snippet
}

func redisSnippet(ctx context.Context, addr string, write func(ctx context.Context, token int64, lost <-chan struct{}) error) error {
	// snippet redis
	client := redis.NewClient(&redis.Options{Addr: addr}) // or a Sentinel or Cluster client
	sem := redissem.New(client, "reports-db", 8)          // at most 8 at once, fleet-wide
	defer sem.Close()

	p, err := sem.Acquire(ctx)
	if err != nil {
		return err // core.ErrUnavailable if Redis failed (the default policy is core.FailClosed)
	}
	defer p.Release(context.WithoutCancel(ctx))
	// p.Token() is a fencing token; p.Lost() is closed if the lease is lost.
	return write(ctx, p.Token(), p.Lost())
	// end snippet
}

func httpSnippet(client redis.UniversalClient, export, users, healthz, metrics http.Handler) *http.ServeMux {
	// snippet httpmw
	routes := redissem.NewKeyed(client, "api", 64, // 64 at once per route, fleet-wide,
		redissem.WithLimits(map[string]int64{"GET /export": 2})) // but 2 for /export
	limit := httpmw.Limit(routes, httpmw.WithMaxWait(100*time.Millisecond),
		httpmw.WithFlow(func(r *http.Request) (string, int) { return r.Header.Get("X-Tenant"), 0 })) // fair between tenants

	mux := http.NewServeMux()
	mux.Handle("GET /export", limit(export)) // a request waits up to 100ms, then gets 429
	mux.Handle("GET /users/{id}", limit(users))
	mux.Handle("GET /healthz", healthz) // not limited: answers while Redis is down
	mux.Handle("GET /metrics", metrics)
	// end snippet
	return mux
}
