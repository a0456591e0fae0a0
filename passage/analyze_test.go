package passage

import (
	"context"
	"math"
	"testing"

	"pepa/internal/testchain"
)

// TestAnalyze: the library entry point chooses the part, solves, and
// reports points, quantiles and the mean of a passage with a closed form:
// the first firing of a, Exp(2) then Exp(1) in P, while Q runs beside.
func TestAnalyze(t *testing.T) {
	src := "P = (b, 2.0).P1; P1 = (a, 1.0).P; Q = (c, 5.0).Q; P <> Q"
	s := testchain.Structure(t, src)
	want := func(at float64) float64 { return hypoCDF([]float64{2, 1}, at) }
	for _, flat := range []bool{false, true} {
		a, err := Analyze(context.Background(), s, Query{TargetActions: []string{"a"}, Times: []float64{0.5, 2}, Quantiles: []float64{0.5}, PDF: true, Flat: flat}, AnalyzeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if wantSolved := map[bool]string{false: "decomposed", true: "flat"}[flat]; a.Solved != wantSolved {
			t.Errorf("flat %v: solved %s (%s)", flat, a.Solved, a.SolvedWhy)
		}
		for _, p := range a.Points {
			if !near(p.CDF, want(p.T), 1e-10) {
				t.Errorf("flat %v: F(%g) = %.12g, want %.12g", flat, p.T, p.CDF, want(p.T))
			}
			// f(t) = 2 (e^{-t} - e^{-2t}).
			if wantPDF := 2 * (math.Exp(-p.T) - math.Exp(-2*p.T)); !near(p.PDF, wantPDF, 1e-9) {
				t.Errorf("flat %v: f(%g) = %.12g, want %.12g", flat, p.T, p.PDF, wantPDF)
			}
		}
		if len(a.Quantiles) != 1 || !near(want(a.Quantiles[0].T), 0.5, 1e-9) {
			t.Errorf("flat %v: quantiles %+v", flat, a.Quantiles)
		}
		if a.MeanErr != nil || !near(a.Mean, 1.5, 1e-12) {
			t.Errorf("flat %v: mean %g (%v), want 1.5", flat, a.Mean, a.MeanErr)
		}
	}
	if _, err := Analyze(context.Background(), s, Query{TargetActions: []string{"a"}, Target: "P == P1"}, AnalyzeOptions{}); err == nil {
		t.Errorf("both a target action and a predicate: no error")
	}
	if _, err := Analyze(context.Background(), s, Query{TargetActions: []string{"a"}, Times: []float64{math.NaN()}}, AnalyzeOptions{}); err == nil {
		t.Errorf("NaN time: no error")
	}
	a, err := Analyze(context.Background(), s, Query{TargetActions: []string{"a"}}, AnalyzeOptions{})
	if err != nil || len(a.Points) != 21 || a.Points[20].CDF < 0.999 {
		t.Errorf("default grid: %v, %d points", err, len(a.Points))
	}
}
