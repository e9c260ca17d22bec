// Package svgplot writes gonum plots into one SVG file, in a grid: the
// one way bench's tools draw (bench/plot's growth curves, bench/adaptive's
// runs), so that every plot of BENCHMARKS.md is a text file that diffs
// and renders on GitHub.
package svgplot

import (
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Save draws ps into a grid of rows × cols tiles of w × h each, filled row
// by row, and writes it to file.
func Save(file string, w, h vg.Length, rows, cols int, ps ...*plot.Plot) error {
	img := vgsvg.New(w*vg.Length(cols), h*vg.Length(rows))
	dc := draw.New(img)
	pad := vg.Millimeter * 2
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: 2 * pad, PadY: 2 * pad, PadTop: pad, PadBottom: pad, PadLeft: pad, PadRight: pad}
	for i, p := range ps {
		p.Draw(tiles.At(dc, i%cols, i/cols))
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := img.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
