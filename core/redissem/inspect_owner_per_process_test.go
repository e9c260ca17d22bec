package redissem_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/core/semtest"
	"github.com/distsem/distsem/internal/servertest"
)

// Inspect names each holder and waiter by the owner of its process: one
// record per process, not per permit, and a note per permit.
func TestInspectOwnerPerProcess(t *testing.T) {
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: servertest.RedisAddr(t)})
	defer c.Close()
	prefix := fmt.Sprintf("owner%d:", time.Now().UnixNano())
	a := redissem.New(c, "jobs", 2, redissem.WithKeyPrefix(prefix), redissem.WithOwner("pod-a"))
	b := redissem.New(c, "jobs", 2, redissem.WithKeyPrefix(prefix), redissem.WithOwner("pod-b"))
	none := redissem.New(c, "jobs", 2, redissem.WithKeyPrefix(prefix), redissem.WithOwner(""))
	defer a.Close()
	defer b.Close()
	defer none.Close()

	p1, err := a.Acquire(ctx)
	ok(t, err)
	p2, err := a.Acquire(ctx, core.WithNote("backup of db-3"))
	ok(t, err)
	done := make(chan error, 2)
	for _, s := range []*redissem.Semaphore{b, none} {
		go func() {
			p, err := s.Acquire(ctx)
			if err == nil {
				err = p.Release(ctx)
			}
			done <- err
		}()
	}
	semtest.WaitQueued(t, a, 2)

	snap, err := a.Inspect(ctx, 10)
	ok(t, err)
	if len(snap.Holders) != 2 || len(snap.Waiters) != 2 {
		t.Fatalf("snapshot %+v: want 2 holders and 2 waiters", snap)
	}
	for _, h := range snap.Holders {
		want := ""
		if h.ID == p2.ID() {
			want = "backup of db-3"
		}
		if h.Owner != "pod-a" || h.Note != want {
			t.Errorf("holder %+v: want owner pod-a, note %q", h, want)
		}
	}
	owners := []string{snap.Waiters[0].Owner, snap.Waiters[1].Owner}
	if strings.Join(owners, ",") != "pod-b," && strings.Join(owners, ",") != ",pod-b" {
		t.Errorf("waiters %+v: want one of pod-b and one with no owner", snap.Waiters)
	}
	// One owner record per process that gave an owner: a's and b's.
	n := 0
	for f, v := range c.HGetAll(ctx, prefix+"{jobs}:m").Val() {
		if strings.HasPrefix(f, "#") && strings.HasPrefix(v, "o") {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d owner records, want 2", n)
	}
	ok(t, p1.Release(ctx))
	ok(t, p2.Release(ctx))
	for range 2 {
		ok(t, <-done)
	}
}
