package passage

import (
	"context"
	"math"
	"testing"

	"pepa/internal/testing/testchain"
	"pepa/internal/testing/testmodels"
)

// TestAnalyzeByLaplace: a stiff hypoexponential passage (phases at rates
// from 1e-4 to 1e4: uniformization would take about 1e9 steps) by the
// Laplace engine, auto and forced: CDF and density at times from 10 to
// 1e5 against the closed forms, quantiles at the closed form's CDF, the
// mean the sum of the phases' means; and uniformization forced on the
// same passage's non-stiff cousin gives the same values as Laplace.
func TestAnalyzeByLaplace(t *testing.T) {
	rates := []float64{1e4, 0.1, 1e-4, 2.5e-4, 5, 3e-3}
	s := testchain.Structure(t, testmodels.Hypoexponential(rates))
	cdf := func(t float64) float64 { return testmodels.HypoexponentialCDF(rates, t) }
	pdf := func(t float64) float64 { return testmodels.HypoexponentialPDF(rates, t) }
	mean := 0.0
	for _, r := range rates {
		mean += 1 / r
	}
	times := []float64{10, 300, 3000, 1e4, 3e4, 1e5}
	for _, force := range []string{EngineAuto, EngineLaplace} {
		a, err := Analyze(context.Background(), s, Query{TargetActions: []string{"a5"}, Times: times, Quantiles: []float64{0.5, 0.99}, PDF: true}, AnalyzeOptions{Transient: force})
		if err != nil {
			t.Fatal(err)
		}
		if a.Engine != EngineLaplace || a.Result != nil {
			t.Fatalf("%s: engine %q (%s), want laplace", force, a.Engine, a.EngineWhy)
		}
		acc := a.Distribution.Accuracy()
		for _, p := range a.Points {
			if d := math.Abs(p.CDF - cdf(p.T)); d > acc {
				t.Errorf("%s: CDF(%g) %.15g, closed form %.15g (accuracy %.2g)", force, p.T, p.CDF, cdf(p.T), acc)
			}
			if want := pdf(p.T); math.Abs(p.PDF-want) > 1e-9*want+1e-15 {
				t.Errorf("%s: PDF(%g) %.15g, closed form %.15g", force, p.T, p.PDF, want)
			}
		}
		for _, q := range a.Quantiles {
			if f := cdf(q.T); math.Abs(f-q.P) > 1e-9 {
				t.Errorf("%s: %g-quantile %g, where the closed form is %g", force, q.P, q.T, f)
			}
		}
		if math.Abs(a.Mean-mean) > 1e-12*mean || a.MeanFrom != "laplace" {
			t.Errorf("%s: mean %.17g (%s), want %.17g", force, a.Mean, a.MeanFrom, mean)
		}
	}
	// Forced uniformization on the same shape with rates near 1 (a
	// short series), against forced Laplace.
	s2 := testchain.Structure(t, `P0 = (a0, 3).P1; P1 = (a1, 0.5).P2; P2 = (a2, 1).P3; P3 = (stay, 1).P3; P0`)
	var got [2]*Analysis
	for k, force := range []string{EngineUniformization, EngineLaplace} {
		a, err := Analyze(context.Background(), s2, Query{TargetActions: []string{"a2"}, Times: []float64{0.5, 2, 8}, Quantiles: []float64{0.9}}, AnalyzeOptions{Transient: force})
		if err != nil {
			t.Fatal(err)
		}
		if a.Engine != force {
			t.Fatalf("forced %s, ran %s", force, a.Engine)
		}
		got[k] = a
	}
	for i, p := range got[0].Points {
		if d := math.Abs(p.CDF - got[1].Points[i].CDF); d > 1e-10 {
			t.Errorf("CDF(%g): uniformization %.15g, Laplace %.15g", p.T, p.CDF, got[1].Points[i].CDF)
		}
	}
	if d := math.Abs(got[0].Mean - got[1].Mean); d > 1e-12*got[0].Mean {
		t.Errorf("mean: uniformization %.17g, Laplace %.17g", got[0].Mean, got[1].Mean)
	}
}
