package main

import (
	"image/color"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/distsem/distsem/bench/internal/svgplot"
)

// style of each backend, in legend order.
var styles = []struct {
	backend, name string
	color         color.RGBA
	shape         draw.GlyphDrawer
}{
	{"distsem", "distsem (Redis, FIFO)", color.RGBA{0x1f, 0x77, 0xb4, 255}, draw.CircleGlyph{}},
	{"leased", "distsem leased", color.RGBA{0x17, 0xbe, 0xcf, 255}, draw.RingGlyph{}},
	{"seedsem", "seedsem (ZSET + BRPOP)", color.RGBA{0x7f, 0x7f, 0x7f, 255}, draw.SquareGlyph{}},
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
	{"growth-procs.svg", []string{"growth-procs"}, drawProcs},
	{"growth-waiters.svg", []string{"growth-waiters"}, drawWaiters},
	{"growth-sems.svg", []string{"growth-sems"}, drawSems},
	{"cluster.svg", []string{"cluster-1node", "cluster-3masters"}, drawCluster},
	{"peers.svg", []string{"peers-l1", "peers-uncontended"}, drawPeers},
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

// save writes plots side by side into one SVG file.
func save(file string, w vg.Length, ps ...*plot.Plot) error {
	return svgplot.Save(file, w, 4.5*vg.Inch, 1, len(ps), ps...)
}
