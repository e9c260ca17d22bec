package main

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"math"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// writeChart draws the number of queries running fleet-wide over time as a
// step chart, with the limit as a dashed line, and writes it to w in
// format "svg" or "png".
func writeChart(w io.Writer, s *summary, format string) error {
	plot.DefaultFont = font.Font{Typeface: "Liberation", Variant: "Sans"}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Concurrent queries, fleet-wide: %s, limit %d, %d workers × %d goroutines",
		s.Mode, s.Limit, s.Workers, s.Concurrency)
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.X.Label.Text = fmt.Sprintf("seconds since start (%v in all, %.0f rows/s)",
		time.Duration(s.endNanos-s.startNanos).Round(time.Millisecond), s.RowsPerSec)
	p.Y.Label.Text = "queries running"
	p.Add(plotter.NewGrid())

	secs := func(at int64) float64 { return float64(at-s.startNanos) / 1e9 }
	steps := plotter.XYs{{X: 0, Y: 0}}
	cur := 0
	for _, e := range s.events {
		cur += e.delta
		steps = append(steps, plotter.XY{X: secs(e.at), Y: float64(cur)})
	}
	steps = append(steps, plotter.XY{X: secs(s.endNanos), Y: float64(cur)})
	line, err := plotter.NewLine(steps)
	if err != nil {
		return err
	}
	line.StepStyle = plotter.PostStep
	line.Color = color.RGBA{R: 0x24, G: 0x63, B: 0xeb, A: 0xff}
	line.Width = vg.Points(1.2)

	end := secs(s.endNanos)
	limit, err := plotter.NewLine(plotter.XYs{{X: 0, Y: float64(s.Limit)}, {X: end, Y: float64(s.Limit)}})
	if err != nil {
		return err
	}
	limit.Color = color.RGBA{R: 0xd3, G: 0x33, B: 0x33, A: 0xff}
	limit.Dashes = []vg.Length{vg.Points(6), vg.Points(4)}
	limit.Width = vg.Points(1.2)

	p.Add(line, limit)
	p.Legend.Add(fmt.Sprintf("running (max %d)", s.MaxInFlight), line)
	p.Legend.Add(fmt.Sprintf("limit %d", s.Limit), limit)
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs = vg.Points(8)
	p.Legend.Padding = vg.Points(3)

	p.X.Min, p.X.Max = 0, end
	// Headroom above the lines for the legend.
	p.Y.Min, p.Y.Max = 0, float64(max(s.MaxInFlight, int(s.Limit)))*1.35+0.5
	p.Y.Tick.Marker = integerTicks{}

	wt, err := p.WriterTo(8*vg.Inch, 3*vg.Inch, format)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return err
	}
	out := buf.Bytes()
	if format == "svg" {
		// The SVG names its font, Liberation Sans, without embedding it
		// (that would take 550 kB); Arial has the same metrics, so the
		// layout holds where Liberation is not installed.
		out = bytes.ReplaceAll(out, []byte("font-family:Liberation Sans;"),
			[]byte("font-family:'Liberation Sans',Arial,Helvetica,sans-serif;"))
	}
	_, err = w.Write(out)
	return err
}

// integerTicks labels whole numbers of queries only.
type integerTicks struct{}

func (integerTicks) Ticks(lo, hi float64) []plot.Tick {
	step := max(1, int(hi-lo)/6)
	var ticks []plot.Tick
	for n := int(math.Ceil(lo)); float64(n) <= hi; n++ {
		t := plot.Tick{Value: float64(n)}
		if n%step == 0 {
			t.Label = fmt.Sprint(n)
		}
		ticks = append(ticks, t)
	}
	return ticks
}
