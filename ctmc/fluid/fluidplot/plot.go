package fluidplot

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgpdf"
	"gonum.org/v1/plot/vg/vgsvg"

	"pepa/ctmc/fluid"
)

// DPI is the resolution of PNG output.
const DPI = 150

// palette: the Tableau 10 colours, as the other figures use.
var palette = []color.RGBA{
	{0x1f, 0x77, 0xb4, 0xff}, {0xff, 0x7f, 0x0e, 0xff}, {0x2c, 0xa0, 0x2c, 0xff}, {0xd6, 0x27, 0x28, 0xff},
	{0x94, 0x67, 0xbd, 0xff}, {0x8c, 0x56, 0x4b, 0xff}, {0xe3, 0x77, 0xc2, 0xff}, {0x7f, 0x7f, 0x7f, 0xff},
	{0xbc, 0xbd, 0x22, 0xff}, {0x17, 0xbe, 0xcf, 0xff},
}

var dashes = [][]vg.Length{nil, {vg.Points(6), vg.Points(3)}, {vg.Points(1.5), vg.Points(2)}}

func style(i int) (color.Color, []vg.Length) {
	return palette[i%len(palette)], dashes[(i/len(palette))%len(dashes)]
}

// maxLines bounds the lines of one panel: past it only the largest
// populations are drawn (the legend says how many were left out).
const maxLines = 12

// Write draws the analysis of the model named name in format "png",
// "svg" or "pdf". It needs a time series or a passage.
func Write(w io.Writer, format, name string, a *fluid.Analysis) error {
	face := font.Font{Typeface: "Liberation", Variant: "Sans"}
	var panels []*plot.Plot
	if s := a.Series; s != nil && len(s.Times) > 1 {
		for _, g := range a.Model.Groups {
			p, err := populationPanel(face, name, a.Model, g, s)
			if err != nil {
				return err
			}
			panels = append(panels, p)
		}
		if len(a.Model.Labels) > 0 {
			p, err := throughputPanel(face, a.Model, s)
			if err != nil {
				return err
			}
			panels = append(panels, p)
		}
	}
	if ps := a.Passage; ps != nil && len(ps.Times) > 1 {
		p, err := passagePanel(face, ps)
		if err != nil {
			return err
		}
		panels = append(panels, p)
	}
	if len(panels) == 0 {
		return fmt.Errorf("plot: nothing to draw (a time series or a passage over at least two times)")
	}
	cols := 1
	if len(panels) > 1 {
		cols = 2
	}
	rows := (len(panels) + cols - 1) / cols
	width, height := vg.Length(cols)*6.2*vg.Inch, vg.Length(rows)*3.6*vg.Inch
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Inch / 4, PadY: vg.Inch / 4,
		PadTop: vg.Inch / 8, PadBottom: vg.Inch / 8, PadLeft: vg.Inch / 8, PadRight: vg.Inch / 8}
	drawAll := func(dc draw.Canvas) {
		grid := make([][]*plot.Plot, rows)
		for i := range grid {
			grid[i] = make([]*plot.Plot, cols)
			for j := range grid[i] {
				if k := i*cols + j; k < len(panels) {
					grid[i][j] = panels[k]
				}
			}
		}
		canvases := plot.Align(grid, tiles, dc)
		for i := range grid {
			for j, p := range grid[i] {
				if p != nil {
					p.Draw(canvases[i][j])
				}
			}
		}
	}
	switch format {
	case "png":
		img := vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(DPI), vgimg.UseBackgroundColor(color.White))
		drawAll(draw.New(img))
		_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(w)
		return err
	case "svg":
		img := vgsvg.NewWith(vgsvg.UseWH(width, height), vgsvg.EmbedFonts(true))
		dc := draw.New(img)
		dc.SetColor(color.White)
		dc.Fill(dc.Rectangle.Path())
		drawAll(dc)
		_, err := img.WriteTo(w)
		return err
	case "pdf":
		img := vgpdf.New(width, height)
		drawAll(draw.New(img))
		_, err := img.WriteTo(w)
		return err
	}
	return fmt.Errorf("plot format %q: want png, svg or pdf", format)
}

func newPanel(face font.Font, title, xlabel, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = font.From(face, 11)
	p.Title.Padding = vg.Points(6)
	p.X.Label.Text, p.Y.Label.Text = xlabel, ylabel
	for _, ax := range []*plot.Axis{&p.X, &p.Y} {
		ax.Label.TextStyle.Font = font.From(face, 10)
		ax.Tick.Label.Font = font.From(face, 9)
	}
	p.Legend.TextStyle.Font = font.From(face, 9)
	p.Legend.Top, p.Legend.Left = true, false
	p.Legend.ThumbnailWidth = vg.Points(24)
	p.Add(plotter.NewGrid())
	return p
}

func line(p *plot.Plot, i int, label string, xs, ys []float64) error {
	pts := make(plotter.XYs, len(xs))
	for k := range xs {
		pts[k].X, pts[k].Y = xs[k], ys[k]
	}
	l, err := plotter.NewLine(pts)
	if err != nil {
		return err
	}
	l.Color, l.Dashes = style(i)
	l.Width = vg.Points(1.4)
	p.Add(l)
	p.Legend.Add(label, l)
	return nil
}

func populationPanel(face font.Font, name string, m *fluid.Model, g fluid.Group, s *fluid.Series) (*plot.Plot, error) {
	p := newPanel(face, fmt.Sprintf("%s: %s (%d copies), fluid means", filepath.Base(name), g.Name, g.Copies), "time t", "copies in the local state")
	// The largest populations first, at most maxLines of them.
	order := make([]int, len(g.States))
	peak := make([]float64, len(g.States))
	for d := range g.States {
		order[d] = d
		for _, v := range s.Populations[g.Offset+d] {
			peak[d] = math.Max(peak[d], v)
		}
	}
	for i := 1; i < len(order); i++ {
		for j := i; j > 0 && peak[order[j]] > peak[order[j-1]]; j-- {
			order[j], order[j-1] = order[j-1], order[j]
		}
	}
	for k, d := range order {
		if k == maxLines {
			p.Legend.Add(fmt.Sprintf("(%d smaller not drawn)", len(order)-maxLines))
			break
		}
		if err := line(p, k, g.States[d], s.Times, s.Populations[g.Offset+d]); err != nil {
			return nil, err
		}
	}
	p.Y.Min = 0
	return p, nil
}

func throughputPanel(face font.Font, m *fluid.Model, s *fluid.Series) (*plot.Plot, error) {
	p := newPanel(face, "throughputs (fluid)", "time t", "firings per unit time")
	order := make([]int, len(m.Labels))
	peak := make([]float64, len(m.Labels))
	for a := range m.Labels {
		order[a] = a
		for _, v := range s.Throughputs[a] {
			peak[a] = math.Max(peak[a], v)
		}
	}
	for i := 1; i < len(order); i++ {
		for j := i; j > 0 && peak[order[j]] > peak[order[j-1]]; j-- {
			order[j], order[j-1] = order[j-1], order[j]
		}
	}
	for k, a := range order {
		if k == maxLines {
			p.Legend.Add(fmt.Sprintf("(%d smaller not drawn)", len(order)-maxLines))
			break
		}
		if err := line(p, k, m.Labels[a], s.Times, s.Throughputs[a]); err != nil {
			return nil, err
		}
	}
	p.Y.Min = 0
	return p, nil
}

func passagePanel(face font.Font, ps *fluid.Passage) (*plot.Plot, error) {
	p := newPanel(face, fmt.Sprintf("tagged copy of %s: passage-time CDF (fluid, %s)", ps.Group, ps.Semantics), "time t", "P(arrived by t)")
	if err := line(p, 0, "CDF", ps.Times, ps.CDF); err != nil {
		return nil, err
	}
	p.Y.Min, p.Y.Max = 0, 1.02
	p.Legend.Left = false
	p.Legend.Top = false
	return p, nil
}
