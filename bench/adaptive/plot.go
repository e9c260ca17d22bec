package main

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/distsem/distsem/bench/internal/svgplot"
)

// drawRun draws a run's limit (and PostgreSQL's active workload queries),
// throughput and p99 per second, one panel each, with the change and the
// kill marked by vertical lines.
func drawRun(res *result, file string) error {
	title := fmt.Sprintf("%s from %d, %d processes × %d callers", res.Mode, res.Limit, res.Procs, res.Workers)
	lim := panel(title+": limit", "limit / queries active")
	tput := panel("throughput", "queries/s")
	p99 := panel("p99 of the query's time on PostgreSQL", "ms")
	series := func(f func(second) float64) plotter.XYs {
		xy := make(plotter.XYs, len(res.Seconds))
		for i, s := range res.Seconds {
			xy[i] = plotter.XY{X: float64(s.T) + 0.5, Y: f(s)}
		}
		return xy
	}
	add := func(p *plot.Plot, name string, xy plotter.XYs, c color.Color, dashed bool) error {
		l, err := plotter.NewLine(xy)
		if err != nil {
			return err
		}
		l.Color = c
		l.Width = vg.Points(1.5)
		if dashed {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		p.Add(l)
		if name != "" {
			p.Legend.Add(name, l)
		}
		return nil
	}
	blue, grey, red := color.RGBA{B: 200, A: 255}, color.RGBA{R: 120, G: 120, B: 120, A: 255}, color.RGBA{R: 200, A: 255}
	if res.Mode != "failsafe" {
		if err := add(lim, "enforced limit", series(func(s second) float64 { return float64(s.Limit) }), blue, false); err != nil {
			return err
		}
	}
	if res.Mode == "monitor" && len(res.Recs) > 0 { // an adaptive run recommends the limit it enforces
		xy := make(plotter.XYs, 0, len(res.Recs))
		for _, r := range res.Recs {
			if r.Proc == res.Recs[0].Proc {
				xy = append(xy, plotter.XY{X: r.T, Y: float64(r.Limit)})
			}
		}
		if err := add(lim, "recommended", xy, red, false); err != nil {
			return err
		}
	}
	if err := add(lim, "active in PostgreSQL (max per s)", series(func(s second) float64 { return float64(s.ActiveMax) }), grey, true); err != nil {
		return err
	}
	if err := add(tput, "", series(func(s second) float64 { return float64(s.Queries) }), blue, false); err != nil {
		return err
	}
	if err := add(p99, "p99 of the load's queries", series(func(s second) float64 { return s.P99 }), blue, false); err != nil {
		return err
	}
	if len(res.Probe) > 0 {
		xy := make(plotter.XYs, len(res.Probe))
		for i, pr := range res.Probe {
			xy[i] = plotter.XY{X: pr.T, Y: pr.MS}
		}
		if err := add(p99, "the probe query alone", xy, grey, true); err != nil {
			return err
		}
	}
	tops := map[*plot.Plot]float64{}
	for _, sec := range res.Seconds {
		tops[lim] = max(tops[lim], float64(sec.Limit), float64(sec.ActiveMax))
		tops[tput] = max(tops[tput], float64(sec.Queries))
		tops[p99] = max(tops[p99], sec.P99)
	}
	for _, r := range res.Recs {
		tops[lim] = max(tops[lim], float64(r.Limit))
	}
	for _, p := range []*plot.Plot{lim, tput, p99} {
		for _, m := range []struct {
			t    float64
			name string
		}{{res.Change, "change"}, {res.Kill, "kill -9"}} {
			if m.t <= 0 {
				continue
			}
			l, err := plotter.NewLine(plotter.XYs{{X: m.t, Y: 0}, {X: m.t, Y: max(tops[p], 1)}})
			if err != nil {
				return err
			}
			l.Color = color.RGBA{R: 230, G: 120, A: 255}
			l.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
			p.Add(l)
			if p == lim {
				p.Legend.Add(m.name, l)
			}
		}
	}
	return save(file, lim, tput, p99)
}

func panel(title, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "seconds"
	p.Y.Label.Text = y
	p.Y.Min = 0
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	return p
}

// save draws the panels one above the other into an SVG file.
func save(file string, ps ...*plot.Plot) error {
	return svgplot.Save(file, 8*vg.Inch, 3*vg.Inch, len(ps), 1, ps...)
}
