package redissem_test

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/redissem"
)

// TestLeasedRotation: limit 1, two processes that both always want it.
// Integer shares cannot be equal, so the share must rotate: both get
// grants (counted, not timed).
func TestLeasedRotation(t *testing.T) {
	c, _ := miniClient(t)
	var counts [2]atomic.Int64
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range 2 {
		s := redissem.NewLeased(c, "rot", 1)
		defer s.Close()
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for counts[0].Load() < 20 || counts[1].Load() < 20 {
					p, err := s.Acquire(ctx)
					if err != nil {
						t.Errorf("process %d: %v", i, err)
						return
					}
					counts[i].Add(1)
					ok(t, p.Release(context.Background()))
				}
			}()
		}
	}
	wg.Wait()
	t.Logf("grants per process: %d, %d", counts[0].Load(), counts[1].Load())
}

// shareScript runs lua/share.lua as the Go code does, for a process whose
// demand beyond keep is callers of weight 1 queued locally.
func shareScript(t *testing.T, c *redis.Client, pid, op string, demand, keep int64) []int64 {
	t.Helper()
	waiting, need := max(0, demand-keep), min(1, max(0, demand-keep))
	con, err := os.ReadFile("lua/const.lua")
	ok(t, err)
	queue, err := os.ReadFile("lua/share_queue.lua")
	ok(t, err)
	entry, err := os.ReadFile("lua/share_entry.lua")
	ok(t, err)
	src, err := os.ReadFile("lua/share.lua")
	ok(t, err)
	v, err := redis.NewScript(string(con)+string(queue)+string(entry)+string(src)).Run(context.Background(), c, []string{"x{s}:ls"},
		4, pid, op, demand, keep, 0, 10000, 0, 200, waiting, need).Int64Slice()
	ok(t, err)
	return v
}

// TestLeasedScriptIdempotentAndFair: a retried beat does not count a share
// twice; the shares never sum above the limit; a process grows only into
// free capacity; one that its share cannot serve is queued (starved) and
// told nothing else, and the holders learn of it (contended); a unit given
// back goes to it by hand-off.
func TestLeasedScriptIdempotentAndFair(t *testing.T) {
	c, _ := miniClient(t)
	a1 := shareScript(t, c, "a", "beat", 10, 0)
	a2 := shareScript(t, c, "a", "beat", 10, 0) // a retried copy
	if a1[1] != 4 || a2[1] != 4 || a2[0] != 1 {
		t.Fatalf("alone with demand 10: share %d then %d (code %d), want 4 twice", a1[1], a2[1], a2[0])
	}
	b := shareScript(t, c, "b", "beat", 1, 0)
	if b[1] != 0 || b[12] != 0 {
		t.Fatalf("b: share %d, contended %d; want 0 (no free capacity), and nobody else starved", b[1], b[12])
	}
	// a keeps 4 in use: it may not shrink below that yet; b starves.
	a3 := shareScript(t, c, "a", "beat", 10, 4)
	if a3[1] != 4 || a3[12] != 1 {
		t.Fatalf("a in use 4: share %d, contended %d; want 4 and 1", a3[1], a3[12])
	}
	// a gives one back: b, at the head of the queue, gets it.
	a4 := shareScript(t, c, "a", "beat", 10, 3)
	b2 := shareScript(t, c, "b", "beat", 1, 1)
	b3 := shareScript(t, c, "b", "beat", 1, 1)
	if a4[1] != 3 || b2[1] != 1 || b3[1] != 1 || b2[11] != b3[11] {
		t.Fatalf("shares a %d, b %d then %d (versions %d, %d); want 3, 1, 1 and one version", a4[1], b2[1], b3[1], b2[11], b3[11])
	}
	if st := shareScript(t, c, "z", "stats", 0, 0); st[2] != 4 {
		t.Fatalf("stats limit %d, want 4", st[2])
	}
}

// TestLeasedHeavyWeightGetsItsTurn: limit 4, one process keeps 4 callers of
// weight 1 busy, another asks for weight 4, more than its fair share of 2.
// It must get it (the heavy process's turn), not wait for the other's
// demand to end.
func TestLeasedHeavyWeightGetsItsTurn(t *testing.T) {
	c, _ := miniClient(t)
	a := redissem.NewLeased(c, "heavy", 4)
	defer a.Close()
	b := redissem.NewLeased(c, "heavy", 4)
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	actx, stop := context.WithCancel(ctx)
	busy := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	var grants atomic.Int64
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				p, err := a.Acquire(actx)
				if err != nil {
					return
				}
				if grants.Add(1) == 100 {
					once.Do(func() { close(busy) }) // a holds the whole limit by now
				}
				ok(t, p.Release(context.Background()))
			}
		}()
	}
	<-busy
	p, err := b.Acquire(ctx, core.WithWeight(4))
	stop()
	wg.Wait()
	if err != nil {
		t.Fatalf("weight 4 against a busy process: %v", err)
	}
	ok(t, p.Release(context.Background()))
}
