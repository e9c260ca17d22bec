package redissem_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/internal/testwait"
)

// TestCrashReturnsPermits kills a child that holds every permit and has
// waiters queued; its permits must come back within lease TTL + 1s, and its
// waiters must leave the queue.
func TestCrashReturnsPermits(t *testing.T) {
	const ttl = time.Second
	prefix := uniquePrefix(t)
	cmd, sc := startChild(t, "crash", "PREFIX="+prefix, "NAME=crash", "LIMIT=2", "TTL="+ttl.String())
	if !sc.Scan() || sc.Text() != "ready" {
		t.Fatalf("child did not get ready: %q", sc.Text())
	}
	s := redissem.New(realClient(t), "crash", 2, redissem.WithKeyPrefix(prefix), redissem.WithDefaultLeaseTTL(ttl))
	defer s.Close()
	got := make(chan error, 1)
	var ctx context.Context
	var cancel context.CancelFunc
	start := make(chan struct{})
	go func() {
		<-start
		p, err := s.Acquire(ctx, core.WithWeight(2))
		if err == nil {
			err = p.Release(context.Background())
		}
		got <- err
	}()
	ctx, cancel = context.WithTimeout(context.Background(), ttl+time.Second)
	defer cancel()
	close(start)
	waitQueued(t, s, 3)
	killed := time.Now()
	ok(t, cmd.Process.Kill())
	if err := <-got; err != nil {
		t.Fatalf("permits not back within lease TTL + 1s of the kill: %v", err)
	}
	t.Logf("permits back %v after SIGKILL (lease TTL %v)", time.Since(killed), ttl)
	wantStats(t, s, 0, 0)
}

// TestDeadProcessWaitersSkipped kills a child whose waiter is queued at the
// head: the permit freed next must go to the live waiter behind it at once,
// not to the dead one (which would hold it for a whole lease, after staying
// queued for 2/3 of one).
func TestDeadProcessWaitersSkipped(t *testing.T) {
	const ttl = 30 * time.Second
	prefix := uniquePrefix(t)
	name := "dead-" + prefix
	c := realClient(t)
	s := redissem.New(c, "dead", 1, redissem.WithKeyPrefix(prefix), redissem.WithDefaultLeaseTTL(ttl))
	defer s.Close()
	ctx := context.Background()
	hp := acquire(t, s)
	cmd, _ := startChild(t, "queue", "PREFIX="+prefix, "NAME=dead", "LIMIT=1", "TTL="+ttl.String(), "CLIENT_NAME="+name)
	waitQueued(t, s, 1)
	got := make(chan error, 1)
	go func() {
		p, err := s.Acquire(ctx)
		if err == nil {
			err = p.Release(ctx)
		}
		got <- err
	}()
	waitQueued(t, s, 2)
	ok(t, cmd.Process.Kill())
	_ = cmd.Wait()
	// Redis has seen the child's connections close (an observation, not a
	// sleep): from then on its waiter has no listener.
	testwait.Until(t, time.Minute, "the killed child's connections are still open", func() bool {
		list, err := c.Do(ctx, "CLIENT", "LIST").Text()
		ok(t, err)
		return !strings.Contains(list, " name="+name+" ")
	})
	ok(t, hp.Release(ctx))
	within(t, 5*time.Second, "live waiter behind a dead one granted", func() error { return <-got })
	wantStats(t, s, 0, 0)
}
