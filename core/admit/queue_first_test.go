package admit_test

import (
	"context"
	"errors"
	"math"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/admit"
)

// counting is a KeyedSemaphore that counts the calls made to it.
type counting struct {
	core.KeyedSemaphore
	tries, acquires atomic.Int64
}

func (c *counting) Acquire(ctx context.Context, key string, opts ...core.AcquireOption) (*core.Permit, error) {
	c.acquires.Add(1)
	return c.KeyedSemaphore.Acquire(ctx, key, opts...)
}

func (c *counting) TryAcquire(ctx context.Context, key string, opts ...core.AcquireOption) (*core.Permit, error) {
	c.tries.Add(1)
	return c.KeyedSemaphore.TryAcquire(ctx, key, opts...)
}

// A request that would queue behind another of its key waiting in this
// process joins the queue without trying first; one that names a flow,
// holds a permit or finds the queue full still tries.
func TestQueueBehindWaiterWithoutTry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sem := &counting{KeyedSemaphore: core.NewLocalKeyed(1)}
		rec := &recorder{}
		ctl := admit.New(sem, admit.WithMaxWait(time.Minute), admit.WithMaxWaiting(2), admit.WithObserver(rec))
		held, err := ctl.Acquire(t.Context(), "k")
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan admit.Ticket, 2)
		wait := func() {
			tk, err := ctl.Acquire(t.Context(), "k")
			if err != nil {
				t.Error(err)
			}
			done <- tk
		}
		go wait()
		synctest.Wait()
		if n := sem.tries.Load(); n != 2 {
			t.Fatalf("tries = %d, want 2: the holder's and the first waiter's", n)
		}
		go wait()
		synctest.Wait()
		if n := sem.tries.Load(); n != 2 {
			t.Fatalf("tries = %d, want still 2: the second waiter queues behind the first", n)
		}
		if n := ctl.Waiting("k"); n != 2 {
			t.Fatalf("waiting = %d, want 2", n)
		}

		// The queue is full: the next request tries, and is rejected.
		if _, err := ctl.Acquire(t.Context(), "k"); !errors.Is(err, admit.ErrTooManyWaiting) {
			t.Fatalf("with the queue full: %v, want ErrTooManyWaiting", err)
		}
		if n := sem.tries.Load(); n != 3 {
			t.Fatalf("tries = %d, want 3", n)
		}
		// A flow, or a permit held already, may be granted past the
		// waiters (fair queuing, re-entry): those still try first.
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		tries := sem.tries.Load()
		ctl.Acquire(core.ContextWithFlow(ctx, "tenant", 0), "k")
		ctl.Acquire(core.ContextWithPermit(ctx, held.Permit()), "k")
		if n := sem.tries.Load() - tries; n != 2 {
			t.Fatalf("tries by the flow and the nested request = %d, want 2", n)
		}

		held.Release(t.Context())
		for range 2 {
			tk := <-done
			tk.Release(t.Context())
		}
		queued := 0
		for _, k := range rec.kinds() {
			if k == admit.EventQueued {
				queued++
			}
		}
		if queued != 2 {
			t.Fatalf("EventQueued %d times, want 2: %v", queued, rec.kinds())
		}
		if n := ctl.Waiting("k"); n != 0 {
			t.Fatalf("waiting after = %d, want 0", n)
		}
	})
}

// With no bound on the wait or on the waiters, and no Observer to tell,
// whether a request waits makes no difference: it acquires without trying
// first, and a free permit is still granted at once.
func TestUnboundedWaitSkipsTry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sem := &counting{KeyedSemaphore: core.NewLocalKeyed(1)}
		ctl := admit.New(sem, admit.WithMaxWait(admit.WaitForever), admit.WithMaxWaiting(math.MaxInt))
		start := time.Now()
		tk, err := ctl.Acquire(t.Context(), "k")
		if err != nil {
			t.Fatal(err)
		}
		if time.Since(start) != 0 || sem.tries.Load() != 0 || sem.acquires.Load() != 1 {
			t.Fatalf("tries %d, acquires %d, waited %v: want one Acquire, at once",
				sem.tries.Load(), sem.acquires.Load(), time.Since(start))
		}
		tk.Release(t.Context())

		// An Observer is told whether a request queued: it tries first.
		obs := &counting{KeyedSemaphore: core.NewLocalKeyed(1)}
		ctl = admit.New(obs, admit.WithMaxWait(admit.WaitForever), admit.WithMaxWaiting(math.MaxInt),
			admit.WithObserver(&recorder{}))
		tk, err = ctl.Acquire(t.Context(), "k")
		if err != nil {
			t.Fatal(err)
		}
		tk.Release(t.Context())
		if obs.tries.Load() != 1 || obs.acquires.Load() != 0 {
			t.Fatalf("with an Observer: tries %d, acquires %d; want one try", obs.tries.Load(), obs.acquires.Load())
		}
	})
}
