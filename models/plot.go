package models

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// WritePlot draws one panel per mapping with every machine's finishing-time
// CDF and the makespan goal marked, and, for several mappings, a panel of
// robustness against expected makespan. format is "png" or "svg".
func WritePlot(w io.Writer, format string, results []*Ranked) error {
	var panels []*plot.Plot
	for _, r := range results {
		p, err := cdfPanel(r)
		if err != nil {
			return err
		}
		panels = append(panels, p)
	}
	if len(results) > 1 {
		p, err := scatterPanel(results)
		if err != nil {
			return err
		}
		panels = append(panels, p)
	}
	cols := 1
	if len(panels) > 1 {
		cols = 2
	}
	rows := (len(panels) + cols - 1) / cols
	width, height := vg.Length(cols)*5.5*vg.Inch, vg.Length(rows)*4*vg.Inch

	grid := make([][]*plot.Plot, rows)
	for i := range grid {
		grid[i] = make([]*plot.Plot, cols)
		for j := range grid[i] {
			if k := i*cols + j; k < len(panels) {
				grid[i][j] = panels[k]
			}
		}
	}
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Inch / 4, PadY: vg.Inch / 4,
		PadTop: vg.Inch / 8, PadBottom: vg.Inch / 8, PadLeft: vg.Inch / 8, PadRight: vg.Inch / 8}
	switch format {
	case "png":
		img := vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(110))
		dc := draw.New(img)
		dc.SetColor(color.White)
		dc.Fill(dc.Rectangle.Path())
		drawGrid(grid, tiles, dc)
		_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(w)
		return err
	case "svg":
		img := vgsvg.New(width, height)
		dc := draw.New(img)
		drawGrid(grid, tiles, dc)
		_, err := img.WriteTo(w)
		return err
	}
	return fmt.Errorf("plot format %q: want png or svg", format)
}

func drawGrid(grid [][]*plot.Plot, tiles draw.Tiles, dc draw.Canvas) {
	canvases := plot.Align(grid, tiles, dc)
	for i := range grid {
		for j := range grid[i] {
			if grid[i][j] != nil {
				grid[i][j].Draw(canvases[i][j])
			}
		}
	}
}

func cdfPanel(r *Ranked) (*plot.Plot, error) {
	p := plot.New()
	title := fmt.Sprintf("%s: robustness %.4f", filepath.Base(r.Model), r.Robustness)
	if r.Rank > 0 && r.Group > 0 {
		title = fmt.Sprintf("#%d %s", r.Rank, title)
	}
	p.Title.Text = title
	p.X.Label.Text = "time t"
	p.Y.Label.Text = "P(machine finished by t)"
	p.Y.Min, p.Y.Max = 0, 1.02
	tmax := r.Beta * 1.6
	for _, m := range r.Machines {
		if !math.IsNaN(m.Quantile) && !math.IsInf(m.Quantile, 1) {
			tmax = math.Max(tmax, m.Quantile*1.05)
		}
	}
	p.X.Min, p.X.Max = 0, tmax
	const n = 200
	for i, m := range r.Machines {
		if m.dist == nil {
			continue
		}
		pts := make(plotter.XYs, n+1)
		for k := 0; k <= n; k++ {
			t := tmax * float64(k) / n
			v, err := m.CDF(t)
			if err != nil {
				return nil, err
			}
			pts[k].X, pts[k].Y = t, v
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, err
		}
		l.Color = plotutil.Color(i)
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("%s  P(F<=%g) = %.4f", m.Name, r.Beta, m.PByBeta), l)
	}
	goal, err := plotter.NewLine(plotter.XYs{{X: r.Beta, Y: 0}, {X: r.Beta, Y: 1.02}})
	if err != nil {
		return nil, err
	}
	goal.Color = color.Gray{Y: 80}
	goal.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	p.Add(goal)
	p.Legend.Add(fmt.Sprintf("goal beta = %g", r.Beta), goal)
	p.Legend.Top = false
	p.Legend.Left = false
	p.Legend.XOffs = -vg.Points(4)
	p.Legend.YOffs = vg.Points(4)
	p.Legend.TextStyle.Font.Size = vg.Points(8)
	p.Add(plotter.NewGrid())
	return p, nil
}

func scatterPanel(results []*Ranked) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "robustness against expected makespan"
	p.X.Label.Text = "expected makespan E[max F]"
	p.Y.Label.Text = "robustness min P(F <= beta)"
	pts := make(plotter.XYs, len(results))
	labels := make([]string, len(results))
	for i, r := range results {
		pts[i].X, pts[i].Y = r.ExpectedMakespan, r.Robustness
		labels[i] = fmt.Sprintf("#%d %s", r.Rank, filepath.Base(r.Model))
	}
	s, err := plotter.NewScatter(pts)
	if err != nil {
		return nil, err
	}
	s.GlyphStyle.Radius = vg.Points(4)
	s.GlyphStyle.Color = plotutil.Color(0)
	s.GlyphStyle.Shape = draw.CircleGlyph{}
	p.Add(s)
	l, err := plotter.NewLabels(plotter.XYLabels{XYs: pts, Labels: labels})
	if err != nil {
		return nil, err
	}
	for i := range l.TextStyle {
		l.TextStyle[i].Font.Size = vg.Points(8)
		l.TextStyle[i].XAlign = draw.XLeft
	}
	l.Offset = vg.Point{X: vg.Points(6), Y: vg.Points(2)}
	p.Add(l)
	p.Add(plotter.NewGrid())
	// Room for the labels.
	minX, maxX, minY, maxY := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, q := range pts {
		minX, maxX = math.Min(minX, q.X), math.Max(maxX, q.X)
		minY, maxY = math.Min(minY, q.Y), math.Max(maxY, q.Y)
	}
	dx, dy := math.Max(maxX-minX, 0.05*maxX), math.Max(maxY-minY, 0.02)
	p.X.Min, p.X.Max = minX-0.2*dx, maxX+dx
	p.Y.Min, p.Y.Max = minY-0.3*dy, math.Min(1.0, maxY+0.3*dy)
	if p.Y.Max <= maxY {
		p.Y.Max = maxY + 0.3*dy
	}
	return p, nil
}
