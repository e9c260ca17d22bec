package faulttest

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core/internal/faultproxy"
	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/internal/servertest"
	"github.com/distsem/distsem/internal/testwait"
)

// TestStaleReplicaPromoted: Sentinel, with replication frozen (the
// replica's link to the master held by a proxy) while 2 processes × 4
// goroutines keep taking a semaphore of limit 4, each permit held 0.2–4 s
// (or until Permit.Lost), on leases of 10 s; then the master is killed and
// the stale replica promoted. The holds outlast the switch, so a grant that
// the promoted replica never had shows on the recorded timeline as more
// holders than the limit, unless its process re-asserted it in time (or
// lost it) first.
//
// With WithReplicaAck(1, …) no grant made during the freeze counts, and no
// hand-off is announced: the timeline never holds more than the limit.
// Without it, the figures say how many were held at once.
func TestStaleReplicaPromoted(t *testing.T) {
	t.Run("ack", func(t *testing.T) { staleReplicaPromoted(t, true) })
	t.Run("no-ack", func(t *testing.T) { staleReplicaPromoted(t, false) })
}

func staleReplicaPromoted(t *testing.T, ack bool) {
	var px *faultproxy.Proxy
	set := servertest.StartSentinel(t, servertest.WithReplicaLink(func(master string) string {
		var err error
		if px, err = faultproxy.Start(master); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { px.Close() })
		return px.Addr()
	}))
	const limit, procs, per = 4, 2, 4
	name := "stale-replica"
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	h := newHolds()
	for range procs {
		c := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: set.Master, SentinelAddrs: set.Addrs})
		opts := []redissem.Option{redissem.WithKeyPrefix("sr:"), redissem.WithDefaultLeaseTTL(10 * time.Second)}
		if ack {
			opts = append(opts, redissem.WithReplicaAck(1, 100*time.Millisecond))
		}
		sem := redissem.New(c, name, limit, opts...)
		t.Cleanup(func() { sem.Close(); c.Close() })
		h.run(ctx, sem, per)
	}
	testwait.Until(t, 30*time.Second, "no grant before the freeze", func() bool { return h.grants() >= limit })
	old, err := set.MasterAddr(ctx)
	if err != nil {
		t.Fatal(err)
	}
	px.SetHold(faultproxy.All, faultproxy.Downstream, true) // the replica hears nothing more
	frozen := time.Now()
	time.Sleep(2 * time.Second)   // the window in which grants go on, frozen
	px.SetMode(faultproxy.Refuse) // what it held is never delivered
	set.Kill(old)
	killed := time.Now()
	duringFreeze, calledInFreeze := h.grantsIn(frozen, killed)
	testwait.Until(t, 30*time.Second, "the sentinels did not name the new master", func() bool {
		a, err := set.MasterAddr(ctx)
		return err == nil && a != old
	})
	sw := time.Now()
	// The promoted replica has no replica of its own: a replacement comes,
	// as an operator's automation would bring one (WithReplicaAck(1, …)
	// grants nothing until then).
	nm, err := set.MasterAddr(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mc := redis.NewClient(&redis.Options{Addr: nm})
	defer mc.Close()
	if err := mc.ConfigSet(ctx, "repl-diskless-sync-delay", "0").Err(); err != nil {
		t.Fatal(err)
	}
	host, port, _ := strings.Cut(nm, ":")
	servertest.StartRedis(t, "--replicaof", host, port)
	time.Sleep(8 * time.Second) // the window measured after the switch: every hold from before ends in it
	end := time.Now()
	stop()
	h.wait(t)

	ivs, lost, ackErrs, errs := h.snapshot()
	after, _ := h.grantsIn(sw, end)

	var firstAfter time.Duration
	for _, a := range h.acq {
		if d := time.Duration(a[1] - sw.UnixNano()); d >= 0 && (firstAfter == 0 || d < firstAfter) {
			firstAfter = d
		}
	}
	over, _ := spans(ivs, limit, frozen.UnixNano(), time.Now().UnixNano())
	scenario := "stale-replica-no-ack"
	if ack {
		scenario = "stale-replica-ack"
	}
	figure(t, scenario, "limit", limit, "peak", peak(ivs), "over", over, "grants", len(ivs),
		"grants_during_freeze", duringFreeze, "switch", sw.Sub(killed), "lost", lost,
		"grants_after_switch", after, "first_grant_after_switch", firstAfter,
		"replica_ack_errors", ackErrs, "other_errors", errs)
	if len(h.errSample) > 0 {
		t.Logf("errors: %v", h.errSample)
	}
	if ack && peak(ivs) > limit {
		t.Errorf("over-admission with WithReplicaAck: %d permits held at once, limit %d (%v over)", peak(ivs), limit, over)
	}
	if after == 0 {
		t.Errorf("no grant in the %v after the switch", end.Sub(sw))
	}
	if ack && calledInFreeze > 0 {
		t.Errorf("%d Acquire calls made during the freeze returned a permit that no replica acknowledged", calledInFreeze)
	}
}

// holds is the workload of TestStaleReplicaPromoted: goroutines that
// acquire, hold for 0.2–4 s or until the permit is lost, and release,
// recording every hold on the machine's clock.
type holds struct {
	mu        sync.Mutex
	ivs       []interval
	lost      int
	ackErrs   int
	errs      int
	acq       [][2]int64 // per grant: UnixNano of the Acquire call and of its return
	errSample []string   // the first distinct errors
	wg        sync.WaitGroup
}

func newHolds() *holds { return &holds{} }

func (h *holds) run(ctx context.Context, sem *redissem.Semaphore, n int) {
	for range n {
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			for ctx.Err() == nil {
				actx, cancel := context.WithTimeout(ctx, 15*time.Second)
				called := time.Now().UnixNano()
				p, err := sem.Acquire(actx)
				cancel()
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					h.mu.Lock()
					if errors.Is(err, redissem.ErrReplicaAck) {
						h.ackErrs++
					} else {
						h.errs++
					}
					if len(h.errSample) < 4 && !slices.Contains(h.errSample, err.Error()) {
						h.errSample = append(h.errSample, err.Error())
					}
					h.mu.Unlock()
					time.Sleep(50 * time.Millisecond) // a client's back-off
					continue
				}
				from := time.Now().UnixNano()
				h.mu.Lock()
				h.acq = append(h.acq, [2]int64{called, from})
				h.mu.Unlock()
				wasLost := false
				t := time.NewTimer(time.Duration(200+rand.IntN(3800)) * time.Millisecond)
				select {
				case <-t.C:
				case <-p.Lost():
					wasLost = true
				case <-ctx.Done():
				}
				t.Stop()
				to := time.Now().UnixNano()
				rctx, rcancel := context.WithTimeout(context.Background(), 2*time.Second)
				_ = p.Release(rctx)
				rcancel()
				h.mu.Lock()
				h.ivs = append(h.ivs, interval{from: from, to: to, weight: 1})
				if wasLost {
					h.lost++
				}
				h.mu.Unlock()
			}
		}()
	}
}

// grants returns how many Acquire calls returned a permit so far.
func (h *holds) grants() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.acq)
}

// grantsIn returns how many Acquire calls returned a permit within [from,
// to], and how many of them were called after from.
func (h *holds) grantsIn(from, to time.Time) (returned, called int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, a := range h.acq {
		if a[1] >= from.UnixNano() && a[1] <= to.UnixNano() {
			returned++
			if a[0] > from.UnixNano() {
				called++
			}
		}
	}
	return returned, called
}

func (h *holds) snapshot() (ivs []interval, lost, ackErrs, errs int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]interval(nil), h.ivs...), h.lost, h.ackErrs, h.errs
}

func (h *holds) wait(t testing.TB) {
	t.Helper()
	done := make(chan struct{})
	go func() { h.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("workload goroutines still running 20s after the end")
	}
}
