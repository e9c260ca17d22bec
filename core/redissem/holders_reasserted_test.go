package redissem_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/internal/servertest"
	"github.com/distsem/distsem/internal/testwait"
)

// loseState deletes semaphore name's keys, as a failover to a replica that
// never had them would.
func loseState(t *testing.T, c *redis.Client, prefix, name string) {
	t.Helper()
	tag := prefix + "{" + name + "}:"
	if err := c.Del(context.Background(), tag+"m", tag+"h", tag+"q").Err(); err != nil {
		t.Fatal(err)
	}
}

// A permit whose grant the primary lost is re-asserted by its holder's
// process, with its token, and counts against the limit again.
func TestHoldersReassertedAfterStateLoss(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: servertest.RedisAddr(t)})
	defer c.Close()
	const name = "reassert-kept"
	opts := []redissem.Option{redissem.WithKeyPrefix("ra:"), redissem.WithDefaultLeaseTTL(600 * time.Millisecond)}
	a := redissem.New(c, name, 2, opts...)
	defer a.Close()
	ctx := context.Background()
	p, err := a.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	loseState(t, c, "ra:", name)
	testwait.Until(t, 5*time.Second, "the holder was not re-asserted", func() bool {
		st, err := a.Stats(ctx)
		return err == nil && st.InUse == 1
	})
	f, err := c.HGet(ctx, "ra:{"+name+"}:m", "#"+p.ID()).Result()
	if err != nil || !strings.HasPrefix(f, "h1:") || !strings.Contains(f, ":"+strconv.FormatInt(p.Token(), 10)+":") {
		t.Fatalf("holder record %q (%v), want weight 1 and token %d", f, err, p.Token())
	}
	c2 := redis.NewClient(&redis.Options{Addr: servertest.RedisAddr(t)})
	defer c2.Close()
	b := redissem.New(c2, name, 2, opts...)
	defer b.Close()
	q, err := b.TryAcquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if q.Token() <= p.Token() {
		t.Fatalf("token %d after the re-asserted %d: fencing broken", q.Token(), p.Token())
	}
	if _, err := b.TryAcquire(ctx); !errors.Is(err, core.ErrNoPermit) {
		t.Fatalf("a third permit of limit 2: %v, want ErrNoPermit", err)
	}
	select {
	case <-p.Lost():
		t.Fatal("the re-asserted permit was reported lost")
	default:
	}
	_ = q.Release(ctx)
	if err := p.Release(ctx); err != nil {
		t.Fatalf("releasing the re-asserted permit: %v", err)
	}
}

// If the new primary granted the permits meanwhile, re-asserting would
// exceed the limit: the permit is lost instead, and reported.
func TestReassertOverLimitLosesPermit(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: servertest.RedisAddr(t)})
	defer c.Close()
	const name = "reassert-over"
	var mu sync.Mutex
	var reported []error
	opts := []redissem.Option{redissem.WithKeyPrefix("ra:"), redissem.WithDefaultLeaseTTL(600 * time.Millisecond)}
	a := redissem.New(c, name, 1, append(opts, redissem.WithOnError(func(err error) {
		mu.Lock()
		reported = append(reported, err)
		mu.Unlock()
	}))...)
	defer a.Close()
	ctx := context.Background()
	p, err := a.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	loseState(t, c, "ra:", name)
	c2 := redis.NewClient(&redis.Options{Addr: servertest.RedisAddr(t)})
	defer c2.Close()
	b := redissem.New(c2, name, 1, opts...)
	defer b.Close()
	q, err := b.TryAcquire(ctx)
	if err != nil {
		t.Fatalf("the new primary's grant: %v", err)
	}
	defer q.Release(ctx)
	select {
	case <-p.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("a permit that could not be re-asserted was not reported lost")
	}
	st, err := b.Stats(ctx)
	if err != nil || st.InUse != 1 {
		t.Fatalf("in use %d (%v), want 1: the limit was exceeded", st.InUse, err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, e := range reported {
		if strings.Contains(e.Error(), "re-asserted") {
			return
		}
	}
	t.Fatalf("WithOnError got %v, want the failed re-assertion", reported)
}
