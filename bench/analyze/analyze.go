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
	"container/heap"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
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
	var waits []int64
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

// Percentile returns the nearest-rank p-quantile (0 < p ≤ 1) of sorted xs,
// or 0 for an empty slice.
func Percentile(sorted []int64, p float64) int64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	i = max(0, min(i, len(sorted)-1))
	return sorted[i]
}

// Jain returns Jain's fairness index of xs: 1 when all are equal, 1/n when
// one gets everything. It returns 0 when xs is empty or all zero.
func Jain(xs []float64) float64 {
	var s, s2 float64
	for _, x := range xs {
		s += x
		s2 += x * x
	}
	if s2 == 0 {
		return 0
	}
	return s * s / (float64(len(xs)) * s2)
}

// MaxHolders returns the most client holds [Grant, RelStart) that overlap
// at any instant. At equal instants releases are applied before grants, and
// an empty hold (Grant == RelStart) never counts.
func MaxHolders(events []Event) int64 {
	type edge struct {
		t int64
		d int64 // +1 grant, -1 release
	}
	edges := make([]edge, 0, 2*len(events))
	for _, e := range events {
		if e.RelStart > e.Grant {
			edges = append(edges, edge{e.Grant, 1}, edge{e.RelStart, -1})
		}
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if a.t != b.t {
			if a.t < b.t {
				return -1
			}
			return 1
		}
		return int(a.d - b.d) // -1 before +1
	})
	var cur, best int64
	for _, e := range edges {
		cur += e.d
		best = max(best, cur)
	}
	return best
}

func byWorker(events []Event) map[Worker][]int {
	m := make(map[Worker][]int)
	for i, e := range events {
		m[e.worker()] = append(m[e.worker()], i)
	}
	for _, idx := range m {
		sort.Slice(idx, func(a, b int) bool { return events[idx[a]].AcqStart < events[idx[b]].AcqStart })
	}
	return m
}

// firstWaiterGrant answers, for each instant T in queries, which event was
// the first to return among the acquires waiting at T (AcqStart < T <
// Grant): the index of the event with the least Grant, or -1 when nobody
// was waiting. It sweeps T in increasing order with a min-heap of the Grant
// instants of the acquires started so far.
func firstWaiterGrant(events []Event, queries []int64) []int {
	byStart := make([]int, len(events))
	for i := range byStart {
		byStart[i] = i
	}
	sort.Slice(byStart, func(a, b int) bool { return events[byStart[a]].AcqStart < events[byStart[b]].AcqStart })
	qs := make([]int, len(queries))
	for i := range qs {
		qs[i] = i
	}
	sort.Slice(qs, func(a, b int) bool { return queries[qs[a]] < queries[qs[b]] })
	h := &grantHeap{ev: events}
	out := make([]int, len(queries))
	next := 0
	for _, q := range qs {
		t := queries[q]
		for next < len(byStart) && events[byStart[next]].AcqStart < t {
			heap.Push(h, byStart[next])
			next++
		}
		// Grants at or before t can never answer a later query either.
		for h.Len() > 0 && events[h.idx[0]].Grant <= t {
			heap.Pop(h)
		}
		out[q] = -1
		if h.Len() > 0 {
			out[q] = h.idx[0]
		}
	}
	return out
}

type grantHeap struct {
	ev  []Event
	idx []int
}

func (h *grantHeap) Len() int           { return len(h.idx) }
func (h *grantHeap) Less(i, j int) bool { return h.ev[h.idx[i]].Grant < h.ev[h.idx[j]].Grant }
func (h *grantHeap) Swap(i, j int)      { h.idx[i], h.idx[j] = h.idx[j], h.idx[i] }
func (h *grantHeap) Push(x any)         { h.idx = append(h.idx, x.(int)) }
func (h *grantHeap) Pop() any {
	x := h.idx[len(h.idx)-1]
	h.idx = h.idx[:len(h.idx)-1]
	return x
}

func selfHandoff(events []Event, from, to int64) (share float64, eligible int) {
	type pair struct{ rel, g int }
	var pairs []pair
	var qs []int64
	for _, idx := range byWorker(events) {
		for j := 1; j < len(idx); j++ {
			prev, g := events[idx[j-1]], events[idx[j]]
			if g.Grant < from || g.Grant >= to || prev.RelDone > g.AcqStart {
				continue
			}
			pairs = append(pairs, pair{idx[j-1], idx[j]})
			qs = append(qs, prev.RelStart)
		}
	}
	first := firstWaiterGrant(events, qs)
	self := 0
	for i, p := range pairs {
		f := first[i]
		if f < 0 {
			continue // nobody else waited when the worker released
		}
		eligible++
		if events[p.g].Grant < events[f].Grant {
			self++
		}
	}
	if eligible == 0 {
		return 0, 0
	}
	return float64(self) / float64(eligible), eligible
}

// fifoOutOfOrder computes the FIFO share with grant(e) as the grant instant.
func fifoOutOfOrder(events []Event, from, to, tol int64, grant func(Event) int64) float64 {
	idx := make([]int, len(events))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return events[idx[a]].AcqStart < events[idx[b]].AcqStart })
	starts := make([]int64, len(idx))
	prefMax := make([]int64, len(idx)) // max Grant among the first i+1 by AcqStart
	for i, k := range idx {
		starts[i] = events[k].AcqStart
		prefMax[i] = grant(events[k])
		if i > 0 {
			prefMax[i] = max(prefMax[i], prefMax[i-1])
		}
	}
	n, bad := 0, 0
	for _, e := range events {
		if e.Grant < from || e.Grant >= to {
			continue
		}
		n++
		// Events that started strictly before e.AcqStart − tol.
		c, _ := slices.BinarySearch(starts, e.AcqStart-tol)
		if c > 0 && prefMax[c-1] > grant(e)+tol {
			bad++
		}
	}
	if n == 0 {
		return 0
	}
	return float64(bad) / float64(n)
}

func handoffs(events []Event, from, to int64) []int64 {
	var qs []int64
	for _, r := range events {
		if r.RelStart >= from && r.RelStart < to {
			qs = append(qs, r.RelStart)
		}
	}
	var out []int64
	for i, f := range firstWaiterGrant(events, qs) {
		if f >= 0 {
			out = append(out, events[f].Grant-qs[i])
		}
	}
	return out
}

type split struct{ relToScript, scriptToWaiter int64 }

func splitHandoffs(events []Event, from, to int64) []split {
	rel := make([]int, len(events)) // releases by RelStart
	for i := range rel {
		rel[i] = i
	}
	sort.Slice(rel, func(a, b int) bool { return events[rel[a]].RelStart < events[rel[b]].RelStart })
	starts := make([]int64, len(rel))
	for i, k := range rel {
		starts[i] = events[k].RelStart
	}
	var out []split
	for _, g := range events {
		s := g.ServerGrant
		if s == 0 || g.Grant < from || g.Grant >= to {
			continue
		}
		// The latest release started at or before s whose call was still in
		// flight at s. Releases in flight at once are few: look back a bit.
		k, _ := slices.BinarySearch(starts, s+1)
		for j := k - 1; j >= 0 && j >= k-256; j-- {
			r := events[rel[j]]
			if r.RelStart <= g.AcqStart {
				break // g was not waiting yet; earlier releases neither
			}
			if r.RelDone >= s && r.worker() != g.worker() {
				out = append(out, split{s - r.RelStart, g.Grant - s})
				break
			}
		}
	}
	return out
}

// Print writes the report as the load driver prints it.
func (r Report) Print(w io.Writer) {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.3fms", float64(d)/1e6) }
	fmt.Fprintf(w, "window %v, grants %d, throughput %.1f/s, utilization %.4f\n", r.Window, r.Grants, r.Throughput, r.Util)
	fmt.Fprintf(w, "wait p50 %s p99 %s max %s (p99/p50 %.2f)\n", ms(r.WaitP50), ms(r.WaitP99), ms(r.WaitMax), ratio(r.WaitP99, r.WaitP50))
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
