// Package analyze turns the per-grant timelines recorded by the load driver
// (bench/load) into the figures of bench/BENCHMARKS.md: throughput,
// utilization, waits, the highest number of holders at once, fairness and
// FIFO order.
//
// All instants are wall-clock Unix nanoseconds taken with time.Now() on one
// machine, so the processes of a run share one clock. A grant is described
// by four client-side instants, in this order:
//
//	AcqStart ≤ Grant ≤ RelStart ≤ RelDone
//
// AcqStart is when Acquire was called, Grant when it returned a permit,
// RelStart when Release was called and RelDone when it returned. The
// client-visible hold [Grant, RelStart) lies inside the interval during
// which the backend counted the permit as taken, so overlapping client holds
// are a lower bound of the backend's count: more than limit of them at once
// proves a violation, never a false alarm.
//
// # Definitions
//
// The steady window [From, To) excludes start-up and wind-down. Only grants
// whose Grant instant lies in it are counted, except for the holder sweep
// (MaxHolders), which covers every recorded grant.
//
//   - Throughput: grants in the window / window length.
//   - Utilization: Σ |[Grant, RelStart) ∩ window| / (limit × window length).
//   - Wait: Grant − AcqStart.
//   - Release: RelDone − RelStart.
//   - Cost: wait + release, the time a caller spends in the semaphore's
//     calls for one grant. A mode whose release costs the caller nothing
//     puts its whole round trip into the wait, so waits alone do not
//     compare such a mode with one whose release makes a round trip.
//   - MaxHolders: the most client holds [Grant, RelStart) that overlap at one
//     instant (at equal instants a release is taken before a grant).
//   - Jain's index: (Σx)² / (n·Σx²) over the grant counts x of all n
//     workers (a worker is one goroutine of one process; workers with no
//     grant count as 0).
//   - Self-handoff share: a grant g to worker w is eligible when w's
//     previous grant was released (r = that release) before g's Acquire
//     started, and at r.RelStart at least one other worker was waiting (its
//     Acquire had started and not returned). g is a self-handoff when it
//     returns before the grant of every worker that was waiting at
//     r.RelStart: w released, asked again and got a permit ahead of all who
//     were already queued. The share is self-handoffs / eligible grants. In
//     a FIFO semaphore w queues behind them, so the share is 0 (up to
//     clock jitter); where the releaser barges back in it is high. ("First
//     grant after the release" would be simpler but is wrong when releases
//     bunch together: another holder's barge can come first.)
//   - FIFO out-of-order share: g overtook g' when g'.AcqStart < g.AcqStart −
//     tol and g'.Grant > g.Grant + tol (g' was already waiting when g
//     started, and was still waiting when g returned). The share is the
//     fraction of grants in the window that overtook at least one other.
//   - Hand-off latency: for each release r in the window at whose RelStart
//     another worker was waiting, the time from r.RelStart to the first
//     Grant (after r.RelStart) of a worker that was already waiting at
//     r.RelStart. With limit 1 this is exactly "release → next waiter's
//     grant returning"; with a larger limit a hand-off still in flight from
//     an earlier release can return first, so it is a lower bound.
//   - Hand-off split, when the backend reports the server time s of each
//     grant (ServerGrant; distsem's Permit.GrantedAt): a grant g is matched
//     to the release r of another worker whose call was in flight at s
//     (r.RelStart ≤ s ≤ r.RelDone; the latest such RelStart) and for which
//     g was already waiting (g.AcqStart < r.RelStart). That is the release
//     whose script handed g the permit. release→script = s − r.RelStart,
//     script→waiter = g.Grant − s, and their sum is the matched hand-off.
//     Grants made by their own acquire script (a free permit) match no
//     release and are left out.
//   - FIFO by server time: the FIFO share above computed with ServerGrant
//     in place of Grant, when every grant has one. It shows the order in
//     which the server granted, without the noise of waking the waiter's
//     process.

package analyze

import (
	"fmt"
	"io"
	"slices"
	"time"
)

// Event is one grant as a worker saw it. Instants are Unix nanoseconds.
type Event struct {
	Proc, Gor   int32 // the worker: process index and goroutine index
	AcqStart    int64
	Grant       int64
	RelStart    int64
	RelDone     int64
	ServerGrant int64 // server time of the grant; 0 when the backend does not report it
	Token       int64 // fencing token; 0 when the backend has none
}

// Worker identifies one goroutine of one worker process.
type Worker struct{ Proc, Gor int32 }

func (e Event) worker() Worker { return Worker{e.Proc, e.Gor} }

// Input is what Analyze needs.
type Input struct {
	Events  []Event
	Workers []Worker // every worker of the run, including those without a grant
	Limit   int64
	// From and To bound the steady window (Unix nanoseconds).
	From, To int64
	// FIFOTolerance is tol in the FIFO definition above.
	FIFOTolerance time.Duration
}

// Report holds the figures. Durations are zero when there was nothing to
// measure; the N fields say how many samples a figure rests on.
type Report struct {
	Window     time.Duration
	Grants     int     // grants in the window
	Throughput float64 // grants per second
	Util       float64

	WaitP50, WaitP99, WaitMax time.Duration
	ReleaseP50, ReleaseP99    time.Duration
	CostP50, CostP99          time.Duration

	MaxHolders int64 // over the whole run
	Violation  bool  // MaxHolders > Limit

	Jain float64

	SelfHandoff  float64
	SelfEligible int

	FIFOOutOfOrder       float64
	FIFOServerOutOfOrder float64 // -1 when grants carry no server time

	HandoffN                             int
	HandoffP50, HandoffP99               time.Duration
	SplitN                               int // grants matched to a release by server time
	MatchedP50, MatchedP99               time.Duration
	RelToScriptP50, RelToScriptP99       time.Duration
	ScriptToWaiterP50, ScriptToWaiterP99 time.Duration

	Limit int64
}

// Validate reports the first event whose instants are out of order.
func Validate(events []Event) error {
	for i, e := range events {
		if !(e.AcqStart <= e.Grant && e.Grant <= e.RelStart && e.RelStart <= e.RelDone) {
			return fmt.Errorf("event %d (worker %d/%d): instants out of order: %d %d %d %d",
				i, e.Proc, e.Gor, e.AcqStart, e.Grant, e.RelStart, e.RelDone)
		}
	}
	return nil
}

// Analyze computes the report. It does not modify in.Events.
func Analyze(in Input) (Report, error) {
	if in.Limit <= 0 {
		return Report{}, fmt.Errorf("analyze: limit %d must be positive", in.Limit)
	}
	if in.To <= in.From {
		return Report{}, fmt.Errorf("analyze: empty window [%d, %d)", in.From, in.To)
	}
	if err := Validate(in.Events); err != nil {
		return Report{}, err
	}
	r := Report{Limit: in.Limit, Window: time.Duration(in.To - in.From)}
	inWin := func(t int64) bool { return t >= in.From && t < in.To }

	// Throughput, utilization, waits, per-worker counts.
	var held int64
	var waits, rels, costs []int64
	counts := make(map[Worker]int, len(in.Workers))
	for _, w := range in.Workers {
		counts[w] = 0
	}
	for _, e := range in.Events {
		lo, hi := max(e.Grant, in.From), min(e.RelStart, in.To)
		if hi > lo {
			held += hi - lo
		}
		if !inWin(e.Grant) {
			continue
		}
		r.Grants++
		waits = append(waits, e.Grant-e.AcqStart)
		rels = append(rels, e.RelDone-e.RelStart)
		costs = append(costs, e.Grant-e.AcqStart+e.RelDone-e.RelStart)
		counts[e.worker()]++
	}
	secs := r.Window.Seconds()
	r.Throughput = float64(r.Grants) / secs
	r.Util = float64(held) / (float64(in.Limit) * float64(in.To-in.From))
	slices.Sort(waits)
	r.WaitP50 = time.Duration(Percentile(waits, 0.50))
	r.WaitP99 = time.Duration(Percentile(waits, 0.99))
	if len(waits) > 0 {
		r.WaitMax = time.Duration(waits[len(waits)-1])
	}
	slices.Sort(rels)
	slices.Sort(costs)
	r.ReleaseP50, r.ReleaseP99 = time.Duration(Percentile(rels, 0.50)), time.Duration(Percentile(rels, 0.99))
	r.CostP50, r.CostP99 = time.Duration(Percentile(costs, 0.50)), time.Duration(Percentile(costs, 0.99))

	r.MaxHolders = MaxHolders(in.Events)
	r.Violation = r.MaxHolders > in.Limit

	xs := make([]float64, 0, len(counts))
	for _, c := range counts {
		xs = append(xs, float64(c))
	}
	r.Jain = Jain(xs)

	r.SelfHandoff, r.SelfEligible = selfHandoff(in.Events, in.From, in.To)
	tol := int64(in.FIFOTolerance)
	r.FIFOOutOfOrder = fifoOutOfOrder(in.Events, in.From, in.To, tol, func(e Event) int64 { return e.Grant })
	r.FIFOServerOutOfOrder = -1
	if len(in.Events) > 0 && !slices.ContainsFunc(in.Events, func(e Event) bool { return e.ServerGrant == 0 }) {
		r.FIFOServerOutOfOrder = fifoOutOfOrder(in.Events, in.From, in.To, tol, func(e Event) int64 { return e.ServerGrant })
	}

	tot := handoffs(in.Events, in.From, in.To)
	slices.Sort(tot)
	r.HandoffN = len(tot)
	r.HandoffP50, r.HandoffP99 = time.Duration(Percentile(tot, .5)), time.Duration(Percentile(tot, .99))
	var rs, sw, mt []int64
	for _, h := range splitHandoffs(in.Events, in.From, in.To) {
		rs = append(rs, h.relToScript)
		sw = append(sw, h.scriptToWaiter)
		mt = append(mt, h.relToScript+h.scriptToWaiter)
	}
	slices.Sort(rs)
	slices.Sort(sw)
	slices.Sort(mt)
	r.SplitN = len(rs)
	r.MatchedP50, r.MatchedP99 = time.Duration(Percentile(mt, .5)), time.Duration(Percentile(mt, .99))
	r.RelToScriptP50, r.RelToScriptP99 = time.Duration(Percentile(rs, .5)), time.Duration(Percentile(rs, .99))
	r.ScriptToWaiterP50, r.ScriptToWaiterP99 = time.Duration(Percentile(sw, .5)), time.Duration(Percentile(sw, .99))
	return r, nil
}

// Print writes the report as the load driver prints it.
func (r Report) Print(w io.Writer) {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.3fms", float64(d)/1e6) }
	fmt.Fprintf(w, "window %v, grants %d, throughput %.1f/s, utilization %.4f\n", r.Window, r.Grants, r.Throughput, r.Util)
	fmt.Fprintf(w, "wait p50 %s p99 %s max %s (p99/p50 %.2f)\n", ms(r.WaitP50), ms(r.WaitP99), ms(r.WaitMax), ratio(r.WaitP99, r.WaitP50))
	fmt.Fprintf(w, "release p50 %s p99 %s; wait + release p50 %s p99 %s\n", ms(r.ReleaseP50), ms(r.ReleaseP99), ms(r.CostP50), ms(r.CostP99))
	fmt.Fprintf(w, "max holders %d (limit %d)\n", r.MaxHolders, r.Limit)
	if r.Violation {
		fmt.Fprintf(w, "!!!!! VIOLATION: %d holders at once, limit %d !!!!!\n", r.MaxHolders, r.Limit)
	}
	fmt.Fprintf(w, "jain %.4f, self-handoff %.4f (of %d eligible), fifo out-of-order %.4f", r.Jain, r.SelfHandoff, r.SelfEligible, r.FIFOOutOfOrder)
	if r.FIFOServerOutOfOrder >= 0 {
		fmt.Fprintf(w, " (by server grant time %.4f)", r.FIFOServerOutOfOrder)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "handoff release->waiter grant: n %d p50 %s p99 %s\n", r.HandoffN, ms(r.HandoffP50), ms(r.HandoffP99))
	if r.SplitN > 0 {
		fmt.Fprintf(w, "  matched by server time n %d: total p50 %s p99 %s = release->script p50 %s p99 %s + script->waiter p50 %s p99 %s\n",
			r.SplitN, ms(r.MatchedP50), ms(r.MatchedP99), ms(r.RelToScriptP50), ms(r.RelToScriptP99), ms(r.ScriptToWaiterP50), ms(r.ScriptToWaiterP99))
	}
}

func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}
