package redissem

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/internal/fair"
	"github.com/distsem/distsem/internal/servertest"
)

// flowFields returns the fields of S that flows keep (lib_fair.lua), by
// kind: ff (a flow's queue), qc (a queue's count), and the others.
func flowFields(t *testing.T, c redis.UniversalClient, s *Semaphore) map[string]int {
	t.Helper()
	n := map[string]int{}
	for f := range c.HGetAll(context.Background(), s.keys[0]).Val() {
		for _, k := range []string{"ff", "qc", "lw", "lu", "dq", "rr", "bq"} {
			if strings.HasPrefix(f, k) {
				n[k]++
			}
		}
	}
	return n
}

// queueRaw queues waiter id of flow at level with a lease of ttl ms by the
// acquire script alone, as a process that then dies would.
func queueRaw(ctx context.Context, s *Semaphore, id, flow string, level int, ttl int64) (reply, error) {
	hand := fair.Hand(flow, fair.Queues, fair.HandSize)
	h := strings.Trim(strings.Join(strings.Fields(fmt.Sprint(hand)), ","), "[]")
	return s.run(ctx, scriptAcquire, s.limit, id, int64(1), ttl, 0, int64(0), "0", "", "", flow, level, h, s.fairEnc)
}

// Distinct flow ids queued (20,000; DISTSEM_FLOWS_N=100000 for the
// figures of the package documentation) cost the waiters and at most the
// queues: the flows' map lives only while a flow has waiters, so once
// they leave, nothing per flow is left. The figures are logged.
func TestManyFlowIDsStateBounded(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: servertest.RedisAddr(t)})
	defer c.Close()
	ctx := context.Background()
	prefix := fmt.Sprintf("t%d-flows:", time.Now().UnixNano())
	s := New(c, "many", 1, WithKeyPrefix(prefix))
	defer s.Close()
	p, err := s.TryAcquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n := 20000
	if v, err := strconv.Atoi(os.Getenv("DISTSEM_FLOWS_N")); err == nil {
		n = v
	}
	for _, sc := range []*redis.Script{scriptAcquire, scriptRelease} {
		if err := sc.Load(ctx, c).Err(); err != nil {
			t.Fatal(err) // the pipelines send EVALSHA alone
		}
	}
	if _, err := queueRaw(ctx, s, "w.0", "flow-0", 0, 600000); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	for i := 1; i < n; i += 1000 {
		_, err := c.Pipelined(ctx, func(pl redis.Pipeliner) error {
			for j := i; j < min(i+1000, n); j++ {
				flow := "flow-" + strconv.Itoa(j)
				hand := fair.Hand(flow, fair.Queues, fair.HandSize)
				h := strings.Trim(strings.Join(strings.Fields(fmt.Sprint(hand)), ","), "[]")
				pl.EvalSha(ctx, scriptAcquire.Hash(), s.keys, s.limit, s.notify, "w."+strconv.Itoa(j), 1, 600000, 0, 0, "0", "", "", flow, 0, h, "")
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("queued in %v", time.Since(began))
	began = time.Now()
	st, err := s.Stats(ctx)
	t.Logf("stats in %v", time.Since(began))
	if err != nil || st.Waiting != int64(n) || st.Backlogged != fair.Queues {
		t.Fatalf("stats %+v, %v; want %d waiting in %d queues", st, err, n, fair.Queues)
	}
	fields := flowFields(t, c, s)
	if fields["ff"] != n || fields["qc"] != fair.Queues {
		t.Fatalf("flow fields %v: want one per waiting flow and one per queue", fields)
	}
	mem := map[string]int64{}
	for i, k := range []string{"S", "T", "W", "P", "Q"} {
		mem[k] = c.MemoryUsage(ctx, s.keys[i], 0).Val()
	}
	used := c.Info(ctx, "memory").Val()
	t.Logf("%d waiters of distinct flows: MEMORY USAGE S=%d T=%d Q=%d bytes (%.0f bytes per waiter); HLEN S=%d, ZCARD Q=%d; %s",
		n, mem["S"], mem["T"], mem["Q"], float64(mem["S"]+mem["T"]+mem["Q"])/float64(n), c.HLen(ctx, s.keys[0]).Val(),
		c.ZCard(ctx, s.keys[4]).Val(), infoLine(used, "used_memory_human"))
	// Every waiter leaves: no flow keeps anything.
	began = time.Now()
	for i := 0; i < n; i += 1000 {
		_, err := c.Pipelined(ctx, func(pl redis.Pipeliner) error {
			for j := i; j < min(i+1000, n); j++ {
				pl.EvalSha(ctx, scriptRelease.Hash(), s.keys, s.limit, s.notify, "w."+strconv.Itoa(j), 5000)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("left in %v", time.Since(began))
	if err := p.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if f := flowFields(t, c, s); len(f) != 0 {
		t.Fatalf("flow fields left after every waiter left: %v", f)
	}
	if z := c.ZCard(ctx, s.keys[4]).Val(); z != 1 {
		t.Fatalf("Q holds %d members after every waiter left, want the sentinel alone", z)
	}
	t.Logf("after they left: MEMORY USAGE Q=%d bytes, HLEN S=%d (tombstones until they expire)",
		c.MemoryUsage(ctx, s.keys[4], 0).Val(), c.HLen(ctx, s.keys[0]).Val())
}

func infoLine(info, field string) string {
	for l := range strings.Lines(info) {
		if strings.HasPrefix(l, field+":") {
			return strings.TrimSpace(l)
		}
	}
	return field + ": ?"
}

// A holder at a level and a waiter of a flow whose process died (their
// lease and liveness run out) leave nothing counted: the level's use, its
// waiters, the queue's count and the flow's map all go with them.
func TestFlowLeasesExpireCountsRight(t *testing.T) {
	c, m := miniClientMR(t)
	ctx := context.Background()
	s := New(c, "lapse", 2, WithFairness(core.Fairness{Reserves: []int64{0, 1}}))
	p1, err := s.TryAcquire(ctx, core.WithLevel(1), core.WithFlow("gone"), core.WithLeaseTTL(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	p2, err := s.TryAcquire(ctx, core.WithLeaseTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if r, err := queueRaw(ctx, s, "dead.1", "gone", 1, 300); err != nil || r.code != codeQueued {
		t.Fatalf("queue: %+v, %v", r, err)
	}
	st, err := s.Stats(ctx)
	if err != nil || st.Levels[1] != (core.LevelStats{InUse: 1, Waiting: 1}) || st.Backlogged != 1 {
		t.Fatalf("stats %+v, %v: want level 1 holding 1 with 1 waiting", st, err)
	}
	_ = s.Close() // as a crash: no release, no renewal
	_ = p1
	m.SetTime(time.Now().Add(time.Second))
	m.FastForward(time.Second)
	s2 := New(c, "lapse", 2)
	defer s2.Close()
	st, err = s2.Stats(ctx)
	want := core.Stats{Limit: 2, InUse: 1}
	want.Levels[0].InUse = 1
	if err != nil || st != want {
		t.Fatalf("stats %+v, %v after the lease and the waiter ran out; want %+v", st, err, want)
	}
	if f := flowFields(t, c, s2); len(f) != 0 {
		t.Fatalf("flow fields left: %v", f)
	}
	_ = p2
}

func miniClientMR(t *testing.T) (*redis.Client, *miniredis.Miniredis) {
	m := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	return c, m
}

// Q lost apart from the rest of the state (keys lost apart): the next
// check recounts the flows from what is left, the waiter it lost is told
// and queues again, and it is then granted as before.
func TestFlowQueuesLostApartRecounted(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: servertest.RedisAddr(t)})
	defer c.Close()
	ctx := context.Background()
	s := New(c, "apart", 1, WithKeyPrefix(fmt.Sprintf("t%d-apart:", time.Now().UnixNano())),
		WithFairness(core.Fairness{Reserves: []int64{0, 0}}))
	defer s.Close()
	p, err := s.TryAcquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		q, err := s.Acquire(ctx, core.WithFlow("tenant"), core.WithLevel(1))
		if err == nil {
			err = q.Release(ctx)
		}
		got <- err
	}()
	waitStats(t, s, func(st core.Stats) bool { return st.Levels[1].Waiting == 1 })
	c.Del(ctx, s.keys[4])
	// The waiter is evicted and queues again (its process is alive).
	waitStats(t, s, func(st core.Stats) bool { return st.Levels[1].Waiting == 1 && st.Backlogged == 1 })
	if err := p.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	waitStats(t, s, func(st core.Stats) bool { return st.InUse == 0 && st.Waiting == 0 })
	if f := flowFields(t, c, s); len(f) != 0 {
		t.Fatalf("flow fields left: %v", f)
	}
}

// waitStats polls Stats until ok accepts them, for at most 10 s.
func waitStats(t *testing.T, s *Semaphore, ok func(core.Stats) bool) {
	t.Helper()
	var st core.Stats
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		var err error
		if st, err = s.Stats(context.Background()); err == nil && ok(st) {
			return
		}
	}
	t.Fatalf("stats %+v never reached the state wanted", st)
}
