package adaptive

import (
	"math"
	"slices"
	"testing"
	"time"
)

// resource models a database: up to cores queries run at full speed,
// more share the cores, and beyond knee each extra query also costs
// overhead (contention), so throughput peaks and then degrades.
type resource struct {
	service   time.Duration
	cores     float64
	pureQueue bool // no contention overhead: latency grows as the queue only
}

func (r resource) latency(c float64) time.Duration {
	overhead := 0.02
	if r.pureQueue {
		overhead = 0
	}
	f := math.Max(1, c/r.cores) * (1 + overhead*math.Max(0, c-r.cores))
	return time.Duration(float64(r.service) * f)
}

// window returns the aggregate of a window in which c queries were always
// in flight (a closed loop with more callers than the limit).
func (r resource) window(c float64, length time.Duration) Window {
	lat := r.latency(c)
	n := int64(c * float64(length) / float64(lat))
	return Window{Samples: n, Latency: time.Duration(n) * lat}
}

// simulate runs the controller for windows windows against res(w), with
// the decision for window n taken during window n+2 (as the loop does) and
// applied from then on; it returns the limit in force in each window.
func simulate(t *testing.T, p params, start int64, windows int, res func(n int) resource) []int64 {
	t.Helper()
	inForce := make([]int64, windows)
	st := p.start(start)
	limit := start
	for m := range windows {
		if n := m - 2; n >= 1 {
			var reason Reason
			st, reason = p.next(st, int64(n), int64(m), res(n).window(float64(inForce[n]), time.Second))
			if st.Applied > 0 {
				limit = st.Applied
			}
			t.Logf("window %2d: limit %3d (%v, latency %.1fms, baseline %.1fms)", n, limit, reason, st.Latency*1e3, st.Baseline*1e3)
		}
		inForce[m] = limit
	}
	return inForce
}

func testParams(t *testing.T, opts ...Option) params {
	t.Helper()
	c, err := buildConfig(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c.params
}

// The limit settles at tolerance × the resource's parallelism (on 2
// cores at tolerance 1.5: 3), from above and from below, within 15
// windows, and stays there.
func TestControllerConvergesFromAboveAndBelow(t *testing.T) {
	res := resource{service: 10 * time.Millisecond, cores: 2, pureQueue: true}
	for _, start := range []int64{64, 1} {
		got := simulate(t, testParams(t), start, 60, func(int) resource { return res })
		for m := 15; m < len(got); m++ {
			if got[m] != 3 {
				t.Fatalf("start %d: limit %d in window %d, want 3 from window 15: %v", start, got[m], m, got)
			}
		}
	}
}

// Time that each permit spends outside the resource (the client's work,
// the hand-off) lowers the concurrency inside it: the gradient then
// raises the limit until the resource holds tolerance × its parallelism
// again. With a third of each permit's time outside, 3 in the resource
// take a limit of 4.5.
func TestControllerCoversTimeOutsideTheResource(t *testing.T) {
	res := resource{service: 10 * time.Millisecond, cores: 2, pureQueue: true}
	p := testParams(t)
	st := p.start(1)
	inForce := []int64{1, 1}
	for n := int64(1); n < 60; n++ {
		w := res.window(float64(inForce[n])*2/3, time.Second)
		st, _ = p.next(st, n, n+2, w)
		inForce = append(inForce, st.Applied)
	}
	for m := 20; m < len(inForce); m++ {
		if inForce[m] < 4 || inForce[m] > 5 {
			t.Fatalf("limit %d in window %d, want 4 or 5 (4.5) from window 20: %v", inForce[m], m, inForce)
		}
	}
}

// The slow start doubles while the latency stays within the hysteresis
// band of the baseline: on 12 cores (equilibrium 18) it goes 1, 2, 4, 8,
// 16, where the latency is 1.33 × the baseline, and holds there, within
// the band of 18; it never reaches 32.
func TestSlowStartDoublesWhileTheResourceHasRoom(t *testing.T) {
	res := resource{service: 10 * time.Millisecond, cores: 12, pureQueue: true}
	got := simulate(t, testParams(t), 1, 40, func(int) resource { return res })
	want := []int64{1, 1, 1, 1, 2, 2, 4, 4, 8, 8, 16}
	if !slices.Equal(got[:len(want)], want) {
		t.Fatalf("slow start %v, want %v", got[:len(want)], want)
	}
	for m := len(want); m < len(got); m++ {
		if got[m] < 15 || got[m] > 21 {
			t.Fatalf("limit %d in window %d, want within the band of 18: %v", got[m], m, got)
		}
	}
}

// A resource whose latency grows with every query beyond its cores (a
// 4-core database, with contention): the limit settles near tolerance ×
// the cores, and stays within ±25 % of its median once settled, although
// each window's latency is off by up to ±15 %.
func TestControllerStaysWithinAQuarter(t *testing.T) {
	res := resource{service: 20 * time.Millisecond, cores: 4}
	noise := []float64{1.15, 0.9, 1.05, 0.85, 1.1, 0.95, 1.0, 0.88, 1.12}
	p := testParams(t)
	st := p.start(1)
	var limits []int64
	limit := int64(1)
	inForce := []int64{1, 1}
	for n := int64(1); n < 120; n++ {
		w := res.window(float64(inForce[n]), time.Second)
		w.Latency = time.Duration(float64(w.Latency) * noise[n%int64(len(noise))])
		st, _ = p.next(st, n, n+2, w)
		limit = st.Applied
		inForce = append(inForce, limit)
		if n >= 15 {
			limits = append(limits, limit)
		}
	}
	med := slices.Clone(limits)
	slices.Sort(med)
	m := float64(med[len(med)/2])
	if m < 5 || m > 7 {
		t.Fatalf("median limit %v on 4 cores, want near 1.5 × 4 = 6: %v", m, limits)
	}
	for i, l := range limits {
		if math.Abs(float64(l)-m) > 0.25*m {
			t.Fatalf("limit %d in window %d, more than 25 %% from its median %v: %v", l, i+15, m, limits)
		}
	}
}

// A resource that got far slower than its baseline drives the limit to
// the lower bound.
func TestControllerLatencyStillReachesTheLowerBound(t *testing.T) {
	p := testParams(t, WithSlowStart(0))
	st := p.start(16)
	st, _ = p.next(st, 1, 3, Window{Samples: 100, Latency: 100 * 10 * time.Millisecond})
	var r Reason
	for n := int64(3); n < 60; n += 2 {
		st, r = p.next(st, n, n+2, Window{Samples: 100, Latency: 100 * time.Second})
	}
	if st.Applied != 1 {
		t.Fatalf("limit %d (%v) at 100 × the baseline, want 1", st.Applied, r)
	}
}

// At its equilibrium the controller's latency is tolerance × the
// baseline: the long window must not take that for a slower resource, or
// the limit would creep up for as long as the load runs.
func TestControllerBaselineStaysAtEquilibrium(t *testing.T) {
	res := resource{service: 10 * time.Millisecond, cores: 2, pureQueue: true}
	got := simulate(t, testParams(t), 1, 300, func(int) resource { return res })
	if got[299] != got[30] {
		t.Fatalf("limit went from %d (window 30) to %d (window 299): %v", got[30], got[299], got[30:])
	}
}

// Failures that are part of the workload (optimistic transactions that
// conflict, at about 14 % where the database's throughput peaks) are not
// overload: below WithErrorRate (20 %) the limit follows the latency.
func TestControllerToleratesFailuresBelowTheErrorRate(t *testing.T) {
	p := testParams(t, WithSlowStart(0), WithBaseline(10*time.Millisecond))
	st := p.start(8)
	// 8 in flight at 1.5 × the baseline: the gradient holds.
	st, r := p.next(st, 1, 3, Window{Samples: 320, Latency: 320 * 15 * time.Millisecond, Failed: 45})
	if r != ReasonHold || st.Applied != 8 {
		t.Fatalf("14 %% failures at 1.5 × the baseline: %v, limit %d; want hold, 8", r, st.Applied)
	}
	st, r = p.next(st, 3, 5, Window{Samples: 320, Latency: 320 * 15 * time.Millisecond, Failed: 67})
	if r != ReasonErrors || st.Applied != 6 {
		t.Fatalf("21 %% failures: %v, limit %d; want errors, 6", r, st.Applied)
	}
}

// When the resource becomes twice as slow (a competing load), the limit
// comes down within 10 windows of the change and then stays within ±25 %
// of where it settled; the long window lets it climb back only slowly.
func TestControllerSettlesWhenTheResourceSlowsDown(t *testing.T) {
	got := simulate(t, testParams(t), 1, 80, slowerFrom(40, 4))
	if got[39] < 5 {
		t.Fatalf("limit %d before the change, want >= 5: %v", got[39], got)
	}
	settled := float64(got[50])
	if settled >= float64(got[39]) {
		t.Fatalf("limit %d 10 windows after the change, want below %d: %v", got[50], got[39], got[40:])
	}
	for m := 50; m < len(got); m++ {
		if math.Abs(float64(got[m])-settled) > 0.25*settled {
			t.Fatalf("limit %d in window %d, more than 25 %% from %v: %v", got[m], m, settled, got[40:])
		}
	}
}

// Another load that shares the resource fairly per query (16 unthrottled
// callers on 2 cores) makes the latency depend little on this fleet's
// concurrency. After the first decrease shows that, the limit holds: it
// must not take the loaded latency for an unloaded one and climb against
// the other load.
func TestControllerHoldsUnderACompetingLoad(t *testing.T) {
	p := testParams(t)
	shared := func(c float64) Window { // c of ours + 16 others on 2 cores, 10ms each
		lat := 10 * time.Millisecond * time.Duration(c+16) / 2
		n := int64(c * float64(time.Second) / float64(lat))
		return Window{Samples: n, Latency: time.Duration(n) * lat}
	}
	res := resource{service: 10 * time.Millisecond, cores: 2, pureQueue: true}
	st := p.start(1)
	limit := int64(1)
	inForce := []int64{1, 1}
	var path []int64
	for n := int64(1); n < 80; n++ {
		w := res.window(float64(inForce[n]), time.Second)
		if n >= 40 {
			w = shared(float64(inForce[n]))
		}
		var r Reason
		st, r = p.next(st, n, n+2, w)
		limit = st.Applied
		inForce = append(inForce, limit)
		path = append(path, limit)
		t.Logf("window %d: limit %d (%v, baseline %.1fms)", n, limit, r, st.Baseline*1e3)
	}
	before := path[38]
	for i, l := range path[40:] {
		if l > before {
			t.Fatalf("limit %d in window %d, above %d before the other load: %v", l, 41+i, before, path[36:])
		}
	}
	if settled := path[len(path)-1]; path[52] != settled {
		t.Fatalf("limit still moving 12 windows after the other load came: %v", path[36:])
	}
}

func TestControllerBacksOffOnErrors(t *testing.T) {
	p := testParams(t, WithSlowStart(0))
	st := p.start(40)
	st, _ = p.next(st, 1, 3, Window{Samples: 100, Latency: time.Second})
	st, r := p.next(st, 3, 5, Window{Samples: 100, Latency: time.Second, Failed: 30})
	if r != ReasonErrors || st.Applied != 32 {
		t.Fatalf("after 30%% errors: limit %d (%v), want 32 (errors)", st.Applied, r)
	}
	st, r = p.next(st, 5, 7, Window{Samples: 100, Latency: time.Second, TimedOut: 50, Failed: 1})
	if r != ReasonTimeouts || st.Applied != 26 {
		t.Fatalf("after 50%% timeouts: limit %d (%v), want 26 (timeouts)", st.Applied, r)
	}
}

func TestControllerKeepsBoundsAndStep(t *testing.T) {
	p := testParams(t, WithSlowStart(0), WithBounds(5, 10))
	st := p.start(8)
	st, _ = p.next(st, 1, 3, Window{Samples: 100, Latency: 100 * 10 * time.Millisecond})
	// 10× the baseline: at most half (WithMaxDecrease) down, and not
	// below 5.
	for i, want := range []int64{5, 5} {
		n := int64(3 + 2*i)
		var r Reason
		st, r = p.next(st, n, n+2, Window{Samples: 100, Latency: 100 * 100 * time.Millisecond})
		if st.Applied != want || r != ReasonLatency {
			t.Fatalf("step %d: limit %d (%v), want %d (latency)", i, st.Applied, r, want)
		}
	}
	// Without bounds: half at the jump from the baseline, then one step
	// per decision while the latency stays where it jumped to.
	p = testParams(t, WithSlowStart(0))
	st = p.start(16)
	st, _ = p.next(st, 1, 3, Window{Samples: 100, Latency: 100 * 10 * time.Millisecond})
	for i, want := range []int64{8, 6} {
		n := int64(3 + 2*i)
		st, _ = p.next(st, n, n+2, Window{Samples: 100, Latency: 100 * 100 * time.Millisecond})
		if st.Applied != want {
			t.Fatalf("decision %d at 10× the baseline: limit %d, want %d", i, st.Applied, want)
		}
	}
	// A latency that alone asks for a little less than one step down
	// (the limit of 10 asks for 7.2 at 3.3 × the baseline) is no jump
	// when WithMaxDecrease is the step: one step, to 7.5.
	p = testParams(t, WithSlowStart(0), WithBaseline(10*time.Millisecond), WithMaxDecrease(0.25))
	st = p.start(10)
	st, r := p.next(st, 1, 3, Window{Samples: 1000, Latency: 1000 * 33 * time.Millisecond})
	if r != ReasonLatency || st.Applied != 8 || st.Limit != 7.5 {
		t.Fatalf("at 3.3 × the baseline, max decrease 0.25: %v, limit %d (%.2f); want latency, 8 (7.50)", r, st.Applied, st.Limit)
	}
}

func TestControllerHoldsIdleAndSettlingWindows(t *testing.T) {
	p := testParams(t, WithSlowStart(0))
	st := p.start(8)
	if st2, r := p.next(st, 1, 3, Window{Samples: 9, Latency: time.Second}); r != ReasonIdle || st2.Applied != 8 {
		t.Fatalf("9 samples: %v, limit %d; want idle, 8", r, st2.Applied)
	}
	st.ChangedAt = 5
	if st2, r := p.next(st, 4, 6, Window{Samples: 100, Latency: time.Second}); r != ReasonSettling || st2.Applied != 8 {
		t.Fatalf("window before the change: %v, limit %d; want settling, 8", r, st2.Applied)
	}
}

func TestControllerHysteresis(t *testing.T) {
	p := testParams(t, WithSlowStart(0), WithBaseline(10*time.Millisecond))
	st := p.start(10)
	// At 10, the gradient asks for 8 to 12 (within 20 %) while latency is
	// between 1.25 and 1.875 × the baseline, averaged with the windows
	// before: hold.
	for i, lat := range []time.Duration{15, 16, 17, 13, 18, 14} {
		n := int64(1 + i)
		var r Reason
		st, r = p.next(st, n, n+1, Window{Samples: 1000, Latency: 1000 * lat * time.Millisecond})
		if r != ReasonHold || st.Applied != 10 {
			t.Fatalf("latency %dms: %v, limit %d; want hold, 10", lat, r, st.Applied)
		}
	}
}

// Only recommending, over a limit of 64 that stays in force: with the
// unloaded latency given, the recommendation goes where the adaptive
// limit would, since latency follows the concurrency in force. (A
// resource that also degrades under load makes it lower: the latency at
// 64 then overstates the queue.)
func TestMonitorRecommendsFromTheConcurrencyInForce(t *testing.T) {
	res := resource{service: 10 * time.Millisecond, cores: 2, pureQueue: true}
	p := testParams(t, WithMonitorOnly(), WithBaseline(10*time.Millisecond))
	st := p.start(64)
	for n := int64(1); n < 40; n++ {
		st, _ = p.next(st, n, n+2, res.window(64, time.Second))
	}
	if st.Applied < 2 || st.Applied > 4 {
		t.Fatalf("recommended %d over a limit of 64, want within [2, 4]", st.Applied)
	}
	if st.Baseline != 0.01 {
		t.Fatalf("baseline %v moved while only recommending, want 10ms", st.Baseline)
	}
}

// Errors while only recommending cap the recommendation at backoff × the
// concurrency in force; they do not drive it down window after window,
// since the recommendation changes no error.
func TestMonitorErrorsDoNotCompound(t *testing.T) {
	p := testParams(t, WithMonitorOnly(), WithBaseline(20*time.Millisecond))
	st := p.start(64)
	var r Reason
	for n := int64(1); n < 40; n++ {
		// 64 in flight, each at 1.2 × the baseline: latency alone would
		// allow 80; 30 % failures cap it at 0.8 × 64.
		st, r = p.next(st, n, n+1, Window{Samples: 2667, Latency: 2667 * 24 * time.Millisecond, Failed: 800})
	}
	if r != ReasonErrors || st.Applied != 51 {
		t.Fatalf("recommended %d (%v), want 51 (errors)", st.Applied, r)
	}
}

// slowerFrom returns a resource of cores cores whose service time
// doubles, from 10 to 20 ms, at window n0 (a competing load).
func slowerFrom(n0 int, cores float64) func(int) resource {
	return func(n int) resource {
		if n >= n0 {
			return resource{service: 20 * time.Millisecond, cores: cores}
		}
		return resource{service: 10 * time.Millisecond, cores: cores}
	}
}
