package main

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// writeChart draws the number of queries running fleet-wide over time as
// an SVG step chart, with the limit as a dashed line.
func writeChart(w io.Writer, s *summary) error {
	const (
		width, height = 800.0, 300.0
		left, right   = 50.0, 20.0
		top, bottom   = 40.0, 40.0
	)
	plotW, plotH := width-left-right, height-top-bottom
	span := float64(max(s.endNanos-s.startNanos, 1))
	yMax := max(s.MaxInFlight, int(s.Limit), 1) + 1
	x := func(at int64) float64 { return left + plotW*float64(at-s.startNanos)/span }
	y := func(n int) float64 { return top + plotH*(1-float64(n)/float64(yMax)) }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" viewBox="0 0 %g %g" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%g" y="20" font-size="14">Concurrent queries, fleet-wide: %s, limit %d, %d workers x %d goroutines (max %d, %.0f rows/s)</text>`+"\n",
		left, s.Mode, s.Limit, s.Workers, s.Concurrency, s.MaxInFlight, s.RowsPerSec)

	// Axes and grid.
	step := max(1, yMax/6)
	for n := 0; n <= yMax; n += step {
		fmt.Fprintf(&b, `<line x1="%g" x2="%g" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%g" y="%.1f" text-anchor="end">%d</text>`+"\n",
			left, left+plotW, y(n), y(n), left-6, y(n)+4, n)
	}
	secs := span / 1e9
	tick := niceStep(secs / 8)
	for t := 0.0; t <= secs+1e-9; t += tick {
		px := left + plotW*t/secs
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%g" y2="%g" stroke="#999"/><text x="%.1f" y="%g" text-anchor="middle">%gs</text>`+"\n",
			px, px, top+plotH, top+plotH+4, px, top+plotH+18, math.Round(t*1000)/1000)
	}
	fmt.Fprintf(&b, `<line x1="%g" x2="%g" y1="%g" y2="%g" stroke="black"/>`+"\n", left, left+plotW, top+plotH, top+plotH)
	fmt.Fprintf(&b, `<line x1="%g" x2="%g" y1="%g" y2="%g" stroke="black"/>`+"\n", left, left, top, top+plotH)

	// The limit.
	fmt.Fprintf(&b, `<line x1="%g" x2="%g" y1="%.1f" y2="%.1f" stroke="#d33" stroke-dasharray="6 4"/><text x="%g" y="%.1f" fill="#d33" text-anchor="end">limit %d</text>`+"\n",
		left, left+plotW, y(int(s.Limit)), y(int(s.Limit)), left+plotW, y(int(s.Limit))-4, s.Limit)

	// The step line.
	var path strings.Builder
	cur := 0
	fmt.Fprintf(&path, "M%.1f %.1f", x(s.startNanos), y(0))
	for _, e := range s.events {
		cur += e.delta
		fmt.Fprintf(&path, " H%.1f V%.1f", x(e.at), y(cur))
	}
	fmt.Fprintf(&path, " H%.1f", x(s.endNanos))
	fmt.Fprintf(&b, `<path d="%s" fill="none" stroke="#2463eb" stroke-width="1.5"/>`+"\n", path.String())
	fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="middle">time since start (%v total)</text>`+"\n",
		left+plotW/2, height-6, time.Duration(span).Round(time.Millisecond))
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// niceStep rounds d up to 1, 2 or 5 times a power of ten.
func niceStep(d float64) float64 {
	if d <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(d)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= d {
			return m * p
		}
	}
	return 10 * p
}
