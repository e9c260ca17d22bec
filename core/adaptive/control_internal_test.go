package adaptive

import (
	"math"
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

func TestControllerConvergesFromAboveAndBelow(t *testing.T) {
	res := resource{service: 10 * time.Millisecond, cores: 2}
	for _, start := range []int64{64, 1} {
		got := simulate(t, testParams(t), start, 60, func(int) resource { return res })
		// The latency aimed at is 1.5× the unloaded one: 3 in flight.
		for m := 15; m < len(got); m++ {
			if got[m] < 2 || got[m] > 4 {
				t.Fatalf("start %d: limit %d in window %d, want within [2, 4] from window 15: %v", start, got[m], m, got)
			}
		}
	}
}

func TestControllerSettlesWhenTheResourceSlowsDown(t *testing.T) {
	fast := resource{service: 10 * time.Millisecond, cores: 2}
	slow := resource{service: 20 * time.Millisecond, cores: 2}
	got := simulate(t, testParams(t), 1, 80, func(n int) resource {
		if n >= 40 {
			return slow
		}
		return fast
	})
	// The change at window 40 is settled 15 windows later (the decisions
	// lag two windows behind the windows they use).
	for m := 55; m < len(got); m++ {
		if got[m] != got[55] {
			t.Fatalf("limit moved after window 55 (%d → %d in window %d): %v", got[55], got[m], m, got[40:])
		}
		if got[m] < 2 || got[m] > 4 {
			t.Fatalf("limit %d in window %d, want within [1, 4]", got[m], m)
		}
	}
}

func TestControllerBacksOffOnErrors(t *testing.T) {
	p := testParams(t, WithSlowStart(0))
	st := p.start(40)
	st, _ = p.next(st, 1, 3, Window{Samples: 100, Latency: time.Second})
	st, r := p.next(st, 3, 5, Window{Samples: 100, Latency: time.Second, Failed: 20})
	if r != ReasonErrors || st.Applied != 32 {
		t.Fatalf("after 20%% errors: limit %d (%v), want 32 (errors)", st.Applied, r)
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
	// 10× the baseline: at most one step (25 %) down, and not below 5.
	for i, want := range []int64{6, 5, 5} {
		n := int64(3 + 2*i)
		var r Reason
		st, r = p.next(st, n, n+2, Window{Samples: 100, Latency: 100 * 100 * time.Millisecond})
		if st.Applied != want || r != ReasonLatency {
			t.Fatalf("step %d: limit %d (%v), want %d (latency)", i, st.Applied, r, want)
		}
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
	p := testParams(t, WithSlowStart(0))
	st := p.start(10)
	st, _ = p.next(st, 1, 2, Window{Samples: 100, Latency: 100 * 10 * time.Millisecond}) // baseline 10ms
	// Within 1.2–1.8 × the baseline, averaged with the windows before: hold.
	for i, lat := range []time.Duration{15, 16, 17, 13, 19} {
		n := int64(3 + i)
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
		// 64 in flight, each at 2× the baseline: latency alone would
		// allow 48; 30 % failures cap it at 0.8 × 64.
		st, r = p.next(st, n, n+1, Window{Samples: 1600, Latency: 1600 * 40 * time.Millisecond, Failed: 480})
	}
	if r != ReasonErrors || st.Applied != 48 {
		t.Fatalf("recommended %d (%v), want 48 (errors)", st.Applied, r)
	}
}
