package plot

import (
	"fmt"
	"image/color"
	"io"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"pepa/ctmc/sweep"
)

// SweepSeries is one named measure over a one-parameter sweep.
type SweepSeries struct {
	Name string
	Y    []float64 // by point; NaN where missing
}

// SweepLines draws every series against the parameter, one line each, with
// the crossings marked. format is "png" or "svg".
func SweepLines(w io.Writer, format, xName string, xs []float64, series []SweepSeries, crossings []sweep.Crossing) error {
	p := plot.New()
	p.X.Label.Text = xName
	p.Y.Label.Text = "value"
	for k, s := range series {
		var pts plotter.XYs
		for i, x := range xs {
			if !math.IsNaN(s.Y[i]) && !math.IsInf(s.Y[i], 0) {
				pts = append(pts, plotter.XY{X: x, Y: s.Y[i]})
			}
		}
		if len(pts) == 0 {
			continue
		}
		l, pt, err := plotter.NewLinePoints(pts)
		if err != nil {
			return err
		}
		l.Color = plotutil.Color(k)
		l.Dashes = plotutil.Dashes(k % 4)
		pt.Color = plotutil.Color(k)
		pt.Shape = plotutil.Shape(k)
		p.Add(l, pt)
		p.Legend.Add(s.Name, l, pt)
	}
	if len(crossings) > 0 {
		var pts plotter.XYs
		for _, c := range crossings {
			pts = append(pts, plotter.XY{X: c.X, Y: c.Value})
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return err
		}
		sc.Shape = draw.RingGlyph{}
		sc.Radius = vg.Points(6)
		sc.Color = color.Black
		p.Add(sc)
		p.Legend.Add("crossing", sc)
	}
	p.Add(plotter.NewGrid())
	return saveSweep(w, format, []*plot.Plot{p}, 6*vg.Inch, 4*vg.Inch)
}

// sweepHeatGrid is a two-parameter sweep's values of one measure.
type sweepHeatGrid struct {
	xs, ys []float64
	z      [][]float64 // z[i][j] at xs[i], ys[j]
}

func (g sweepHeatGrid) Dims() (c, r int)   { return len(g.xs), len(g.ys) }
func (g sweepHeatGrid) Z(c, r int) float64 { return g.z[c][r] }
func (g sweepHeatGrid) X(c int) float64    { return g.xs[c] }
func (g sweepHeatGrid) Y(r int) float64    { return g.ys[r] }

// SweepHeat draws one heat map per measure over a two-parameter grid;
// z[k][i][j] is measure k at xs[i], ys[j].
func SweepHeat(w io.Writer, format, xName, yName string, xs, ys []float64, names []string, z [][][]float64) error {
	var panels []*plot.Plot
	for k, name := range names {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, row := range z[k] {
			for _, v := range row {
				if !math.IsNaN(v) && !math.IsInf(v, 0) {
					lo, hi = math.Min(lo, v), math.Max(hi, v)
				}
			}
		}
		if lo > hi {
			continue
		}
		if lo == hi {
			hi = lo + 1e-12*math.Max(1, math.Abs(lo))
		}
		pal := moreland.SmoothBlueRed()
		pal.SetMin(lo)
		pal.SetMax(hi)
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%s (%.4g to %.4g)", name, lo, hi)
		p.X.Label.Text, p.Y.Label.Text = xName, yName
		h := plotter.NewHeatMap(sweepHeatGrid{xs, ys, z[k]}, pal.Palette(64))
		h.NaN = color.Gray{Y: 200}
		p.Add(h)
		panels = append(panels, p)
	}
	if len(panels) == 0 {
		return fmt.Errorf("nothing to plot: every value is missing")
	}
	return saveSweep(w, format, panels, 5*vg.Inch, 4*vg.Inch)
}

// save writes panels side by side (two per row).
func saveSweep(w io.Writer, format string, panels []*plot.Plot, pw, ph vg.Length) error {
	cols := min(2, len(panels))
	rows := (len(panels) + cols - 1) / cols
	width, height := vg.Length(cols)*pw, vg.Length(rows)*ph
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Inch / 4, PadY: vg.Inch / 4,
		PadTop: vg.Inch / 8, PadBottom: vg.Inch / 8, PadLeft: vg.Inch / 8, PadRight: vg.Inch / 8}
	drawAll := func(dc draw.Canvas) {
		for k, p := range panels {
			p.Draw(tiles.At(dc, k%cols, k/cols))
		}
	}
	switch format {
	case "png":
		img := vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(110))
		dc := draw.New(img)
		dc.SetColor(color.White)
		dc.Fill(dc.Rectangle.Path())
		drawAll(dc)
		_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(w)
		return err
	case "svg":
		img := vgsvg.New(width, height)
		drawAll(draw.New(img))
		_, err := img.WriteTo(w)
		return err
	}
	return fmt.Errorf("plot format %q: want png or svg", format)
}
