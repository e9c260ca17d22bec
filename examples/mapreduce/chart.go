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
	"gonum.org/v1/plot/vg/draw"
)

// writeChart draws the number of queries running fleet-wide over time as a
// step chart, one line per run (s, and s.Compared if set), with the limit
// as a dashed line, and writes it to w in format "svg" or "png". The
// legend sits right of the plot, where it covers no line.
func writeChart(w io.Writer, s *summary, format string) error {
	plot.DefaultFont = font.Font{Typeface: "Liberation", Variant: "Sans"}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Concurrent queries, fleet-wide: limit %d, %d workers × %d goroutines", s.Limit, s.Workers, s.Concurrency)
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.X.Label.Text = "seconds since the run's start"
	p.Y.Label.Text = "queries running"
	p.Add(plotter.NewGrid())

	legend := plot.NewLegend()
	legend.Top, legend.Left = true, true
	legend.Padding = vg.Points(4)
	end, top := 0.0, float64(s.Limit)
	for i, r := range []*summary{s, s.Compared} {
		if r == nil {
			continue
		}
		line, err := timelineLine(r)
		if err != nil {
			return err
		}
		line.Color = runColors[i]
		p.Add(line)
		legend.Add(fmt.Sprintf("%s: max %d, %v", r.Mode, r.MaxInFlight, r.Elapsed.Round(10*time.Millisecond)), line)
		end, top = max(end, secs(r, r.endNanos)), max(top, float64(r.MaxInFlight))
	}
	limit, err := plotter.NewLine(plotter.XYs{{X: 0, Y: float64(s.Limit)}, {X: end, Y: float64(s.Limit)}})
	if err != nil {
		return err
	}
	limit.Color = color.RGBA{R: 0xd3, G: 0x33, B: 0x33, A: 0xff}
	limit.Dashes = []vg.Length{vg.Points(6), vg.Points(4)}
	limit.Width = vg.Points(1.2)
	p.Add(limit)
	legend.Add(fmt.Sprintf("limit K = %d", s.Limit), limit)

	p.X.Min, p.X.Max = 0, end
	p.Y.Min, p.Y.Max = 0, top+0.5
	p.Y.Tick.Marker = integerTicks{}

	const width = 9 * vg.Inch
	c, err := draw.NewFormattedCanvas(width, 3*vg.Inch, format)
	if err != nil {
		return err
	}
	dc := draw.New(c)
	dc.SetColor(color.White) // under the legend too, not only the plot
	dc.Fill(dc.Rectangle.Path())
	// The legend gets a column of its own, as wide as its entries, right
	// of the plot; its top is level with the plot's data area.
	legendWidth := legend.Rectangle(dc).Size().X + vg.Points(16)
	p.Draw(draw.Crop(dc, 0, -legendWidth, 0, 0))
	legend.Draw(draw.Crop(dc, width-legendWidth+vg.Points(8), 0, 0, -p.Title.TextStyle.Height(p.Title.Text)-vg.Points(14)))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
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

// runColors are the colours of the runs' lines: the semaphore's, then the
// compared run's.
var runColors = []color.Color{color.RGBA{R: 0x24, G: 0x63, B: 0xeb, A: 0xff}, color.RGBA{R: 0xe6, G: 0x8a, B: 0x00, A: 0xff}}

// secs is the instant at in seconds since r's start.
func secs(r *summary, at int64) float64 { return float64(at-r.startNanos) / 1e9 }

// timelineLine is r's step line: the queries running over time.
func timelineLine(r *summary) (*plotter.Line, error) {
	steps := plotter.XYs{{X: 0, Y: 0}}
	cur := 0
	for _, e := range r.events {
		cur += e.delta
		steps = append(steps, plotter.XY{X: secs(r, e.at), Y: float64(cur)})
	}
	steps = append(steps, plotter.XY{X: secs(r, r.endNanos), Y: float64(cur)})
	line, err := plotter.NewLine(steps)
	if err != nil {
		return nil, err
	}
	line.StepStyle = plotter.PostStep
	line.Width = vg.Points(1.2)
	return line, nil
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
