package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"
)

// result is one run, as saved (one JSON line) and drawn.
type result struct {
	Label     string   `json:"label,omitempty"`
	Mode      string   `json:"mode"`
	Limit     int64    `json:"limit"`
	Rep       int      `json:"rep"`
	Procs     int      `json:"procs"`
	Workers   int      `json:"workers"`
	Duration  float64  `json:"duration_s"`
	Change    float64  `json:"change_s,omitempty"`
	Kill      float64  `json:"kill_s,omitempty"`
	Killed    int      `json:"killed"`
	Tolerance float64  `json:"tolerance,omitempty"`
	ErrorRate float64  `json:"error_rate,omitempty"`
	Baseline  float64  `json:"baseline_ms,omitempty"`
	LoadAvg   string   `json:"loadavg"` // /proc/loadavg at the end
	Seconds   []second `json:"seconds"`
	Decisions []point  `json:"decisions,omitempty"` // the limit each decision set, by process
	Recs      []point  `json:"recommended,omitempty"`
	// Probe is the probe query's time alone on PostgreSQL (with -change).
	Probe []probeAt `json:"probe,omitempty"`

	lats []latAt         // every query that succeeded, for percentiles over intervals
	errs []time.Duration // when each failed query ended
}

// second is one second of a run.
type second struct {
	T         int     `json:"t"`
	Queries   int     `json:"queries"`
	P99       float64 `json:"p99_ms"`
	Active    float64 `json:"pg_active_mean"`
	ActiveMax int64   `json:"pg_active_max"`
	// InFlight is the most of the load's queries running at once in the
	// second, from their start (the probe, under the limit) and end.
	InFlight int   `json:"in_flight_max"`
	Limit    int64 `json:"limit"`
}

type point struct {
	T      float64 `json:"t"`
	Proc   int     `json:"p"`
	Limit  int64   `json:"limit"`
	Reason string  `json:"reason,omitempty"`
	LatMS  float64 `json:"lat_ms,omitempty"`
	BaseMS float64 `json:"base_ms,omitempty"`
}

type probeAt struct {
	T  float64 `json:"t"`
	MS float64 `json:"ms"`
}

type latAt struct {
	at  time.Duration
	lat time.Duration
}

func (r *run) result(o options, limit int64) *result {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := &result{Label: o.label, Mode: o.mode, Limit: limit, Procs: o.procs, Workers: o.workers, Duration: o.duration.Seconds(),
		Change: o.change.Seconds(), Killed: r.killed, Kill: r.killedAt.Seconds(), Tolerance: o.tolerance,
		ErrorRate: o.errorRate, Baseline: float64(o.baseline) / 1e6}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		res.LoadAvg = strings.TrimSpace(string(b))
	}
	for _, q := range r.queries {
		if q.Err {
			res.errs = append(res.errs, r.since(q.At))
		} else {
			res.lats = append(res.lats, latAt{r.since(q.At), time.Duration(q.Lat)})
		}
	}
	for _, d := range r.decisions {
		res.Decisions = append(res.Decisions, point{r.since(d.At).Seconds(), d.Proc, d.Limit, d.Reason, d.LatMS, d.BaseMS})
	}
	for _, p := range r.probes {
		res.Probe = append(res.Probe, probeAt{p.At.Seconds(), float64(p.V) / 1e6})
	}
	for _, d := range r.recs {
		res.Recs = append(res.Recs, point{T: r.since(d.At).Seconds(), Proc: d.Proc, Limit: d.Limit})
	}
	n := int(math.Ceil(o.duration.Seconds()))
	inFlight := maxInFlight(r, n)
	for s := range n {
		from, to := time.Duration(s)*time.Second, time.Duration(s+1)*time.Second
		w := res.window(from, to)
		sec := second{T: s, Queries: w.queries, P99: w.p99, InFlight: inFlight[s]}
		var sum, cnt int64
		for _, a := range r.active {
			if a.At >= from && a.At < to {
				sum, cnt = sum+a.V, cnt+1
				sec.ActiveMax = max(sec.ActiveMax, a.V)
			}
		}
		if cnt > 0 {
			sec.Active = float64(sum) / float64(cnt)
		}
		for _, l := range r.limits {
			if l.At < to {
				sec.Limit = l.V
			}
		}
		res.Seconds = append(res.Seconds, sec)
	}
	return res
}

// stats are the figures of an interval of a run.
type stats struct {
	queries             int
	qps, p50, p99       float64 // p50, p99 in ms
	errRate             float64 // failed queries (conflicts) over all
	activeMean          float64
	activeMax           int64
	inFlight            int   // the most of the load's queries at once
	limMed, limMin, lim int64 // the limit's median, min and max over the interval's seconds
}

func (res *result) window(from, to time.Duration) stats {
	var lats []float64
	for _, l := range res.lats {
		if l.at >= from && l.at < to {
			lats = append(lats, float64(l.lat)/1e6)
		}
	}
	s := stats{queries: len(lats), qps: float64(len(lats)) / (to - from).Seconds()}
	var nerr int
	for _, e := range res.errs {
		if e >= from && e < to {
			nerr++
		}
	}
	if nerr+len(lats) > 0 {
		s.errRate = float64(nerr) / float64(nerr+len(lats))
	}
	if len(lats) > 0 {
		slices.Sort(lats)
		s.p50 = lats[len(lats)/2]
		s.p99 = lats[min(len(lats)-1, int(math.Ceil(0.99*float64(len(lats))))-1)]
	}
	var lims []int64
	var act float64
	var nact int
	for _, sec := range res.Seconds {
		t := time.Duration(sec.T) * time.Second
		if t >= from && t < to {
			lims = append(lims, sec.Limit)
			act += sec.Active
			nact++
			s.activeMax = max(s.activeMax, sec.ActiveMax)
			s.inFlight = max(s.inFlight, sec.InFlight)
		}
	}
	if nact > 0 {
		s.activeMean = act / float64(nact)
	}
	if len(lims) > 0 {
		slices.Sort(lims)
		s.limMed, s.limMin, s.lim = lims[len(lims)/2], lims[0], lims[len(lims)-1]
	}
	return s
}

func (res *result) save(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	b, _ := json.Marshal(res)
	_, err = f.Write(append(b, '\n'))
	return firstErr(err, f.Close())
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// printSummary writes the run's figures over its intervals: for a static
// run, after the warm-up; for the others, the first 15 s, the rest before
// the change or kill, the 10 s after it and the rest.
func (res *result) printSummary(w io.Writer) {
	d := time.Duration(res.Duration * float64(time.Second))
	line := func(name string, from, to time.Duration) {
		if to <= from {
			return
		}
		s := res.window(from, to)
		fmt.Fprintf(w, "%-9s %-8s start %-3d rep %d %-12s %5.1f qps  err %4.1f%%  p50 %6.1fms  p99 %6.1fms  pg active mean %5.1f max %3d  in flight max %3d  limit med %d [%d, %d]\n",
			res.Mode, name, res.Limit, res.Rep, fmt.Sprintf("[%.0fs,%.0fs)", from.Seconds(), to.Seconds()),
			s.qps, 100*s.errRate, s.p50, s.p99, s.activeMean, s.activeMax, s.inFlight, s.limMed, s.limMin, s.lim)
	}
	const warm, settle = 3 * time.Second, 15 * time.Second
	event := time.Duration(max(res.Change, res.Kill) * float64(time.Second))
	switch {
	case res.Mode == "static" && event == 0:
		line("steady", warm, d)
		line("settled", settle, d) // the adaptive runs' interval
	case event > 0:
		line("start", 0, settle)
		line("before", settle, event)
		line("event+10", event, event+10*time.Second)
		line("after", event+10*time.Second, d)
	default:
		line("start", 0, settle)
		line("settled", settle, d)
	}
	if res.Change > 0 {
		before, after := res.probeMedian(res.Change-10, res.Change), res.probeMedian(res.Change+2, res.Change+12)
		fmt.Fprintf(w, "  probe query alone: median %.1fms in the 10s before the change, %.1fms in [change+2s, change+12s): %.2f×\n",
			before, after, after/before)
	}
	if res.Killed >= 0 {
		fmt.Fprintf(w, "  killed process %d at %.1fs; decisions after: %s\n", res.Killed, res.Kill, res.decisionsAfter(res.Kill))
	}
	fmt.Fprintf(w, "  loadavg %s\n", res.LoadAvg)
}

// probeMedian is the median time of the probe queries that ended in
// [from, to), in ms.
func (res *result) probeMedian(from, to float64) float64 {
	var ms []float64
	for _, p := range res.Probe {
		if p.T >= from && p.T < to {
			ms = append(ms, p.MS)
		}
	}
	if len(ms) == 0 {
		return math.NaN()
	}
	slices.Sort(ms)
	return ms[len(ms)/2]
}

func (res *result) decisionsAfter(t float64) string {
	var b strings.Builder
	for _, d := range res.Decisions {
		if d.T >= t-2 && d.T < t+6 {
			fmt.Fprintf(&b, " %.1fs p%d→%d", d.T, d.Proc, d.Limit)
		}
	}
	return b.String()
}

// maxInFlight returns, for each of the run's n seconds, the most queries
// of the load that ran at once, from each query's start and end (failed
// ones too).
func maxInFlight(r *run, n int) []int {
	type edge struct {
		at    time.Duration
		delta int
	}
	var ev []edge
	for _, q := range r.queries {
		end := r.since(q.At)
		ev = append(ev, edge{end - time.Duration(q.Lat), +1}, edge{end, -1})
	}
	slices.SortFunc(ev, func(a, b edge) int {
		if a.at != b.at {
			return int(min(max(a.at-b.at, -1), 1))
		}
		return a.delta - b.delta // an end before a start at the same instant
	})
	out := make([]int, n)
	cur := 0
	for _, e := range ev {
		cur += e.delta
		if s := int(e.at / time.Second); s >= 0 && s < n {
			out[s] = max(out[s], cur)
		}
	}
	return out
}
