package redissem

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/internal/servertest"
	"github.com/distsem/distsem/internal/testwait"
)

// TestGateAfterSwitch is a measurement, run only when
// DISTSEM_FAILOVER_REPS=n is set: n Sentinel crash failovers (the master
// SIGKILLed, one replica, 3 processes × 8 goroutines on a semaphore of limit
// 4, lease 3 s, holds of 10–30 ms) for each way of holding back a
// process's new grants after it detects a switch, the ways interleaved run
// by run:
//   - reassert: until its holders are re-asserted (what the library does);
//   - heartbeat: for one heartbeat interval (lease TTL/3) from the switch,
//     and at least until the re-assertion;
//   - none: not at all (the re-assertion still runs).
//
// Each run logs the peak of holders on the recorded timeline (a hold ends
// at its Release or its Lost(), whichever is first), the time with more
// than the limit held, the longest time without a grant after the switch,
// the grants of the first second after it against the second before the
// kill, when the rate was back (the end of the last 250 ms window below
// half that), the permits lost, when each detected switch held grants
// back and for how long, and when each attempt to remake a subscription
// ended and whether it replaced it; the last lines sum up each way.
func TestGateAfterSwitch(t *testing.T) {
	v := os.Getenv("DISTSEM_FAILOVER_REPS")
	if v == "" {
		t.Skip("a measurement: set DISTSEM_FAILOVER_REPS")
	}
	reps, err := strconv.Atoi(v)
	if err != nil || reps < 1 {
		t.Fatalf("DISTSEM_FAILOVER_REPS=%q: want a positive count", v)
	}
	ways := []gateWay{
		{"reassert", func(r *gateRec, _ time.Duration) func(func()) func() {
			return func(open func()) func() {
				at := time.Now()
				return func() { r.held(at, time.Since(at)); open() }
			}
		}},
		{"heartbeat", func(r *gateRec, ttl time.Duration) func(func()) func() {
			return func(open func()) func() {
				at := time.Now()
				return func() {
					rest := time.Until(at.Add(ttl / 3))
					if rest <= 0 {
						r.held(at, time.Since(at))
						open()
						return
					}
					time.AfterFunc(rest, func() { r.held(at, time.Since(at)); open() })
				}
			}
		}},
		{"none", func(r *gateRec, _ time.Duration) func(func()) func() {
			return func(open func()) func() { open(); r.held(time.Now(), 0); return func() {} }
		}},
	}
	runs := map[string][]gateRun{}
	for i := range reps {
		for _, w := range ways {
			t.Run(fmt.Sprintf("%s/%d", w.name, i+1), func(t *testing.T) {
				runs[w.name] = append(runs[w.name], gateFailover(t, w))
			})
		}
	}
	for _, w := range ways {
		t.Logf("%s: %s", w.name, summarizeGateRuns(runs[w.name]))
	}
}

// gateWay is one way of holding back new grants after a switch: hook makes
// the testHooks.regate of one process.
type gateWay struct {
	name string
	hook func(r *gateRec, ttl time.Duration) func(open func()) func()
}

// gateRec records one run: every hold, every grant, and how long each
// detected switch held grants back.
type gateRec struct {
	mu      sync.Mutex
	holds   [][2]int64 // UnixNano from, to
	lost    int
	errs    int
	gates   []time.Duration
	gatedAt []time.Time
	remade  []time.Time // when a subscription was replaced by a fresh one
	failed  []time.Time // when an attempt to replace one ended without
}

// resubWatch tells, after each attempt of one backend to remake its
// subscription, whether the attempt replaced it.
type resubWatch struct {
	b    *redisBackend
	r    *gateRec
	mu   sync.Mutex
	prev *sub
}

func (w *resubWatch) mark() {
	w.b.mu.Lock()
	cur := w.b.pubsub
	w.b.mu.Unlock()
	w.mu.Lock()
	w.prev = cur
	w.mu.Unlock()
}

func (w *resubWatch) ended() {
	w.b.mu.Lock()
	cur := w.b.pubsub
	w.b.mu.Unlock()
	w.mu.Lock()
	replaced := cur != w.prev
	w.prev = cur
	w.mu.Unlock()
	w.r.mu.Lock()
	if replaced {
		w.r.remade = append(w.r.remade, time.Now())
	} else {
		w.r.failed = append(w.r.failed, time.Now())
	}
	w.r.mu.Unlock()
}

// held records a switch detected at at that held grants back for d.
func (r *gateRec) held(at time.Time, d time.Duration) {
	r.mu.Lock()
	r.gates = append(r.gates, d)
	r.gatedAt = append(r.gatedAt, at)
	r.mu.Unlock()
}

// gateRun is what one run measured.
type gateRun struct {
	peak        int
	over        time.Duration // with more than the limit held, from the kill on
	gap         time.Duration // longest without a grant, from the switch on
	rate1s      float64       // grants in the second after the switch ÷ in the second before the kill
	full        time.Duration // from the switch to the end of the last 250 ms window below half that rate
	lost, errs  int
	remadeAfter int // subscriptions replaced after the switch
	gates       []time.Duration
	switchAfter time.Duration // from the kill to the sentinels naming the new master
}

func gateFailover(t *testing.T, w gateWay) gateRun {
	set := servertest.StartSentinel(t)
	const limit, procs, per, ttl = 4, 3, 8, 3 * time.Second
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	r := &gateRec{}
	var wg sync.WaitGroup
	var watches []*resubWatch
	for range procs {
		c := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: set.Master, SentinelAddrs: set.Addrs})
		s := New(c, "gate-failover", limit, WithKeyPrefix("gf:"), WithDefaultLeaseTTL(ttl))
		rw := &resubWatch{b: s.b, r: r}
		watches = append(watches, rw)
		s.b.hooks = &testHooks{regate: w.hook(r, ttl), resubscribed: rw.ended} // before any goroutine of the backend runs
		t.Cleanup(func() { s.Close(); c.Close() })
		for range per {
			wg.Add(1)
			go func() { defer wg.Done(); gateLoad(ctx, s, r) }()
		}
	}
	testwait.Until(t, 20*time.Second, "no grant", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.holds) > 0
	})
	time.Sleep(2 * time.Second) // a steady rate before the kill: an observation window
	for _, rw := range watches {
		rw.mark()
	}
	old, err := set.MasterAddr(ctx)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	set.Kill(old)
	testwait.Until(t, 30*time.Second, "the sentinels did not name the new master", func() bool {
		a, err := set.MasterAddr(ctx)
		return err == nil && a != old
	})
	sw := time.Now()
	time.Sleep(4 * time.Second) // the window measured after the switch
	end := time.Now()
	stop()
	wg.Wait()

	r.mu.Lock()
	defer r.mu.Unlock()
	out := gateRun{lost: r.lost, errs: r.errs, gates: slices.Clone(r.gates), switchAfter: sw.Sub(at)}
	out.peak, out.over = holdPeak(r.holds, limit, at.UnixNano())
	last := sw.UnixNano()
	starts := make([]int64, 0, len(r.holds))
	for _, h := range r.holds {
		starts = append(starts, h[0])
	}
	slices.Sort(starts)
	for _, x := range starts {
		if x >= sw.UnixNano() && x <= end.UnixNano() {
			out.gap = max(out.gap, time.Duration(x-last))
			last = x
		}
	}
	out.gap = max(out.gap, time.Duration(end.UnixNano()-last))
	count := func(from, to time.Time) int {
		i, _ := slices.BinarySearch(starts, from.UnixNano())
		j, _ := slices.BinarySearch(starts, to.UnixNano())
		return j - i
	}
	base := count(at.Add(-time.Second), at)
	out.rate1s = float64(count(sw, sw.Add(time.Second))) / float64(max(base, 1))
	const win = 250 * time.Millisecond
	for from := sw; !from.Add(win).After(end); from = from.Add(50 * time.Millisecond) {
		if float64(count(from, from.Add(win))) < float64(base)*win.Seconds()/2 {
			out.full = from.Add(win).Sub(sw)
		}
	}
	rel := func(ts []time.Time) []int64 {
		out := make([]int64, len(ts))
		for i, x := range ts {
			out[i] = x.Sub(sw).Milliseconds()
		}
		return out
	}
	out.remadeAfter = 0
	for _, x := range r.remade {
		if x.After(sw) {
			out.remadeAfter++
		}
	}
	t.Logf("%s: subscriptions replaced at %v ms from the switch; attempts that did not replace one ended at %v ms", w.name, rel(r.remade), rel(r.failed))
	gated := make([]string, len(r.gates))
	for i, d := range r.gates {
		gated[i] = fmt.Sprintf("%+dms for %v", r.gatedAt[i].Sub(sw).Milliseconds(), d.Round(time.Millisecond))
	}
	t.Logf("%s: switch %v after the kill; peak %d (limit %d), %v over; gap after the switch %v; first second after it %.2f× the second before the kill (%d/s), rate back %v after it; %d lost, %d Acquire errors; grants held back after a detected switch (times from the switch): %v",
		w.name, out.switchAfter.Round(time.Millisecond), out.peak, limit, out.over, out.gap.Round(time.Millisecond),
		out.rate1s, base, out.full, out.lost, out.errs, gated)
	return out
}

// gateLoad acquires (5 s timeout), holds 10–30 ms or until the permit is
// lost, and releases (2 s timeout), until ctx ends.
func gateLoad(ctx context.Context, s *Semaphore, r *gateRec) {
	for ctx.Err() == nil {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		p, err := s.Acquire(actx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			r.mu.Lock()
			r.errs++
			r.mu.Unlock()
			time.Sleep(10 * time.Millisecond) // the load's back-off after an error
			continue
		}
		from := time.Now().UnixNano()
		hold := time.NewTimer(time.Duration(10+rand.IntN(21)) * time.Millisecond)
		lost := false
		select {
		case <-hold.C:
		case <-p.Lost():
			lost = true
			hold.Stop()
		}
		to := time.Now().UnixNano()
		rctx, rcancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = p.Release(rctx)
		rcancel()
		r.mu.Lock()
		r.holds = append(r.holds, [2]int64{from, to})
		if lost {
			r.lost++
		}
		r.mu.Unlock()
	}
}

// holdPeak returns the most holds at once, and the time from since on with
// more than limit held.
func holdPeak(holds [][2]int64, limit int, since int64) (peak int, over time.Duration) {
	type ev struct {
		at int64
		d  int
	}
	evs := make([]ev, 0, 2*len(holds))
	for _, h := range holds {
		evs = append(evs, ev{h[0], 1}, ev{h[1], -1})
	}
	sort.Slice(evs, func(i, j int) bool {
		return evs[i].at < evs[j].at || evs[i].at == evs[j].at && evs[i].d < evs[j].d
	})
	cur := 0
	var prev int64
	for _, e := range evs {
		if cur > limit && e.at > since {
			over += time.Duration(e.at - max(prev, since))
		}
		cur += e.d
		peak = max(peak, cur)
		prev = e.at
	}
	return peak, over
}

// summarizeGateRuns sums up the runs of one way: runs with more than the
// limit held, the peak, the gap after the switch (median, range), the
// permits lost, and how long grants were held back (median, max).
func summarizeGateRuns(runs []gateRun) string {
	var gaps, gates, fulls []time.Duration
	var rates []float64
	overRuns, peak, lost, remade := 0, 0, 0, 0
	var over time.Duration
	for _, r := range runs {
		gaps = append(gaps, r.gap)
		fulls = append(fulls, r.full)
		rates = append(rates, r.rate1s)
		gates = append(gates, r.gates...)
		if r.over > 0 {
			overRuns++
		}
		over += r.over
		peak = max(peak, r.peak)
		lost += r.lost
		remade += r.remadeAfter
	}
	med := func(ds []time.Duration) string {
		if len(ds) == 0 {
			return "-"
		}
		slices.Sort(ds)
		return fmt.Sprintf("%v [%v – %v]", ds[len(ds)/2].Round(time.Millisecond), ds[0].Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond))
	}
	slices.Sort(rates)
	var b strings.Builder
	fmt.Fprintf(&b, "%d runs; over the limit in %d (%v in all), peak %d; gap after the switch %s; first second %.2f× [%.2f – %.2f]; rate back %s; %d permits lost; grants held back %s (%d switches detected while holding); %d subscriptions replaced after the switch",
		len(runs), overRuns, over, peak, med(gaps), rates[len(rates)/2], rates[0], rates[len(rates)-1], med(fulls), lost, med(gates), len(gates), remade)
	return b.String()
}
