package consul_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/adaptive"
	"github.com/distsem/distsem/core/adaptive/redisstore"
	"github.com/distsem/distsem/core/consul"
	"github.com/distsem/distsem/internal/servertest"
	"github.com/distsem/distsem/internal/testwait"
)

// The adaptive limit on a Consul semaphore, its windows in Redis: three
// processes, each with its own Consul client, semaphore, Redis client and
// Limiter. The controller moves the limit stored in Consul, one process
// computes each window, and every process's semaphore sees the limit of
// the last decision. Waits are on events, never on the clock.
func TestAdaptiveLimitMovesTheConsulLimitEveryProcessSees(t *testing.T) {
	prefix := uniquePrefix()
	name := strings.TrimSuffix(prefix, "/") // unique in Redis too
	type decision struct {
		proc int
		e    adaptive.Event
	}
	events := make(chan decision, 1024)
	sems := make([]*consul.Semaphore, 3)
	lims := make([]*adaptive.Limiter, 3)
	for i := range sems {
		sems[i] = consul.New(newClient(t), name, 8, core.WithKeyPrefix(prefix))
		rc := redis.NewClient(&redis.Options{Addr: servertest.RedisAddr(t)})
		t.Cleanup(func() { rc.Close() })
		obs := adaptive.ObserverFunc(func(e adaptive.Event) {
			if e.Kind == adaptive.EventDecision {
				events <- decision{i, e}
			}
		})
		l, err := adaptive.New(sems[i], redisstore.New(rc, name), adaptive.WithWindow(100*time.Millisecond),
			adaptive.WithMinSamples(1), adaptive.WithObserver(obs))
		ok(t, err)
		lims[i] = l
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for _, l := range lims {
		wg.Go(func() {
			for ctx.Err() == nil {
				p, err := l.Acquire(ctx)
				if err != nil {
					continue
				}
				_ = p.Release(ctx)
			}
		})
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			wg.Wait()
			for _, l := range lims {
				l.Close()
			}
		}
	}
	defer func() {
		stop()
		for _, s := range sems {
			s.Close()
		}
	}()
	by := map[int64]int{}
	var last decision
	moved := false
	for len(by) < 8 {
		d := <-events
		if p, dup := by[d.e.Window]; dup {
			t.Fatalf("window %d computed by processes %d and %d", d.e.Window, p, d.proc)
		}
		by[d.e.Window], last = d.proc, d
		moved = moved || d.e.Limit != d.e.Previous
	}
	stop()
	for len(events) > 0 {
		last = <-events
	}
	if !moved {
		t.Errorf("no decision of %d moved the limit", len(by))
	}
	for i, s := range sems {
		testwait.Until(t, 10*time.Second, fmt.Sprintf("process %d sees limit %d", i, last.e.Limit), func() bool {
			st, err := s.Stats(t.Context())
			return err == nil && st.Limit == last.e.Limit
		})
	}
}
