package plot

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"pepa/models/optimize"
	"pepa/models/spec"
)

// maxCloudPoints bounds the evaluated mappings drawn as the cloud: past
// it an even sample of them (the front and the heuristics are drawn
// whatever).
const maxCloudPoints = 20_000

// WriteParetoPlot draws a robustness/expected-energy front (ParetoFront)
// in format "png", "svg" or "pdf": robustness against expected energy,
// every evaluated mapping a light point, the front a staircase through
// its mappings (numbered by rank), the heuristics' mappings marked and
// labelled. Same typeface, sizes and legend beside the axes as the
// ranking's figure (Figure).
func WriteParetoPlot(w io.Writer, format string, in *spec.Instance, res *optimize.ParetoResult) error {
	f, err := NewParetoFigure(in, res)
	if err != nil {
		return err
	}
	return f.Write(w, format)
}

// paretoEnergyScale is the unit of the energy axis: kJ (1000) when the
// energies reach 10 kJ, else J (1).
func paretoEnergyScale(res *optimize.ParetoResult) float64 {
	top := 0.0
	for _, q := range res.Cloud {
		if !math.IsInf(q.Energy, 0) && !math.IsNaN(q.Energy) {
			top = math.Max(top, q.Energy)
		}
	}
	for _, p := range res.Front {
		top = math.Max(top, p.ExpectedEnergy)
	}
	if top >= 1e4 {
		return 1000
	}
	return 1
}

// paretoSteps is the front as a staircase, in the plot's energy unit:
// from the least energy up, each front mapping, then along at its
// robustness to the next one's energy, up to the next one.
func paretoSteps(front []optimize.ParetoPoint) plotter.XYs {
	return paretoStepsScaled(front, paretoEnergyScaleOf(front))
}

func paretoEnergyScaleOf(front []optimize.ParetoPoint) float64 {
	return paretoEnergyScale(&optimize.ParetoResult{Front: front})
}

func paretoStepsScaled(front []optimize.ParetoPoint, scale float64) plotter.XYs {
	pts := make([]optimize.ParetoPoint, len(front))
	copy(pts, front)
	sort.SliceStable(pts, func(a, b int) bool {
		if pts[a].ExpectedEnergy != pts[b].ExpectedEnergy {
			return pts[a].ExpectedEnergy < pts[b].ExpectedEnergy
		}
		return pts[a].Robustness < pts[b].Robustness
	})
	var xy plotter.XYs
	for i, p := range pts {
		x := p.ExpectedEnergy / scale
		if i > 0 {
			xy = append(xy, plotter.XY{X: x, Y: xy[len(xy)-1].Y})
		}
		xy = append(xy, plotter.XY{X: x, Y: p.Robustness})
	}
	return xy
}

// NewParetoFigure lays out the figure of a front: one panel, its legend
// beside it.
func NewParetoFigure(in *spec.Instance, res *optimize.ParetoResult) (*Figure, error) {
	if len(res.Front) == 0 {
		return nil, fmt.Errorf("plot: no mapping on the front to draw")
	}
	f := &Figure{font: font.Font{Typeface: "Liberation", Variant: "Sans"}, legendW: 2.2 * vg.Inch}
	f.Width, f.Height = 6.2*vg.Inch+f.legendW, 4.4*vg.Inch
	scale := paretoEnergyScale(res)
	unit := "J"
	if scale == 1000 {
		unit = "kJ"
	}
	p := plot.New()
	f.style(p)
	how := fmt.Sprintf("all %d mappings", res.Mappings)
	if res.How == optimize.ParetoSearched {
		how = fmt.Sprintf("%d mappings searched", res.Mappings)
	}
	p.Title.Text = fmt.Sprintf("robustness against expected energy (β = %g; %s)", res.Beta, how)
	p.X.Label.Text = fmt.Sprintf("expected energy E[E] (%s)", unit)
	p.Y.Label.Text = "robustness min P(F ≤ β)"
	p.Add(plotter.NewGrid())

	legend := plot.NewLegend()
	legend.TextStyle.Font = font.From(f.font, plotLegendSize)
	legend.Top, legend.Left = true, true
	legend.ThumbnailWidth = vg.Points(24)
	legend.Padding = vg.Points(1)

	// The cloud, an even sample of it past maxCloudPoints.
	minX, maxX, minY := math.Inf(1), math.Inf(-1), 1.0
	see := func(x, y float64) {
		if math.IsInf(x, 0) || math.IsNaN(x) || math.IsNaN(y) {
			return
		}
		minX, maxX, minY = math.Min(minX, x), math.Max(maxX, x), math.Min(minY, y)
	}
	if err := paretoCloud(p, &legend, res, scale, see); err != nil {
		return nil, err
	}

	// The front: its staircase, its mappings, their ranks.
	if err := f.paretoFront(p, &legend, res, scale, see); err != nil {
		return nil, err
	}

	// The heuristics: one mark per distinct mapping, named by every
	// heuristic that gives it.
	shapes := []draw.GlyphDrawer{draw.TriangleGlyph{}, draw.SquareGlyph{}, draw.PyramidGlyph{}, draw.CrossGlyph{}, draw.PlusGlyph{}, draw.RingGlyph{}}
	marks := paretoMarks(res, scale, see)
	if math.IsInf(minX, 1) {
		minX, maxX = 0, 1
	}
	dx := math.Max(maxX-minX, 0.05*math.Abs(maxX))
	if dx == 0 {
		dx = 1
	}
	p.X.Min, p.X.Max = minX-0.04*dx, maxX+0.12*dx // room for the labels
	dy := math.Max(1-minY, 0.02)
	p.Y.Min, p.Y.Max = math.Max(0, minY-0.04*dy), math.Min(1.02, 1+0.04*dy)

	// The heuristics' marks and labels.
	toPoints := func(q plotter.XY) plotter.XY {
		return plotter.XY{X: (q.X - p.X.Min) / (p.X.Max - p.X.Min) * float64(f.Width-f.legendW) / 1.2,
			Y: (q.Y - p.Y.Min) / (p.Y.Max - p.Y.Min) * float64(f.Height) / 1.25}
	}
	// Obstacles: the front's mappings and their ranks.
	var placed []labelBox
	for _, q := range res.Front {
		c := toPoints(plotter.XY{X: q.ExpectedEnergy / scale, Y: q.Robustness})
		placed = append(placed, labelBox{c.X - 4, c.Y - 4, c.X + 4, c.Y + 4})
		if len(res.Front) <= 30 {
			w := 0.55 * (plotTickSize - 1) * float64(len(fmt.Sprint(q.Rank)))
			placed = append(placed, labelBox{c.X - 4 - w, c.Y + 2, c.X - 4, c.Y + 2 + plotTickSize - 1})
		}
	}
	// The marks, each in the legend with its place.
	at := make([]plotter.XY, len(marks)) // in points of the axes
	for i, mk := range marks {
		xy := plotter.XYs{{X: mk.pt.ExpectedEnergy / scale, Y: mk.pt.Robustness}}
		at[i] = toPoints(xy[0])
		s, err := plotter.NewScatter(xy)
		if err != nil {
			return nil, err
		}
		s.GlyphStyle = draw.GlyphStyle{Color: plotPalette[(i+1)%len(plotPalette)], Radius: vg.Points(4.5), Shape: shapes[i%len(shapes)]}
		p.Add(s)
		where := "dominated"
		switch {
		case mk.pt.Rank > 0:
			where = fmt.Sprintf("front #%d", mk.pt.Rank)
		case mk.pt.DominatedBy > 0:
			where = fmt.Sprintf("dominated by #%d", mk.pt.DominatedBy)
		}
		legend.Add(fmt.Sprintf("%s: %s", strings.Join(mk.names, ", "), where), s)
	}
	if err := f.paretoLabels(p, marks, at, placed, scale); err != nil {
		return nil, err
	}

	f.Panels = []*plot.Plot{p}
	f.Legends = []*plot.Legend{&legend}
	f.legendHeads = []string{"mappings"}
	f.Rows, f.Cols = 1, 1
	f.tiles = draw.Tiles{Rows: 1, Cols: 1, PadX: vg.Inch / 4, PadY: vg.Inch / 4,
		PadTop: vg.Inch / 8, PadBottom: vg.Inch / 8, PadLeft: vg.Inch / 8, PadRight: vg.Inch / 8}
	return f, nil
}

// paretoCloud draws the mappings solved, an even sample of them past
// maxCloudPoints, and tells see each point drawn.
func paretoCloud(p *plot.Plot, legend *plot.Legend, res *optimize.ParetoResult, scale float64, see func(x, y float64)) error {
	stride := max(1, (len(res.Cloud)+maxCloudPoints-1)/maxCloudPoints)
	var cloud plotter.XYs
	for k := 0; k < len(res.Cloud); k += stride {
		q := res.Cloud[k]
		if math.IsInf(q.Energy, 0) || math.IsNaN(q.Energy) || math.IsNaN(q.Robustness) {
			continue
		}
		cloud = append(cloud, plotter.XY{X: q.Energy / scale, Y: q.Robustness})
		see(q.Energy/scale, q.Robustness)
	}
	if len(cloud) > 0 {
		s, err := plotter.NewScatter(cloud)
		if err != nil {
			return err
		}
		s.GlyphStyle = draw.GlyphStyle{Color: color.RGBA{0xb8, 0xb8, 0xb8, 0xff}, Radius: vg.Points(1.6), Shape: draw.CircleGlyph{}}
		p.Add(s)
		label := fmt.Sprintf("a mapping (%d)", res.Mappings)
		if stride > 1 {
			label = fmt.Sprintf("a mapping (1 in %d of %d)", stride, res.Mappings)
		}
		legend.Add(label, s)
	}

	return nil
}

// paretoFront draws the front: its staircase, its mappings, their ranks.
func (f *Figure) paretoFront(p *plot.Plot, legend *plot.Legend, res *optimize.ParetoResult, scale float64, see func(x, y float64)) error {
	front := plotter.XYs{}
	var ranks []string
	for _, q := range res.Front {
		front = append(front, plotter.XY{X: q.ExpectedEnergy / scale, Y: q.Robustness})
		ranks = append(ranks, fmt.Sprintf("%d", q.Rank))
		see(q.ExpectedEnergy/scale, q.Robustness)
	}
	steps, err := plotter.NewLine(paretoStepsScaled(res.Front, scale))
	if err != nil {
		return err
	}
	steps.Color = plotPalette[0]
	steps.Width = vg.Points(plotLineWidth)
	p.Add(steps)
	fs, err := plotter.NewScatter(front)
	if err != nil {
		return err
	}
	fs.GlyphStyle = draw.GlyphStyle{Color: plotPalette[0], Radius: vg.Points(3), Shape: draw.CircleGlyph{}}
	p.Add(fs)
	legend.Add(fmt.Sprintf("front (%d), by rank", len(res.Front)), steps, fs)
	if len(res.Front) <= 30 {
		l, err := plotter.NewLabels(plotter.XYLabels{XYs: front, Labels: ranks})
		if err != nil {
			return err
		}
		for i := range l.TextStyle {
			l.TextStyle[i].Font = font.From(f.font, plotTickSize-1)
			l.TextStyle[i].Color = plotPalette[0]
			l.TextStyle[i].XAlign = draw.XRight
		}
		l.Offset = vg.Point{X: vg.Points(-4), Y: vg.Points(2)}
		p.Add(l)
	}

	return nil
}

// paretoMark is a heuristics' mapping on the figure: every heuristic that
// gives it, and its point.
type paretoMark struct {
	names []string
	pt    optimize.ParetoPoint
}

// paretoMarks are the heuristics' distinct mappings, each named by every
// heuristic that gives it; see is told each point.
func paretoMarks(res *optimize.ParetoResult, scale float64, see func(x, y float64)) []*paretoMark {
	var marks []*paretoMark
	for _, h := range res.Heuristics {
		key := allocKey(h.Allocation)
		var found *paretoMark
		for _, mk := range marks {
			if allocKey(mk.pt.Allocation) == key {
				found = mk
			}
		}
		if found == nil {
			found = &paretoMark{pt: h}
			marks = append(marks, found)
		}
		found.names = append(found.names, h.Heuristics...)
		see(h.ExpectedEnergy/scale, h.Robustness)
	}
	return marks
}

// paretoLabels names the heuristics' marks (at, in points of the axes),
// avoiding what is placed.
func (f *Figure) paretoLabels(p *plot.Plot, marks []*paretoMark, at []plotter.XY, placed []labelBox, scale float64) error {
	// Their labels: marks drawn over one another share one. A label goes
	// right of its mark, else above or below it, left of it, then lower
	// and lower on the right with a leader line: the first place whose
	// box (in points of the axes, about: the axes' size is the figure's
	// less the legend and the margins) overlaps no label, mark or front
	// mapping drawn.
	labelled := make([]bool, len(marks))
	for i := range marks {
		if labelled[i] {
			continue
		}
		names := []string{}
		group := make([]bool, len(marks))
		for k := i; k < len(marks); k++ {
			if !labelled[k] && math.Abs(at[k].X-at[i].X) < 4 && math.Abs(at[k].Y-at[i].Y) < 4 {
				labelled[k], group[k] = true, true
				names = append(names, marks[k].names...)
			}
		}
		name := strings.Join(names, ", ")
		w := 0.55 * plotLegendSize * float64(len(name))
		type place struct {
			dx, dy float64
			left   bool
		}
		places := []place{{7, -3, false}, {7, 7, false}, {7, -13, false}, {-7, -3, true}, {-7, 7, true}, {-7, -13, true}}
		first := len(places)
		for k := 2; k < 10; k++ {
			places = append(places, place{12, -3 - 11*float64(k), false})
		}
		chosen, box := len(places)-1, labelBox{}
		for c, pl := range places {
			x0 := at[i].X + pl.dx
			if pl.left {
				x0 -= w
			}
			box = labelBox{x0, at[i].Y + pl.dy, x0 + w, at[i].Y + pl.dy + plotLegendSize}
			free := true
			for _, q := range placed {
				free = free && !box.overlaps(q)
			}
			for k := range marks {
				free = free && (group[k] || !box.overlaps(labelBox{at[k].X - 5, at[k].Y - 5, at[k].X + 5, at[k].Y + 5}))
			}
			if free {
				chosen = c
				break
			}
		}
		pl := places[chosen]
		xy := plotter.XYs{{X: marks[i].pt.ExpectedEnergy / scale, Y: marks[i].pt.Robustness}}
		l, err := plotter.NewLabels(plotter.XYLabels{XYs: xy, Labels: []string{name}})
		if err != nil {
			return err
		}
		l.TextStyle[0].Font = font.From(f.font, plotLegendSize)
		l.TextStyle[0].XAlign = draw.XLeft
		if pl.left {
			l.TextStyle[0].XAlign = draw.XRight
		}
		l.Offset = vg.Point{X: vg.Points(pl.dx), Y: vg.Points(pl.dy)}
		p.Add(l)
		if chosen >= first {
			// A leader from the mark to the label's start.
			dx := (pl.dx - 2) / (float64(f.Width-f.legendW) / 1.2) * (p.X.Max - p.X.Min)
			dy := (pl.dy + plotLegendSize/2) / (float64(f.Height) / 1.25) * (p.Y.Max - p.Y.Min)
			lead, err := plotter.NewLine(plotter.XYs{xy[0], {X: xy[0].X + dx, Y: xy[0].Y + dy}})
			if err != nil {
				return err
			}
			lead.Color = color.Gray{0x60}
			lead.Width = vg.Points(0.6)
			p.Add(lead)
		}
		placed = append(placed, box)
	}
	return nil
}

// allocKey names an allocation.
func allocKey(alloc [][]int) string {
	var b strings.Builder
	for _, apps := range alloc {
		b.WriteString(optimize.AppsKey(apps))
		b.WriteByte('|')
	}
	return b.String()
}

// labelBox is a label's extent in points: left, bottom, right, top.
type labelBox struct{ x0, y0, x1, y1 float64 }

func (b labelBox) overlaps(c labelBox) bool {
	return b.x0 < c.x1 && c.x0 < b.x1 && b.y0 < c.y1 && c.y0 < b.y1
}
