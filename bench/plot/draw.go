package main

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

func drawProcs(sel, _ []row, file string) error {
	procs := func(r row) float64 { return float64(r.Procs) }
	u := newPlot("Utilization (limit 1, 4 goroutines/process, 1 ms holds)", "processes", "utilization (busy share of the permit)")
	t := newPlot("Throughput", "processes", "grants/s")
	logX(u)
	logX(t)
	u.X.Tick.Marker = atTicks(1, 2, 4, 8, 16)
	t.X.Tick.Marker = atTicks(1, 2, 4, 8, 16)
	u.Y.Min, u.Y.Max = 0, 1
	t.Y.Min = 0
	if err := addLines(u, bySeries(sel, procs, func(r row) float64 { return r.Util }), false, true); err != nil {
		return err
	}
	if err := addLines(t, bySeries(sel, procs, func(r row) float64 { return r.Throughput }), false, false); err != nil {
		return err
	}
	// Utilization alone flatters the designs that let the releaser barge
	// back in: fairness across goroutines is the third panel.
	j := newPlot("Fairness: Jain's index over goroutines' grants", "processes", "Jain's index (1 = equal shares)")
	logX(j)
	j.X.Tick.Marker = atTicks(1, 2, 4, 8, 16)
	j.Y.Min, j.Y.Max = 0, 1
	if err := addLines(j, bySeries(sel, procs, func(r row) float64 { return r.Jain }), false, false); err != nil {
		return err
	}
	u.Legend.Left, u.Legend.Top = true, false
	return save(file, 5*vg.Inch, u, t, j)
}

func drawWaiters(sel, _ []row, file string) error {
	n := func(r row) float64 { return float64(r.Workers) }
	p := newPlot("Wait vs waiters (limit 1, 1 ms holds; solid p50, dashed p99)", "waiters (goroutines over 4 processes)", "wait of the grants made (ms)")
	logX(p)
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	ms := func(f func(row) float64) func(row) float64 {
		return func(r row) float64 { return max(f(r)/1e6, 1e-3) }
	}
	if err := addLines(p, bySeries(sel, n, ms(func(r row) float64 { return r.WaitP50 })), false, false); err != nil {
		return err
	}
	if err := addLines(p, bySeries(sel, n, ms(func(r row) float64 { return r.WaitP99 })), true, false); err != nil {
		return err
	}
	// The percentiles cover the grants made; a run too short to serve
	// everyone (FIFO: the queue's tail) or a design that starves some
	// (barging) shows in the share of goroutines served at least once.
	s := newPlot("Goroutines served at least once in the run", "waiters (goroutines over 4 processes)", "share served")
	logX(s)
	s.Y.Min, s.Y.Max = 0, 1.05
	served := func(r row) float64 { return 1 - float64(r.Starved)/float64(max(r.Workers, 1)) }
	if err := addLines(s, bySeries(sel, n, served), false, true); err != nil {
		return err
	}
	s.Legend.Left, s.Legend.Top = true, false
	return save(file, 6.5*vg.Inch, p, s)
}

func drawSems(sel, all []row, file string) error {
	idle := map[string]float64{}
	for _, r := range filter(all, "idlemem") {
		idle[r.Backend] = r.IdleBytes
	}
	p := newPlot("Throughput vs distinct semaphores (32 goroutines over 4 processes, hold 0)", "semaphores (each acquire picks one at random)", "acquire+release pairs/s")
	logX(p)
	p.Y.Min = 0
	ss := bySeries(sel, func(r row) float64 { return float64(r.Sems) }, func(r row) float64 { return r.Throughput })
	if err := addLines(p, ss, false, false); err != nil {
		return err
	}
	for _, s := range ss {
		i := styleOf(s.backend)
		if i < 0 {
			continue
		}
		l, pts, err := plotter.NewLinePoints(plotter.XYs{{X: 1, Y: 1}})
		if err != nil {
			return err
		}
		l.Color, pts.Color, pts.Shape = styles[i].color, styles[i].color, styles[i].shape
		name := legendName(s.backend)
		if b, ok := idle[s.backend]; ok {
			name += fmt.Sprintf(": %.0f B of Redis memory per idle semaphore", max(b, 0))
		}
		p.Legend.Add(name, l, pts)
	}
	p.Legend.Left = true
	p.Y.Max *= 1.45 // room above the lines for the legend
	return save(file, 9*vg.Inch, p)
}

// bars draws a grouped bar chart: one group per backend, one bar per label.
func bars(title, y string, sel []row, labels, names []string, val func(row) float64) (*plot.Plot, error) {
	p := newPlot(title, "", y)
	bs := backendOrder(groupBy(sel))
	w := vg.Points(18)
	shades := []color.Color{color.RGBA{0x1f, 0x77, 0xb4, 255}, color.RGBA{0xff, 0x7f, 0x0e, 255}}
	for li, l := range labels {
		vs := make(plotter.Values, len(bs))
		for bi, b := range bs {
			var ys []float64
			for _, r := range sel {
				if r.Label == l && r.Backend == b {
					ys = append(ys, val(r))
				}
			}
			if len(ys) > 0 {
				vs[bi] = median(ys)
			}
		}
		bc, err := plotter.NewBarChart(vs, w)
		if err != nil {
			return nil, err
		}
		bc.Color = shades[li%len(shades)]
		bc.LineStyle.Width = 0
		bc.Offset = w * vg.Length(2*li-len(labels)+1) / 2
		p.Add(bc)
		if len(labels) > 1 {
			p.Legend.Add(names[li], bc)
		}
	}
	var names2 []string
	for _, b := range bs {
		names2 = append(names2, legendName(b))
	}
	p.NominalX(names2...)
	p.X.Tick.Label.Rotation = 0.35
	p.X.Tick.Label.XAlign = draw.XRight
	p.Y.Min = 0
	if len(labels) > 1 {
		p.Y.Max *= 1.25 // room above the bars for the legend
	}
	return p, nil
}

func groupBy(rows []row) map[string]bool {
	m := map[string]bool{}
	for _, r := range rows {
		m[r.Backend] = true
	}
	return m
}

func drawCluster(sel, _ []row, file string) error {
	p, err := bars("Aggregate throughput, 1 000 semaphores, 32 goroutines over 4 processes, hold 0", "acquire+release pairs/s", sel,
		[]string{"cluster-1node", "cluster-3masters"}, []string{"one redis-server", "Redis Cluster, 3 masters"},
		func(r row) float64 { return r.Throughput })
	if err != nil {
		return err
	}
	return save(file, 9*vg.Inch, p)
}

func drawPeers(sel, _ []row, file string) error {
	tput := func(r row) float64 { return r.Throughput }
	a, err := bars("Limit 1, 4 processes × 4 goroutines, 1 ms holds", "grants/s", filter(sel, "peers-l1"),
		[]string{"peers-l1"}, []string{"grants/s"}, tput)
	if err != nil {
		return err
	}
	// Time per pair rather than pairs/s: the in-process backends are 50×
	// faster, and a linear scale of time still shows both.
	b, err := bars("Uncontended: 1 goroutine, hold 0", "µs per acquire+release pair", filter(sel, "peers-uncontended"),
		[]string{"peers-uncontended"}, []string{"µs per pair"}, func(r row) float64 { return 1e6 / max(r.Throughput, 1) })
	if err != nil {
		return err
	}
	return save(file, 6*vg.Inch, a, b)
}
