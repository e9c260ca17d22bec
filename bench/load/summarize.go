package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/distsem/distsem/bench/analyze"
)

// metric extracts one figure of a result, in the unit shown.
type metric struct {
	name string
	get  func(result) float64
	fmt  string
}

func msOf(d time.Duration) float64 { return float64(d) / 1e6 }

var metrics = []metric{
	{"throughput (grants/s)", func(r result) float64 { return r.Throughput }, "%.0f"},
	{"utilization", func(r result) float64 { return r.Util }, "%.3f"},
	{"wait p50 (ms)", func(r result) float64 { return msOf(r.WaitP50) }, "%.3f"},
	{"wait p99 (ms)", func(r result) float64 { return msOf(r.WaitP99) }, "%.3f"},
	{"wait p99/p50", func(r result) float64 {
		if r.WaitP50 == 0 {
			return 0
		}
		return float64(r.WaitP99) / float64(r.WaitP50)
	}, "%.2f"},
	{"wait max (ms)", func(r result) float64 { return msOf(r.WaitMax) }, "%.3f"},
	{"release p50 (ms)", func(r result) float64 { return msOf(r.ReleaseP50) }, "%.3f"},
	{"release p99 (ms)", func(r result) float64 { return msOf(r.ReleaseP99) }, "%.3f"},
	{"wait + release p50 (ms)", func(r result) float64 { return msOf(r.CostP50) }, "%.3f"},
	{"wait + release p99 (ms)", func(r result) float64 { return msOf(r.CostP99) }, "%.3f"},
	{"longest Acquire unfinished at the end (ms)", func(r result) float64 { return msOf(r.Pending) }, "%.3f"},
	{"max holders", func(r result) float64 { return float64(r.MaxHolders) }, "%.0f"},
	{"Jain", func(r result) float64 { return r.Jain }, "%.4f"},
	{"self-handoff share", func(r result) float64 { return r.SelfHandoff }, "%.4f"},
	{"FIFO out-of-order share", func(r result) float64 { return r.FIFOOutOfOrder }, "%.4f"},
	{"FIFO out-of-order by server time", func(r result) float64 { return r.FIFOServerOutOfOrder }, "%.4f"},
	{"hand-off p50 (ms)", func(r result) float64 { return msOf(r.HandoffP50) }, "%.3f"},
	{"hand-off p99 (ms)", func(r result) float64 { return msOf(r.HandoffP99) }, "%.3f"},
	{"matched hand-off p50 (ms)", func(r result) float64 { return msOf(r.MatchedP50) }, "%.3f"},
	{"matched hand-off p99 (ms)", func(r result) float64 { return msOf(r.MatchedP99) }, "%.3f"},
	{"release→script p50 (ms)", func(r result) float64 { return msOf(r.RelToScriptP50) }, "%.3f"},
	{"release→script p99 (ms)", func(r result) float64 { return msOf(r.RelToScriptP99) }, "%.3f"},
	{"script→waiter p50 (ms)", func(r result) float64 { return msOf(r.ScriptToWaiterP50) }, "%.3f"},
	{"script→waiter p99 (ms)", func(r result) float64 { return msOf(r.ScriptToWaiterP99) }, "%.3f"},
	{"CPU other jobs (cores)", func(r result) float64 { return r.CPUOther }, "%.2f"},
	{"CPU redis-server (cores)", func(r result) float64 { return r.CPURedis }, "%.2f"},
	{"CPU workers (cores)", func(r result) float64 { return r.CPUWorkers }, "%.2f"},
	{"Redis commands per acquisition", func(r result) float64 { return r.CmdsPerAcq }, "%.1f"},
	{"Redis scripts per acquisition", func(r result) float64 { return r.ScriptsPerAcq }, "%.2f"},
	{"server µs per EVALSHA", func(r result) float64 { return r.UsecPerEval }, "%.2f"},
	{"redis-server CPU µs per acquisition", func(r result) float64 { return r.RedisUsPerAcq }, "%.1f"},
	{"errors", func(r result) float64 { return float64(r.Errors) }, "%.0f"},
}

// summarize prints, per label, the median and range of every figure over
// the repetitions found in the given JSON-lines files, then the paired
// throughput ratios to the variant base (see ratios).
func summarize(w io.Writer, files []string, base string) error {
	var order []string
	groups := map[string][]result{}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var r result
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				f.Close()
				return fmt.Errorf("%s: %w", name, err)
			}
			if r.Label == "idlemem" {
				continue // `load idlemem` lines carry no run figures
			}
			key := r.Label + " / " + r.Backend
			if _, ok := groups[key]; !ok {
				order = append(order, key)
			}
			groups[key] = append(groups[key], r)
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return err
		}
	}
	for _, key := range order {
		rs := groups[key]
		r0 := rs[0]
		fmt.Fprintf(w, "\n### %s\n\nprocs %d, workers %d, limit %d, hold %v, duration %v, %d repetitions\n\n",
			key, r0.Procs, r0.Workers, r0.Limit, r0.Hold, r0.Duration, len(rs))
		fmt.Fprintln(w, "| figure | median | range |")
		fmt.Fprintln(w, "|---|---|---|")
		for _, m := range metrics {
			vs := make([]float64, len(rs))
			for i, r := range rs {
				vs[i] = m.get(r)
			}
			if (slices.Max(vs) == 0 && m.name != "errors") || slices.Max(vs) < 0 {
				continue
			}
			med, lo, hi := medianRange(vs)
			fmt.Fprintf(w, "| %s | "+m.fmt+" | "+m.fmt+" – "+m.fmt+" |\n", m.name, med, lo, hi)
		}
	}
	ratios(w, order, groups, base)
	return nil
}

// ratios prints the throughput of each run over that of a base run of the
// same repetition (the runs of a repetition ran one after the other), as
// the median and range over the repetitions: for every label
// "<workload>-<variant>" whose workload also has a label
// "<workload>-<base>" (ab/run.sh's old and new), and for every backend of
// a label that base also ran under (run.sh's backends side by side). base
// is "seedsem" unless -base says otherwise. Paired ratios cancel most of
// what moves a shared machine between repetitions.
func ratios(w io.Writer, order []string, groups map[string][]result, base string) {
	type pair struct{ name, of string } // the runs, and the base they divide by
	var pairs []pair
	runs := map[string][]result{}
	add := func(name string, r result) {
		if _, ok := runs[name]; !ok {
			runs[name] = nil
		}
		runs[name] = append(runs[name], r)
	}
	seen := map[pair]bool{}
	for _, key := range order {
		for _, r := range groups[key] {
			add("label "+r.Label, r)
			add(r.Label+" / "+r.Backend, r)
			var p pair
			if i := strings.LastIndex(r.Label, "-"); i >= 0 && r.Label[i+1:] != base {
				p = pair{"label " + r.Label, "label " + r.Label[:i] + "-" + base}
			}
			if p.name != "" && !seen[p] {
				seen[p] = true
				pairs = append(pairs, p)
			}
			if r.Backend != base {
				p = pair{r.Label + " / " + r.Backend, r.Label + " / " + base}
				if !seen[p] {
					seen[p] = true
					pairs = append(pairs, p)
				}
			}
		}
	}
	header := false
	for _, p := range pairs {
		byRep := map[int]float64{}
		for _, r := range runs[p.of] {
			byRep[r.Rep] = r.Throughput
		}
		var q []float64
		for _, r := range runs[p.name] {
			if b := byRep[r.Rep]; b > 0 {
				q = append(q, r.Throughput/b)
			}
		}
		if len(q) == 0 {
			continue
		}
		if !header {
			fmt.Fprintf(w, "\n### Throughput ÷ %s's, paired by repetition\n\n| runs | median | range | repetitions |\n|---|---|---|---|\n", base)
			header = true
		}
		med, lo, hi := medianRange(q)
		fmt.Fprintf(w, "| %s | %.2f | %.2f – %.2f | %d |\n", strings.TrimPrefix(p.name, "label "), med, lo, hi, len(q))
	}
}

// medianRange returns the median (the mean of the middle two for an even
// count), the least and the greatest of vs.
func medianRange(vs []float64) (med, lo, hi float64) {
	s := slices.Clone(vs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		med = s[n/2]
	} else {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return med, s[0], s[n-1]
}

// result is one JSON line of -results.
type result struct {
	Label    string        `json:"label"`
	Backend  string        `json:"backend"`
	Rep      int           `json:"rep"`
	Procs    int           `json:"procs"`
	Workers  int           `json:"workers"`
	Limit    int64         `json:"limit"`
	Hold     time.Duration `json:"hold"`
	Duration time.Duration `json:"duration"`
	Errors   int64         `json:"errors"`
	Sems     int           `json:"sems,omitempty"`
	Cluster  bool          `json:"cluster,omitempty"`
	// Starved is the number of goroutines that got no grant in the whole
	// run (their waits are missing from the wait percentiles).
	Starved int `json:"starved"`
	// Pending is the longest time a goroutine spent in an Acquire that had
	// not returned when the run ended (a stall that the waits of the
	// grants do not show).
	Pending time.Duration `json:"pending_max"`
	// Average cores busy during the run (start instant to the last
	// worker's exit): the whole machine, the worker processes,
	// redis-server, and the rest (other jobs on the machine).
	CPUMachine float64 `json:"cpu_machine"`
	CPUWorkers float64 `json:"cpu_workers"`
	CPURedis   float64 `json:"cpu_redis"`
	CPUOther   float64 `json:"cpu_other"`
	// Redis INFO commandstats over the run (standalone server only).
	CmdsPerAcq    float64 `json:"cmds_per_acq,omitempty"`
	ScriptsPerAcq float64 `json:"scripts_per_acq,omitempty"`
	UsecPerEval   float64 `json:"usec_per_evalsha,omitempty"`
	// redis-server's CPU time (with -redis-pid) per grant, in µs.
	RedisUsPerAcq float64 `json:"redis_us_per_acq,omitempty"`
	analyze.Report
}
