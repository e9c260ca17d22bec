package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// report prints, per variant: EVALSHA µs per call (median and range over
// the rounds), its paired difference with the base variant (the median of
// the per-round differences, and their range), the SLOWLOG mean of each
// step, the iterations per second of wall time and their per-round ratio to
// the base variant, and every nested command's calls per iteration and µs
// per call.
func report(w io.Writer, vs []variant, res [][]sample, base int) {
	fmt.Fprintf(w, "# evalsha = server µs per EVALSHA (INFO commandstats, all calls); trim = the same from SLOWLOG, mean of the fastest 90%% of each step's calls;\n# median [min-max] over rounds; Δ = paired per-round difference of trim with %q\n", vs[base].name)
	fmt.Fprintf(w, "%-16s %-20s %-20s %-24s %s\n", "variant", "evalsha µs", "trim µs", "Δ trim µs/EVALSHA", "steps (trim µs)")
	for i, v := range vs {
		ev := col(res[i], func(s sample) float64 { return s.evalsha })
		tr := col(res[i], trim)
		var d []float64
		for r := range res[i] {
			if r < len(res[base]) {
				d = append(d, trim(res[i][r])-trim(res[base][r]))
			}
		}
		var steps []string
		for j, st := range v.steps {
			m := col(res[i], func(s sample) float64 {
				if j < len(s.step) {
					return s.step[j]
				}
				return 0
			})
			steps = append(steps, fmt.Sprintf("%s %s", st.role, fmtRange(m, 1)))
		}
		fmt.Fprintf(w, "%-16s %-20s %-20s %-24s %s\n", v.name, fmtRange(ev, 2), fmtRange(tr, 2), fmtSigned(d), strings.Join(steps, "  "))
	}
	fmt.Fprintf(w, "\n# iterations per second of wall time, one client (with -pipe 1: one round trip per script, so the pair rate the scripts allow with no library around them);\n# median [min-max] over rounds; ÷ = median of the per-round ratios to %q\n", vs[base].name)
	for i, v := range vs {
		var q []float64
		for r := range res[i] {
			if r < len(res[base]) && res[base][r].rate > 0 {
				q = append(q, res[i][r].rate/res[base][r].rate)
			}
		}
		fmt.Fprintf(w, "%-16s %-28s ÷ %s\n", v.name, fmtRange(col(res[i], func(s sample) float64 { return s.rate }), 0), fmtRange(q, 2))
	}
	fmt.Fprintf(w, "\n# nested commands: calls per iteration, µs per call (median over rounds)\n")
	for i, v := range vs {
		names := map[string]bool{}
		for _, s := range res[i] {
			for k := range s.nested {
				names[k] = true
			}
		}
		var ks []string
		for k := range names {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		var parts []string
		for _, k := range ks {
			calls := col(res[i], func(s sample) float64 { return float64(s.nested[k].calls) })
			per := col(res[i], func(s sample) float64 {
				c := s.nested[k]
				return float64(c.usec) / float64(max(c.calls, 1))
			})
			parts = append(parts, fmt.Sprintf("%s %.2f×%.2f", k, median(calls)/float64(nIter), median(per)))
		}
		fmt.Fprintf(w, "%-22s %s\n", v.name, strings.Join(parts, "  "))
	}
}

// trim is the mean over a sample's steps of their trimmed SLOWLOG means.
func trim(s sample) float64 {
	if len(s.step) == 0 {
		return 0
	}
	t := 0.0
	for _, x := range s.step {
		t += x
	}
	return t / float64(len(s.step))
}

// nIter is the measured iterations per round (set by main).
var nIter = 1

func col(ss []sample, f func(sample) float64) []float64 {
	out := make([]float64, len(ss))
	for i, s := range ss {
		out[i] = f(s)
	}
	return out
}

func median(x []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	y := append([]float64(nil), x...)
	sort.Float64s(y)
	if len(y)%2 == 1 {
		return y[len(y)/2]
	}
	return (y[len(y)/2-1] + y[len(y)/2]) / 2
}

func fmtRange(x []float64, prec int) string {
	if len(x) == 0 {
		return "-"
	}
	y := append([]float64(nil), x...)
	sort.Float64s(y)
	return fmt.Sprintf("%.*f [%.*f-%.*f]", prec, median(y), prec, y[0], prec, y[len(y)-1])
}

func fmtSigned(x []float64) string {
	if len(x) == 0 {
		return "-"
	}
	y := append([]float64(nil), x...)
	sort.Float64s(y)
	return fmt.Sprintf("%+.2f [%+.2f,%+.2f]", median(y), y[0], y[len(y)-1])
}
