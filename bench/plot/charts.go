package main

import (
	"fmt"
	"image/color"
	"os"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// style of each backend, in legend order.
var styles = []struct {
	backend, name string
	color         color.RGBA
	shape         draw.GlyphDrawer
}{
	{"distsem", "distsem (Redis, FIFO)", color.RGBA{0x1f, 0x77, 0xb4, 255}, draw.CircleGlyph{}},
	{"leased", "distsem leased", color.RGBA{0x17, 0xbe, 0xcf, 255}, draw.RingGlyph{}},
	{"seed", "seed (ZSET+BRPOP)", color.RGBA{0x7f, 0x7f, 0x7f, 255}, draw.SquareGlyph{}},
	{"redsync", "go-redsync/redsync", color.RGBA{0xd6, 0x27, 0x28, 255}, draw.TriangleGlyph{}},
	{"redislock", "bsm/redislock", color.RGBA{0xff, 0x7f, 0x0e, 255}, draw.PyramidGlyph{}},
	{"local", "core.Local (in-process)", color.RGBA{0x2c, 0xa0, 0x2c, 255}, draw.CrossGlyph{}},
	{"xsync", "x/sync/semaphore (in-process)", color.RGBA{0x94, 0x67, 0xbd, 255}, draw.PlusGlyph{}},
}

func styleOf(b string) int {
	for i, s := range styles {
		if s.backend == b {
			return i
		}
	}
	return -1
}

// backendOrder returns the keys of m in legend order (unknown ones last).
func backendOrder[V any](m map[string]V) []string {
	var bs []string
	for b := range m {
		bs = append(bs, b)
	}
	slices.SortFunc(bs, func(a, b string) int {
		ia, ib := styleOf(a), styleOf(b)
		if ia < 0 {
			ia = len(styles)
		}
		if ib < 0 {
			ib = len(styles)
		}
		if ia != ib {
			return ia - ib
		}
		if a < b {
			return -1
		}
		return 1
	})
	return bs
}

func legendName(b string) string {
	if i := styleOf(b); i >= 0 {
		return styles[i].name
	}
	return b
}

func inProcess(b string) bool { return b == "local" || b == "xsync" }

type chart struct {
	file   string
	labels []string
	draw   func(sel, all []row, file string) error
}

var charts = []chart{
	{"growth-procs.png", []string{"growth-procs"}, drawProcs},
	{"growth-waiters.png", []string{"growth-waiters"}, drawWaiters},
	{"growth-sems.png", []string{"growth-sems"}, drawSems},
	{"cluster.png", []string{"cluster-1node", "cluster-3masters"}, drawCluster},
	{"peers.png", []string{"peers-l1", "peers-uncontended"}, drawPeers},
}

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Y.Tick.Marker = plainTicks{plot.DefaultTicks{}}
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	return p
}

// plainTicks labels ticks as 750, not 750.00.
type plainTicks struct{ plot.Ticker }

func (t plainTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := t.Ticker.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = strconv.FormatFloat(ts[i].Value, 'g', 6, 64)
		}
	}
	return ts
}

// atTicks labels exactly the given values (a log axis with few points).
func atTicks(vs ...float64) plot.ConstantTicks {
	ts := make([]plot.Tick, len(vs))
	for i, v := range vs {
		ts[i] = plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', 6, 64)}
	}
	return ts
}

func logX(p *plot.Plot) {
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
}

// addLines draws one line per series; in-process backends, measured at one
// x only, become dashed horizontal lines over the x range of the others.
func addLines(p *plot.Plot, ss []series, dashed bool, legend bool) error {
	lo, hi := 0.0, 0.0
	for _, s := range ss {
		if len(s.xs) > 1 {
			if lo == 0 || s.xs[0] < lo {
				lo = s.xs[0]
			}
			hi = max(hi, s.xs[len(s.xs)-1])
		}
	}
	for _, s := range ss {
		xys := make(plotter.XYs, len(s.xs))
		for i := range s.xs {
			xys[i] = plotter.XY{X: s.xs[i], Y: s.ys[i]}
		}
		flat := inProcess(s.backend) && len(s.xs) == 1 && hi > lo
		if flat {
			xys = plotter.XYs{{X: lo, Y: s.ys[0]}, {X: hi, Y: s.ys[0]}}
		}
		l, pts, err := plotter.NewLinePoints(xys)
		if err != nil {
			return err
		}
		if i := styleOf(s.backend); i >= 0 {
			l.Color, pts.Color, pts.Shape = styles[i].color, styles[i].color, styles[i].shape
		}
		l.Width = vg.Points(1.5)
		if dashed || flat {
			l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		}
		if flat {
			p.Add(l)
		} else {
			p.Add(l, pts)
		}
		if legend {
			p.Legend.Add(legendName(s.backend), l, pts)
		}
	}
	return nil
}

// save writes plots side by side into one PNG.
func save(file string, w vg.Length, ps ...*plot.Plot) error {
	img := vgimg.New(w*vg.Length(len(ps)), 4.5*vg.Inch)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: len(ps), PadX: vg.Millimeter * 4, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	for i, p := range ps {
		p.Draw(tiles.At(dc, i, 0))
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

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
