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

// replicaPair starts a master and its replica, and returns once the
// replica acknowledges writes (WAIT), with a client of each.
func replicaPair(t *testing.T) (master, replica *servertest.RedisServer, mc, rc *redis.Client) {
	t.Helper()
	master = servertest.StartRedis(t, "--repl-diskless-sync-delay", "0")
	host, port, _ := strings.Cut(master.Addr(), ":")
	replica = servertest.StartRedis(t, "--replicaof", host, port)
	mc = redis.NewClient(&redis.Options{Addr: master.Addr()})
	rc = redis.NewClient(&redis.Options{Addr: replica.Addr()})
	t.Cleanup(func() { mc.Close(); rc.Close() })
	servertest.AwaitReplicaAck(t, mc, "replica-pair-ready", 20*time.Second)
	return master, replica, mc, rc
}

// used reads the permits in use that c's copy of semaphore name records.
func used(t *testing.T, c *redis.Client, name string) int64 {
	t.Helper()
	v, err := c.HGet(context.Background(), "distsem:{"+name+"}:m", "used").Result()
	if errors.Is(err, redis.Nil) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.ParseInt(v, 10, 64)
	return n
}

// acquireWhileHealthy acquires a permit of sem, whose replica is healthy,
// for a test's set-up. On a loaded machine the replica may miss a short
// WithReplicaAck timeout; the grant is then given back, and it tries again
// (at most 5 times).
func acquireWhileHealthy(t *testing.T, sem *redissem.Semaphore) *core.Permit {
	t.Helper()
	for try := 1; ; try++ {
		p, err := sem.Acquire(context.Background())
		if err == nil {
			return p
		}
		if !errors.Is(err, redissem.ErrReplicaAck) || try == 5 {
			t.Fatalf("Acquire with the replica healthy (try %d): %v", try, err)
		}
		t.Logf("try %d: %v", try, err)
	}
}

// errorLog collects what WithOnError reports.
type errorLog struct {
	mu   sync.Mutex
	errs []error
}

func (l *errorLog) add(err error) { l.mu.Lock(); l.errs = append(l.errs, err); l.mu.Unlock() }

func (l *errorLog) reset() { l.mu.Lock(); l.errs = nil; l.mu.Unlock() }

func (l *errorLog) has(target error) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.errs {
		if errors.Is(e, target) {
			return true
		}
	}
	return false
}

// With WithReplicaAck(1, …) a grant and a release are on the replica by
// the time Acquire and Release return.
func TestReplicaAckWriteIsOnReplicaWhenCallReturns(t *testing.T) {
	_, _, mc, rc := replicaPair(t)
	// The replica is healthy: a generous timeout, as a loaded machine may
	// take a while to schedule it.
	sem := redissem.New(mc, "ack-on-replica", 2, redissem.WithReplicaAck(1, 4*time.Second), redissem.WithOperationTimeout(5*time.Second))
	defer sem.Close()
	ctx := context.Background()
	for range 20 {
		p, err := sem.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n := used(t, rc, "ack-on-replica"); n != 1 {
			t.Fatalf("the replica has %d permits in use when Acquire returned, want 1", n)
		}
		if err := p.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if n := used(t, rc, "ack-on-replica"); n != 0 {
			t.Fatalf("the replica has %d permits in use when Release returned, want 0", n)
		}
	}
}

// A grant that no replica acknowledges in time is given back, and Acquire
// fails with an error that wraps ErrReplicaAck and core.ErrUnavailable
// (the default policy fails closed); a release counts, reported through
// WithOnError.
func TestReplicaAckShortfall(t *testing.T) {
	_, replica, mc, _ := replicaPair(t)
	var log errorLog
	sem := redissem.New(mc, "ack-short", 2, redissem.WithReplicaAck(1, 200*time.Millisecond), redissem.WithOnError(log.add))
	defer sem.Close()
	ctx := context.Background()
	held := acquireWhileHealthy(t, sem)
	log.reset() // only what follows the stall counts
	replica.Pause()
	defer replica.Resume()
	_, err := sem.Acquire(ctx)
	if !errors.Is(err, redissem.ErrReplicaAck) || !errors.Is(err, core.ErrUnavailable) {
		t.Fatalf("Acquire with the replica stalled: %v, want an error wrapping ErrReplicaAck and ErrUnavailable", err)
	}
	if err := held.Release(ctx); err != nil {
		t.Fatalf("Release with the replica stalled: %v, want nil (the master has it)", err)
	}
	testwait.Until(t, 5*time.Second, "the unacknowledged grant was not given back", func() bool {
		return used(t, mc, "ack-short") == 0
	})
	if !log.has(redissem.ErrReplicaAck) {
		t.Fatal("WithOnError was not told of the shortfall")
	}
}

// A hand-off to a waiter in another process is announced only once a
// replica has it: while the replica is stalled the waiter is not granted;
// once it is back, it is.
func TestReplicaAckHandOffWaitsForReplica(t *testing.T) {
	ctx := context.Background()
	replica, p, got := queuedHandOff(t, "ack-handoff", redissem.WithReplicaAck(1, 150*time.Millisecond), redissem.WithDefaultLeaseTTL(time.Second))
	replica.Pause()
	if err := p.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// An observation window, not a synchronisation: several heartbeats of
	// the waiter (every 333 ms) run in it, none acknowledged.
	select {
	case r := <-got:
		t.Fatalf("the waiter was granted (%v) while the replica was stalled", r.err)
	case <-time.After(1500 * time.Millisecond):
	}
	replica.Resume()
	select {
	case r := <-got:
		if r.err != nil {
			t.Fatalf("the waiter failed after the replica came back: %v", r.err)
		}
		_ = r.p.Release(ctx)
	case <-time.After(15 * time.Second):
		t.Fatal("the waiter was not granted after the replica came back")
	}
}

// A hand-off that WAIT did not confirm is announced as soon as a later WAIT
// does (the releasing process tries again), well before the waiter's
// heartbeat (a third of its 30 s lease) would.
func TestReplicaAckHandOffAnnouncedOnceReplicaCatchesUp(t *testing.T) {
	ctx := context.Background()
	replica, p, granted := queuedHandOff(t, "ack-later", redissem.WithReplicaAck(1, 100*time.Millisecond), redissem.WithDefaultLeaseTTL(30*time.Second))
	got := make(chan error, 1)
	go func() {
		r := <-granted
		if r.err == nil {
			r.err = r.p.Release(ctx)
		}
		got <- r.err
	}()
	replica.Pause()
	if err := p.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select { // an observation window, not a synchronisation
	case err := <-got:
		t.Fatalf("the waiter was granted (%v) while the replica was stalled", err)
	case <-time.After(300 * time.Millisecond):
	}
	replica.Resume()
	resumed := time.Now()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("granted %v after the replica came back", time.Since(resumed))
	case <-time.After(5 * time.Second):
		t.Fatal("the hand-off was not announced within 5s of the replica coming back (the heartbeat is 10s away)")
	}
}

// handOffResult is what the queued Acquire of queuedHandOff got.
type handOffResult struct {
	p   *core.Permit
	err error
}

// queuedHandOff starts a master with a replica and two processes sharing
// semaphore name of limit 1 (opts): the first holds the permit it returns,
// the second's Acquire (20 s timeout) is queued, and its result arrives on
// the channel. It returns the replica to stall.
func queuedHandOff(t *testing.T, name string, opts ...redissem.Option) (*servertest.RedisServer, *core.Permit, <-chan handOffResult) {
	t.Helper()
	_, replica, mc, _ := replicaPair(t)
	c2 := redis.NewClient(&redis.Options{Addr: mc.Options().Addr})
	t.Cleanup(func() { _ = c2.Close() })
	a := redissem.New(mc, name, 1, opts...)
	b := redissem.New(c2, name, 1, opts...)
	t.Cleanup(func() { _ = b.Close(); _ = a.Close() })
	ctx := context.Background()
	p := acquireWhileHealthy(t, a)
	got := make(chan handOffResult, 1)
	go func() {
		actx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		q, err := b.Acquire(actx)
		got <- handOffResult{q, err}
	}()
	testwait.Until(t, 5*time.Second, "the second Acquire did not queue", func() bool {
		st, err := a.Stats(ctx)
		return err == nil && st.Waiting == 1
	})
	return replica, p, got
}
