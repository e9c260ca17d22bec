package main

import (
	"fmt"
	"slices"
	"time"
)

// acq is one acquisition's timeline: Acquire called, granted, Release
// called, Release returned.
type acq struct{ call, grant, rel, relDone time.Time }

// diagnose explains where the time of the acquisitions went:
//   - hand-off: from a Release call to the next grant (the latest Release
//     call before each grant; exact for a limit of 1), the critical path
//     that, with the hold, bounds the rate at limit / (held + hand-off);
//   - held: the hold as the loaded scheduler delivered it;
//   - release: the Release call's own duration;
//   - ahead: how many grants happened while a waiter waited (its place in
//     the queue), and per-grant: its wait / (ahead + 1), which is flat if
//     the waits vary only with the queue's length;
//   - stall: the longest time in which nobody was granted;
//   - grants per 100 ms window, p1/p50/p99: if the rate itself swings,
//     every wait in flight during a slow window lengthens together, which
//     a FIFO queue of constant length turns into the wait's tail.
func diagnose(as []acq) string {
	if len(as) < 2 {
		return "too few acquisitions"
	}
	grants := make([]time.Time, len(as))
	rels := make([]time.Time, len(as))
	var held, release, handoff, ahead, per []time.Duration
	for i, a := range as {
		grants[i], rels[i] = a.grant, a.rel
		held = append(held, a.rel.Sub(a.grant))
		release = append(release, a.relDone.Sub(a.rel))
	}
	slices.SortFunc(grants, func(a, b time.Time) int { return a.Compare(b) })
	slices.SortFunc(rels, func(a, b time.Time) int { return a.Compare(b) })
	var stall time.Duration
	for i := 1; i < len(grants); i++ {
		stall = max(stall, grants[i].Sub(grants[i-1]))
	}
	for _, g := range grants {
		j, _ := slices.BinarySearchFunc(rels, g, func(a, b time.Time) int { return a.Compare(b) })
		if j > 0 {
			handoff = append(handoff, g.Sub(rels[j-1]))
		}
	}
	var windows []time.Duration
	for t := grants[0]; t.Add(100 * time.Millisecond).Before(grants[len(grants)-1]); t = t.Add(100 * time.Millisecond) {
		lo, _ := slices.BinarySearchFunc(grants, t, func(x, y time.Time) int { return x.Compare(y) })
		hi, _ := slices.BinarySearchFunc(grants, t.Add(100*time.Millisecond), func(x, y time.Time) int { return x.Compare(y) })
		windows = append(windows, time.Duration(hi-lo))
	}
	for _, a := range as {
		lo, _ := slices.BinarySearchFunc(grants, a.call, func(x, y time.Time) int { return x.Compare(y) })
		hi, _ := slices.BinarySearchFunc(grants, a.grant, func(x, y time.Time) int { return x.Compare(y) })
		n := hi - lo
		ahead = append(ahead, time.Duration(n))
		per = append(per, a.grant.Sub(a.call)/time.Duration(n+1))
	}
	f := func(ds []time.Duration) string {
		return fmt.Sprintf("%v/%v", pct(ds, 50).Round(10*time.Microsecond), pct(ds, 99).Round(10*time.Microsecond))
	}
	return fmt.Sprintf("p50/p99: hand-off %s, held %s, release %s, ahead %d/%d, wait per grant ahead %s; longest stall %v; grants per 100ms p1/p50/p99 %d/%d/%d",
		f(handoff), f(held), f(release), pct(ahead, 50), pct(ahead, 99), f(per), stall.Round(10*time.Microsecond),
		pct(windows, 1), pct(windows, 50), pct(windows, 99))
}
