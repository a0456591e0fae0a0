package plot

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgpdf"
	"gonum.org/v1/plot/vg/vgsvg"

	"pepa/models"
)

// Figure is the plot of a ranking, laid out but not drawn: one panel per
// mapping with every machine's finishing-time CDF, all panels on one time
// range so that mappings compare at a glance, and for several mappings a
// panel of robustness against expected makespan. Every size is in points,
// so PNG, SVG and PDF show the same fonts at the same sizes.
type Figure struct {
	Panels  []*plot.Plot   // the CDF panels in ranking order, then the scatter panel
	Legends []*plot.Legend // the legend drawn beside each panel (nil: none)
	Rows    int            // grid of panels, filled row by row
	Cols    int
	Width   vg.Length // of the whole figure
	Height  vg.Length
	// legendHeads head each legend (the column it lists).
	legendHeads []string
	tiles       draw.Tiles
	legendW     vg.Length // width of the strip right of a panel that holds its legend
	font        font.Font // the one typeface of every text
}

// PlotDPI is the resolution of PNG output; SVG and PDF are vector formats
// of the same size in points.
const PlotDPI = 150

// Text sizes, in points, of every figure (a paper's figure text is 8-10
// points at print size).
const (
	plotTitleSize  = 11
	plotLabelSize  = 10
	plotTickSize   = 9
	plotLegendSize = 9
)

// plotPalette is a qualitative palette of ten colours distinguishable on
// screen and in print (the Tableau 10 colours); machines past the tenth
// reuse the colours with the next line style in plotDashes.
var plotPalette = []color.RGBA{
	{0x1f, 0x77, 0xb4, 0xff}, {0xff, 0x7f, 0x0e, 0xff}, {0x2c, 0xa0, 0x2c, 0xff}, {0xd6, 0x27, 0x28, 0xff},
	{0x94, 0x67, 0xbd, 0xff}, {0x8c, 0x56, 0x4b, 0xff}, {0xe3, 0x77, 0xc2, 0xff}, {0x7f, 0x7f, 0x7f, 0xff},
	{0xbc, 0xbd, 0x22, 0xff}, {0x17, 0xbe, 0xcf, 0xff},
}

// plotDashes are the line styles, in order: solid, dashed, dotted,
// dash-dotted.
var plotDashes = [][]vg.Length{
	nil,
	{vg.Points(6), vg.Points(3)},
	{vg.Points(1.5), vg.Points(2)},
	{vg.Points(7), vg.Points(2.5), vg.Points(1.5), vg.Points(2.5)},
}

// machineStyle is the colour and dashes of the i-th machine of a panel.
func machineStyle(i int) (color.Color, []vg.Length) {
	return plotPalette[i%len(plotPalette)], plotDashes[(i/len(plotPalette))%len(plotDashes)]
}

// Line widths: every machine, and the bottleneck (the machine that sets
// the robustness), drawn bold.
const (
	plotLineWidth       = 1.4
	plotBottleneckWidth = 3.2
)

// PlotFormat is the plot format a file name asks for by its extension:
// "png", "svg" or "pdf".
func PlotFormat(path string) (string, error) {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".png", ".svg", ".pdf":
		return ext[1:], nil
	}
	return "", fmt.Errorf("%s: the extension must be .png, .svg or .pdf", path)
}

// WritePlot draws the figure of a ranking (NewFigure) in format "png",
// "svg" or "pdf".
func WritePlot(w io.Writer, format string, results []*models.Ranked) error {
	f, err := NewFigure(results)
	if err != nil {
		return err
	}
	return f.Write(w, format)
}

// NewFigure lays out the figure of results, in their order.
func NewFigure(results []*models.Ranked) (*Figure, error) {
	if len(results) == 0 {
		return nil, fmt.Errorf("plot: no mapping to draw")
	}
	f := &Figure{font: font.Font{Typeface: "Liberation", Variant: "Sans"}, legendW: 1.9 * vg.Inch}
	tmax := sharedTimeRange(results)
	for _, r := range results {
		p, legend, err := f.cdfPanel(r, tmax)
		if err != nil {
			return nil, err
		}
		f.Panels = append(f.Panels, p)
		f.Legends = append(f.Legends, legend)
		f.legendHeads = append(f.legendHeads, fmt.Sprintf("machine  P(F ≤ %g)", r.Beta))
	}
	if len(results) > 1 {
		p, err := f.scatterPanel(results)
		if err != nil {
			return nil, err
		}
		f.Panels = append(f.Panels, p)
		f.Legends = append(f.Legends, nil)
		f.legendHeads = append(f.legendHeads, "")
	}
	f.Cols = 1
	if len(f.Panels) > 1 {
		f.Cols = 2
	}
	f.Rows = (len(f.Panels) + f.Cols - 1) / f.Cols
	f.Width = vg.Length(f.Cols) * (4.6*vg.Inch + f.legendW)
	f.Height = vg.Length(f.Rows) * 3.6 * vg.Inch
	f.tiles = draw.Tiles{Rows: f.Rows, Cols: f.Cols, PadX: vg.Inch / 4, PadY: vg.Inch / 4,
		PadTop: vg.Inch / 8, PadBottom: vg.Inch / 8, PadLeft: vg.Inch / 8, PadRight: vg.Inch / 8}
	return f, nil
}

// sharedTimeRange is the end of the time axis every CDF panel shares:
// past the goal, and past every machine's 0.99 quantile so that each curve
// is seen to level off.
func sharedTimeRange(results []*models.Ranked) float64 {
	tmax := 0.0
	for _, r := range results {
		tmax = math.Max(tmax, r.Beta*1.25)
		for _, m := range r.Machines {
			if !math.IsNaN(m.Quantile) && !math.IsInf(m.Quantile, 1) {
				tmax = math.Max(tmax, m.Quantile*1.05)
			}
		}
	}
	return tmax
}

// Write draws the figure in format "png", "svg" or "pdf". Fonts are
// embedded in SVG and PDF, so every viewer shows the typeface PNG shows.
func (f *Figure) Write(w io.Writer, format string) error {
	switch format {
	case "png":
		img := vgimg.NewWith(vgimg.UseWH(f.Width, f.Height), vgimg.UseDPI(PlotDPI), vgimg.UseBackgroundColor(color.White))
		f.draw(draw.New(img))
		_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(w)
		return err
	case "svg":
		img := vgsvg.NewWith(vgsvg.UseWH(f.Width, f.Height), vgsvg.EmbedFonts(true))
		dc := draw.New(img)
		dc.SetColor(color.White)
		dc.Fill(dc.Rectangle.Path())
		f.draw(dc)
		_, err := img.WriteTo(w)
		return err
	case "pdf":
		img := vgpdf.New(f.Width, f.Height)
		f.draw(draw.New(img))
		_, err := img.WriteTo(w)
		return err
	}
	return fmt.Errorf("plot format %q: want png, svg or pdf", format)
}

// draw draws the panels on their aligned tiles, each CDF panel's legend in
// a strip to the right of its axes, where it can cover no curve.
func (f *Figure) draw(dc draw.Canvas) {
	grid := make([][]*plot.Plot, f.Rows)
	for i := range grid {
		grid[i] = make([]*plot.Plot, f.Cols)
		for j := range grid[i] {
			if k := i*f.Cols + j; k < len(f.Panels) {
				grid[i][j] = f.Panels[k]
			}
		}
	}
	canvases := plot.Align(grid, f.tiles, dc)
	for i := range grid {
		for j, p := range grid[i] {
			if p == nil {
				continue
			}
			c := canvases[i][j]
			k := i*f.Cols + j
			legend := f.Legends[k]
			if legend == nil {
				p.Draw(c)
				continue
			}
			p.Draw(draw.Crop(c, 0, -f.legendW, 0, 0))
			// The strip starts level with the top of the axes (below the
			// title), its heading first.
			strip := draw.Crop(c, c.Max.X-c.Min.X-f.legendW+vg.Points(12), 0, 0, -p.Title.TextStyle.Height(p.Title.Text)-p.Title.Padding)
			head := legend.TextStyle
			head.YAlign = draw.YTop
			strip.FillText(head, vg.Point{X: strip.Min.X, Y: strip.Max.Y}, f.legendHeads[k])
			legend.Draw(draw.Crop(strip, 0, 0, 0, -head.Height(f.legendHeads[k])-vg.Points(3)))
		}
	}
}

// style sets every text of a panel to the figure's typeface and sizes.
func (f *Figure) style(p *plot.Plot) {
	p.Title.TextStyle.Font = font.From(f.font, plotTitleSize)
	p.Title.Padding = vg.Points(6)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(f.font, plotLabelSize)
		a.Tick.Label.Font = font.From(f.font, plotTickSize)
	}
}

func (f *Figure) cdfPanel(r *models.Ranked, tmax float64) (*plot.Plot, *plot.Legend, error) {
	p := plot.New()
	f.style(p)
	b := r.Bottleneck()
	title := fmt.Sprintf("%s: robustness %.4f", filepath.Base(r.Model), r.Robustness)
	if b >= 0 {
		title += ", bottleneck " + r.Machines[b].Name
	}
	if r.Rank > 0 && r.Group > 0 {
		title = fmt.Sprintf("#%d %s", r.Rank, title)
	}
	p.Title.Text = title
	p.X.Label.Text = "time t"
	p.Y.Label.Text = "P(machine finished by t)"
	p.X.Min, p.X.Max = 0, tmax
	p.Y.Min, p.Y.Max = 0, 1.02
	p.Add(plotter.NewGrid())

	legend := plot.NewLegend()
	legend.TextStyle.Font = font.From(f.font, plotLegendSize)
	legend.Top, legend.Left = true, true
	legend.ThumbnailWidth = vg.Points(24)
	legend.Padding = vg.Points(1)
	const n = 240
	var bold *plotter.Line
	for i, m := range r.Machines {
		if m.Dist == nil {
			continue
		}
		pts := make(plotter.XYs, n+1)
		for k := 0; k <= n; k++ {
			t := tmax * float64(k) / n
			v, err := m.CDF(t)
			if err != nil {
				return nil, nil, err
			}
			pts[k].X, pts[k].Y = t, v
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, nil, err
		}
		l.Color, l.Dashes = machineStyle(i)
		l.Width = vg.Points(plotLineWidth)
		label := fmt.Sprintf("%s  %.4f", m.Name, m.PByBeta)
		if i == b {
			l.Width = vg.Points(plotBottleneckWidth)
			label += "  bottleneck"
			bold = l
		} else {
			p.Add(l)
		}
		legend.Add(label, l)
	}
	if bold != nil {
		p.Add(bold) // on top of the others
	}
	goal, err := plotter.NewLine(plotter.XYs{{X: r.Beta, Y: 0}, {X: r.Beta, Y: 1.02}})
	if err != nil {
		return nil, nil, err
	}
	goal.Color = color.Black
	goal.Width = vg.Points(1)
	goal.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(goal)
	// The goal's label sits right of the line near the bottom, where the
	// CDFs (rising towards 1 by then) are not.
	label, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: r.Beta, Y: 0.03}}, Labels: []string{fmt.Sprintf("β = %g", r.Beta)}})
	if err != nil {
		return nil, nil, err
	}
	label.TextStyle[0].Font = font.From(f.font, plotLegendSize)
	label.TextStyle[0].XAlign = draw.XLeft
	label.Offset = vg.Point{X: vg.Points(4)}
	p.Add(label)
	legend.Add(fmt.Sprintf("goal β = %g", r.Beta), goal)
	return p, &legend, nil
}

func (f *Figure) scatterPanel(results []*models.Ranked) (*plot.Plot, error) {
	p := plot.New()
	f.style(p)
	p.Title.Text = "robustness against expected makespan"
	p.X.Label.Text = "expected makespan E[max F]"
	p.Y.Label.Text = "robustness min P(F ≤ β)"
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
	s.GlyphStyle.Radius = vg.Points(3.5)
	s.GlyphStyle.Color = plotPalette[0]
	s.GlyphStyle.Shape = draw.CircleGlyph{}
	p.Add(plotter.NewGrid())
	p.Add(s)
	l, err := plotter.NewLabels(plotter.XYLabels{XYs: pts, Labels: labels})
	if err != nil {
		return nil, err
	}
	for i := range l.TextStyle {
		l.TextStyle[i].Font = font.From(f.font, plotLegendSize)
		l.TextStyle[i].XAlign = draw.XLeft
	}
	l.Offset = vg.Point{X: vg.Points(6), Y: vg.Points(2)}
	p.Add(l)
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
