package refsem

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// TestFIFOHandOff checks what the benchmarks rely on: the limit holds, a
// release hands the permit to the longest waiter, across processes.
func TestFIFOHandOff(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m := miniredis.RunT(t)
	procs := make([]*Process, 2)
	for i := range procs {
		c := redis.NewClient(&redis.Options{Addr: m.Addr()})
		t.Cleanup(func() { c.Close() })
		p, err := NewProcess(ctx, c, []string{"a", "b"}[i])
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		procs[i] = p
	}
	s0, s1 := procs[0].New("s", 1, time.Minute), procs[1].New("s", 1, time.Minute)
	rel, err := s0.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Three waiters, queued in a known order, from both processes.
	queued := make(chan struct{})
	queuedHook = func() { queued <- struct{}{} }
	defer func() { queuedHook = nil }()
	got := make(chan int, 3)
	var wg sync.WaitGroup
	defer wg.Wait()
	for i, s := range []*Sem{s1, s0, s1} {
		wg.Go(func() {
			r, err := s.Acquire(ctx)
			if err != nil {
				t.Error(err)
				got <- -1
				return
			}
			got <- i
			if err := r(ctx); err != nil {
				t.Error(err)
			}
		})
		<-queued
	}
	if err := rel(ctx); err != nil {
		t.Fatal(err)
	}
	for want := range 3 {
		if i := <-got; i != want {
			t.Fatalf("grant %d went to waiter %d, want FIFO", want, i)
		}
	}
}
