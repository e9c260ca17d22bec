package analyze

import (
	"container/heap"
	"math"
	"slices"
	"sort"
)

// The measures that Analyze combines into a Report.

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
