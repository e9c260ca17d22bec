package otelsem_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/admit"
	"github.com/distsem/distsem/core/otelsem"
	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/httpmw"
	"github.com/distsem/distsem/internal/servertest"
)

// On a real redis-server, a request through httpmw queues behind a permit
// that another process holds, then loses its lease while the handler
// runs: the wait is a span of the request's server span, and the loss an
// event on that span.
func TestRedisWaitAndLostLease(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: servertest.RedisAddr(t)})
	defer rdb.Close()
	prefix := fmt.Sprintf("otelsem-%d:", time.Now().UnixNano())
	t.Cleanup(func() { dropAll(rdb, prefix) })

	tel := newTelemetry(otelsem.WithKeys("api"))
	queued, lost := make(chan struct{}), make(chan struct{})
	obs := signal(tel.obs, map[core.EventKind]chan struct{}{core.EventWait: queued, core.EventLost: lost})
	ttl := redissem.WithDefaultLeaseTTL(300 * time.Millisecond)
	sem := redissem.New(rdb, "api", 1, redissem.WithKeyPrefix(prefix), redissem.WithObserver(obs), ttl)
	defer sem.Close()
	other := redissem.New(rdb, "api", 1, redissem.WithKeyPrefix(prefix), ttl) // another process
	defer other.Close()

	running, id := make(chan struct{}), make(chan string, 1)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id <- core.PermitFromContext(r.Context()).ID()
		close(running)
		select {
		case <-core.PermitFromContext(r.Context()).Lost():
		case <-time.After(10 * time.Second):
			t.Error("the lease was not lost after its permit was released by id")
			return
		}
		<-lost // reported before Lost closed
	})
	held, err := other.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		<-queued
		held.Release(context.Background())
		<-running
		// Another process releases the permit by its id, as an operator
		// would: its holder learns at its next renewal that it lost it.
		if err := other.ReleaseID(context.Background(), <-id); err != nil {
			t.Error(err)
		}
	}()
	if code := tel.get(t, httpmw.Handler(handler, admit.Global(sem), httpmw.WithMaxWait(time.Minute)), "/"); code != http.StatusOK {
		t.Fatalf("status %d", code)
	}

	tel.wantTree(t, ""+
		"test\n"+
		"  HTTP GET (client)\n"+
		"    GET (server) [distsem.lease_lost]\n"+
		"      distsem.wait\n")
	tel.queuedWait(t, "api")
	if p, _ := tel.metric(t, "distsem.sem.lost_leases", "distsem.semaphore=api"); p.value != 1 {
		t.Errorf("lost_leases{api} = %v, want 1", p.value)
	}
}

// dropAll deletes every key that starts with prefix.
func dropAll(rdb *redis.Client, prefix string) {
	ctx := context.Background()
	if keys, _ := rdb.Keys(ctx, prefix+"*").Result(); len(keys) > 0 {
		rdb.Del(ctx, keys...)
	}
}
