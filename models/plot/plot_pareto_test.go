package plot

import (
	"bytes"
	"context"
	"image/png"
	"sort"
	"testing"

	"pepa/models/optimize"
)

// TestParetoPlot: the figure draws in every format, with the front as a
// staircase through its points.
func TestParetoPlot(t *testing.T) {
	in := loadEnergySpec(t)
	res, err := optimize.ParetoFront(context.Background(), in, optimize.ParetoOptions{Beta: 40, Power: in.Power})
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"png", "svg", "pdf"} {
		var b bytes.Buffer
		if err := WriteParetoPlot(&b, format, in, res); err != nil {
			t.Fatal(err)
		}
		if b.Len() < 1000 {
			t.Errorf("%s: %d bytes", format, b.Len())
		}
		if format == "png" {
			if _, err := png.Decode(&b); err != nil {
				t.Error(err)
			}
		}
	}
	steps := paretoSteps(res.Front)
	if len(steps) != 2*len(res.Front)-1 {
		t.Fatalf("%d corners for %d front mappings", len(steps), len(res.Front))
	}
	// From the least energy up: energy never decreases, robustness never
	// decreases, and every front mapping is a corner.
	for i := 1; i < len(steps); i++ {
		if steps[i].X < steps[i-1].X || steps[i].Y < steps[i-1].Y {
			t.Errorf("corner %d (%g, %g) after (%g, %g)", i, steps[i].X, steps[i].Y, steps[i-1].X, steps[i-1].Y)
		}
	}
	var xs []float64
	for _, p := range res.Front {
		xs = append(xs, p.ExpectedEnergy)
	}
	sort.Float64s(xs)
	for i, x := range xs {
		if steps[2*i].X != x/paretoEnergyScale(res) {
			t.Errorf("corner %d at %g, want front mapping at %g", 2*i, steps[2*i].X, x)
		}
	}
}
