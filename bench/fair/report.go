package main

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/distsem/distsem/bench/analyze"
)

// report holds one run's figures. Waits of requests still queued at the
// end count as lasting until the end (a lower bound).
type report struct {
	Scenario, Label string
	FIFO            bool
	Window          time.Duration
	MaxHolders      int64 // over the whole run, all flows
	Limit           int64
	Util            float64
	Grants          int
	Flows           map[string]flowReport
	JainFlows       float64 // over the flows' grants ÷ weight
	// Levels: the longest time level 1 had a waiter but held no permit
	// while level 0 was backlogged, and level 1's grants while level 0
	// had waiters; then the time from level 0's going idle to level 1's
	// next grant.
	L1MaxStarved, L1AfterIdle time.Duration
	L1AfterRelease            time.Duration // from the first release after level 0 went idle
	L1GrantsWhileL0Waits      int
	RedisMemBefore            int64
	RedisMemPeak              int64
	Heaps                     []string
	StatsAfter                string
}

type flowReport struct {
	Grants       int
	Share        float64
	WaitP50      time.Duration
	WaitP99      time.Duration
	WaitMax      time.Duration
	HoldP99      time.Duration // client-side hold, Grant to RelStart: the -hold sleep as this machine ran it
	HoldMax      time.Duration
	Unfinished   int     // still waiting at the end
	FIFOOutOrder float64 // within the flow
	SelfHandoff  float64 // within the flow
	// OvertakenMax is the most grants to other flows while one request
	// of the flow waited (between its Acquire and its grant).
	OvertakenMax int
}

func toEvent(r record) analyze.Event {
	return analyze.Event{Proc: int32(r.Proc), Gor: int32(r.Gor), AcqStart: r.AcqStart, Grant: r.Grant, RelStart: r.RelStart, RelDone: r.RelDone}
}

func analyzeRun(recs []record, sc scenario, start, end int64) report {
	from, to := start+int64(time.Second), end-int64(time.Second/2)
	rep := report{Window: time.Duration(to - from), Limit: sc.Limit, Flows: map[string]flowReport{}}
	var all []analyze.Event
	byFlow := map[string][]record{}
	for _, r := range recs {
		if r.Grant != 0 {
			all = append(all, toEvent(r))
		}
		byFlow[r.Flow] = append(byFlow[r.Flow], r)
	}
	rep.MaxHolders = analyze.MaxHolders(all)
	if a, err := analyze.Analyze(analyze.Input{Events: all, Workers: workers(all), Limit: sc.Limit, From: from, To: to}); err == nil {
		rep.Util, rep.Grants = a.Util, a.Grants
	}
	var shares []float64
	for _, f := range slices.Sorted(maps.Keys(byFlow)) {
		fr := flowReport{}
		var waits, holds []int64
		var evs []analyze.Event
		for _, r := range byFlow[f] {
			if r.AcqStart < from || r.AcqStart >= to {
				continue
			}
			if r.Grant == 0 {
				fr.Unfinished++
				waits = append(waits, end-r.AcqStart)
				continue
			}
			waits = append(waits, r.Grant-r.AcqStart)
			holds = append(holds, r.RelStart-r.Grant)
			evs = append(evs, toEvent(r))
		}
		for _, r := range byFlow[f] {
			if r.Grant >= from && r.Grant < to {
				fr.Grants++
			}
		}
		slices.Sort(waits)
		if len(waits) > 0 {
			fr.WaitP50 = time.Duration(analyze.Percentile(waits, 0.50))
			fr.WaitP99 = time.Duration(analyze.Percentile(waits, 0.99))
			fr.WaitMax = time.Duration(waits[len(waits)-1])
		}
		slices.Sort(holds)
		if len(holds) > 0 {
			fr.HoldP99, fr.HoldMax = time.Duration(analyze.Percentile(holds, 0.99)), time.Duration(holds[len(holds)-1])
		}
		if a, err := analyze.Analyze(analyze.Input{Events: evs, Workers: workers(evs), Limit: sc.Limit, From: from, To: to, FIFOTolerance: time.Millisecond}); err == nil {
			fr.FIFOOutOrder, fr.SelfHandoff = a.FIFOOutOfOrder, a.SelfHandoff
		}
		if rep.Grants > 0 {
			fr.Share = float64(fr.Grants) / float64(rep.Grants)
		}
		w := sc.Fairness.Weights[f]
		if w == 0 {
			w = 1
		}
		shares = append(shares, float64(fr.Grants)/float64(w))
		rep.Flows[f] = fr
	}
	rep.JainFlows = analyze.Jain(shares)
	rep.overtaken(recs, byFlow, from, to)
	rep.levels(recs, start, end)
	return rep
}

// overtaken fills each flow's OvertakenMax, from the grants sorted by time.
func (rep *report) overtaken(recs []record, byFlow map[string][]record, from, to int64) {
	type g struct {
		t    int64
		flow string
	}
	var grants []g
	for _, r := range recs {
		if r.Grant != 0 {
			grants = append(grants, g{r.Grant, r.Flow})
		}
	}
	slices.SortFunc(grants, func(a, b g) int { return cmp.Compare(a.t, b.t) })
	for f, rs := range byFlow {
		fr := rep.Flows[f]
		for _, r := range rs {
			if r.Grant == 0 || r.AcqStart < from || r.AcqStart >= to {
				continue
			}
			i, _ := slices.BinarySearchFunc(grants, r.AcqStart, func(x g, t int64) int { return cmp.Compare(x.t, t) })
			n := 0
			for ; i < len(grants) && grants[i].t < r.Grant; i++ {
				if grants[i].flow != f {
					n++
				}
			}
			fr.OvertakenMax = max(fr.OvertakenMax, n)
		}
		rep.Flows[f] = fr
	}
}

// levels fills the level figures from the recorded waits and holds.
func (rep *report) levels(recs []record, start, end int64) {
	var l0Idle int64 // the last instant level 0 had a waiter
	for _, r := range recs {
		if r.Level == 0 && r.Flow == "high" {
			l0Idle = max(l0Idle, nonzero(r.Grant, end))
		}
	}
	if l0Idle == 0 {
		return
	}
	// level 1's holds and waits, as sorted instants
	for _, r := range recs {
		if r.Level == 1 && r.Grant != 0 && r.Grant < l0Idle && r.AcqStart > start+int64(time.Second) {
			rep.L1GrantsWhileL0Waits++
		}
	}
	// starved: level 1 waiting with no level-1 hold, while level 0 waits
	type edge struct {
		t           int64
		wait, holds int
	}
	var edges []edge
	for _, r := range recs {
		if r.Level != 1 {
			continue
		}
		g := nonzero(r.Grant, end)
		edges = append(edges, edge{r.AcqStart, 1, 0}, edge{g, -1, 0})
		if r.Grant != 0 {
			edges = append(edges, edge{r.Grant, 0, 1}, edge{r.RelStart, 0, -1})
		}
	}
	slices.SortFunc(edges, func(a, b edge) int { return cmp.Compare(a.t, b.t) })
	waiting, holding, since := 0, 0, int64(-1)
	for _, e := range edges {
		if since >= 0 && e.t > since && e.t > start+int64(time.Second) && since < l0Idle {
			rep.L1MaxStarved = max(rep.L1MaxStarved, time.Duration(min(e.t, l0Idle)-max(since, start+int64(time.Second))))
		}
		waiting += e.wait
		holding += e.holds
		if waiting > 0 && holding == 0 {
			if since < 0 {
				since = e.t
			}
		} else {
			since = -1
		}
	}
	first := int64(0)
	for _, r := range recs {
		if r.Level == 1 && r.Grant >= l0Idle && (first == 0 || r.Grant < first) {
			first = r.Grant
		}
	}
	firstRel := int64(0) // the first release after level 0 went idle
	for _, r := range recs {
		if r.Grant != 0 && r.RelStart >= l0Idle && (firstRel == 0 || r.RelStart < firstRel) {
			firstRel = r.RelStart
		}
	}
	if first != 0 {
		rep.L1AfterIdle = time.Duration(first - l0Idle)
		rep.L1AfterRelease = time.Duration(first - firstRel)
	}
}

func nonzero(v, def int64) int64 {
	if v == 0 {
		return def
	}
	return v
}

func workers(evs []analyze.Event) []analyze.Worker {
	seen := map[analyze.Worker]bool{}
	var ws []analyze.Worker
	for _, e := range evs {
		w := analyze.Worker{Proc: e.Proc, Gor: e.Gor}
		if !seen[w] {
			seen[w] = true
			ws = append(ws, w)
		}
	}
	return ws
}

func (rep report) print(w io.Writer) {
	fmt.Fprintf(w, "scenario %s fifo=%v: window %v, grants %d, utilization %.3f, max holders %d (limit %d), Jain over flows %.4f\n",
		rep.Scenario, rep.FIFO, rep.Window, rep.Grants, rep.Util, rep.MaxHolders, rep.Limit, rep.JainFlows)
	for _, f := range slices.Sorted(maps.Keys(rep.Flows)) {
		fr := rep.Flows[f]
		fmt.Fprintf(w, "  flow %-8s grants %6d share %.3f wait p50 %-10v p99 %-10v max %-10v unfinished %d FIFO out-of-order %.4f self-handoff %.4f overtaken ≤ %d hold p99 %v max %v\n",
			f, fr.Grants, fr.Share, fr.WaitP50.Round(time.Microsecond), fr.WaitP99.Round(time.Microsecond), fr.WaitMax.Round(time.Microsecond), fr.Unfinished, fr.FIFOOutOrder, fr.SelfHandoff, fr.OvertakenMax, fr.HoldP99.Round(time.Microsecond), fr.HoldMax.Round(time.Microsecond))
	}
	if rep.L1AfterIdle != 0 || rep.L1MaxStarved != 0 || rep.L1GrantsWhileL0Waits != 0 {
		fmt.Fprintf(w, "  level 1: longest starved while level 0 waits %v; grants while level 0 waits %d; first grant %v after level 0 went idle, %v after the next release\n",
			rep.L1MaxStarved, rep.L1GrantsWhileL0Waits, rep.L1AfterIdle, rep.L1AfterRelease)
	}
	fmt.Fprintf(w, "  redis used_memory before %d peak %d; workers: %v\n", rep.RedisMemBefore, rep.RedisMemPeak, rep.Heaps)
}
