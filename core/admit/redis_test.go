package admit_test

import (
	"context"
	"crypto/rand"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core/admit"
	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/internal/servertest"
)

// With the Redis backend: a permit released through a Ticket goes back to
// Redis, even when the request's context is already cancelled, and a lease
// lost while the request ran is reported.
func TestRedisReleaseAndLost(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: servertest.RedisAddr(t)})
	prefix := "admittest:" + rand.Text()[:10] + ":"
	t.Cleanup(func() {
		ctx := context.Background()
		if keys, _ := rdb.Keys(ctx, prefix+"*").Result(); len(keys) > 0 {
			rdb.Del(ctx, keys...)
		}
		rdb.Close()
	})
	sem := redissem.NewKeyed(rdb, "admit", 1, redissem.WithKeyPrefix(prefix))
	rec := &recorder{}
	ctl := admit.New(sem, admit.WithObserver(rec))

	ctx, cancel := context.WithCancel(t.Context())
	tk, err := ctl.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ctl.Acquire(t.Context(), "k"); err == nil {
		t.Fatal("admitted past the limit")
	}
	cancel() // the client went away before the handler returned
	if err := tk.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if st, err := sem.Stats(t.Context(), "k"); err != nil || st.InUse != 0 {
		t.Fatalf("stats = %+v, %v; want nothing in use", st, err)
	}

	tk, err = ctl.Acquire(t.Context(), "k")
	if err != nil {
		t.Fatal(err)
	}
	sem.Close() // the lease is lost while the request runs
	tk.Release(t.Context())
	var lost int
	for _, e := range rec.events {
		if e.Kind == admit.EventLost {
			lost++
		}
	}
	if lost != 1 {
		t.Fatalf("EventLost reported %d times, want 1: %v", lost, rec.kinds())
	}
}
