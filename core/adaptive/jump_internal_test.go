package adaptive

import (
	"slices"
	"testing"
	"time"
)

// The tests of a jump: a window whose latency alone makes the gradient ask
// for more than one step less than the latency before did.

// When the latency doubles at once (another load on the database), the
// first decision after the change cuts the limit by a third or more: the
// window is not averaged with the ones before (which would halve the
// jump), and the cut is not held to one step (WithMaxStep). Averaged and
// held to a step, the limit came down by a quarter at first and reached
// the same level only a decision later, while every query waited behind
// the queue of before.
func TestControllerCutsAtOnceWhenTheLatencyJumps(t *testing.T) {
	got := simulate(t, testParams(t), 1, 60, slowerFrom(40, 4))
	before, first := got[41], got[42] // window 40's decision is in force from window 42
	if before < 5 {
		t.Fatalf("limit %d before the change, want >= 5: %v", before, got)
	}
	if float64(first) > float64(before)*2/3 {
		t.Fatalf("limit %d after the first decision on the slower resource, want at most 2/3 of %d: %v", first, before, got[36:])
	}
	if m := slices.Min(got[42:]); m < first-1 {
		t.Fatalf("limit fell to %d after the cut to %d, want no second fall of more than 1: %v", m, first, got[36:])
	}
}

// The larger cut is for jumps only: a window whose latency alone asks for
// less than the hysteresis band, but less than one step below what the
// latency before asked for, is averaged with the windows before, as any
// noisy window.
func TestControllerAveragesANoisyWindow(t *testing.T) {
	p := testParams(t, WithSlowStart(0), WithBaseline(10*time.Millisecond))
	st := p.start(10)
	// At 10, the equilibrium latency ratio is the tolerance, 1.5.
	st, r := p.next(st, 1, 2, Window{Samples: 1000, Latency: 1000 * 15 * time.Millisecond})
	if r != ReasonHold {
		t.Fatalf("at the equilibrium: %v, want hold", r)
	}
	// 1.95 × the baseline alone asks for 7.7 (below the band, less than a
	// step below the 10 that 1.5 × asked for); averaged with 1.5 ×, 8.7.
	st, r = p.next(st, 2, 3, Window{Samples: 1000, Latency: 1000 * 19500 * time.Microsecond})
	if r != ReasonHold || st.Applied != 10 {
		t.Fatalf("one window 30 %% slower: %v, limit %d; want hold, 10", r, st.Applied)
	}
	// 3 × the baseline alone asks for 5: a jump, not averaged, cut by half.
	st, r = p.next(st, 3, 4, Window{Samples: 1000, Latency: 1000 * 30 * time.Millisecond})
	if r != ReasonLatency || st.Applied != 5 {
		t.Fatalf("one window at 3 × the baseline: %v, limit %d; want latency, 5", r, st.Applied)
	}
}

// A jump is measured from the latency before, not from the limit: a
// limit held near the lower edge of the hysteresis band (5, at 1.78 × the
// baseline, where the gradient asks for 4.2) meets a window 30 % slower
// than the ones before. The window alone asks for 3.2, more than a step
// below the limit, but less than a step below what the latency before
// asked for: it is averaged, and the limit falls by one step, to 4 (cut
// as a jump, to 3).
func TestControllerStepsWhenAHeldLimitMeetsASlowerWindow(t *testing.T) {
	p := testParams(t, WithSlowStart(0), WithBaseline(17600*time.Microsecond))
	st := p.start(5)
	var r Reason
	for n := int64(1); n <= 3; n++ {
		st, r = p.next(st, n, n+1, Window{Samples: 400, Latency: 400 * 31400 * time.Microsecond})
		if r != ReasonHold || st.Applied != 5 {
			t.Fatalf("window %d at 31.4ms: %v, limit %d; want hold, 5", n, r, st.Applied)
		}
	}
	st, r = p.next(st, 4, 5, Window{Samples: 300, Latency: 300 * 40800 * time.Microsecond})
	if r != ReasonLatency || st.Applied != 4 {
		t.Fatalf("a window at 40.8ms after 31.4ms: %v, limit %d; want latency, 4", r, st.Applied)
	}
}
