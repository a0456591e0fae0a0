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

// TestAnalyzePluginBesideStoppedPart: Q is blocked for good (it cooperates
// on s2 with a side that never offers it), so its part is one state with
// no transition. The product still has a steady state, and the plug-in
// passage from p1 to s1 is the Exp(4.83) of (s1, 4.83) alone, decomposed
// as flat (found by the differential test: the decomposed path refused Q's
// part as a deadlock).
func TestAnalyzePluginBesideStoppedPart(t *testing.T) {
	src := "P = (s1, 2.06).P_1; P_1 = (p1, 3.09).(s1, 4.83).P + (p0, 4.02).P_1; Q = (s2, 4.99).Q; (P) <s2> (Q)"
	s := testchain.Structure(t, src)
	for _, flat := range []bool{false, true} {
		a, err := Analyze(context.Background(), s, Query{SourceActions: []string{"p1"}, TargetActions: []string{"s1"}, Times: []float64{0.1, 0.5}, Flat: flat}, AnalyzeOptions{})
		if err != nil {
			t.Fatalf("flat %v: %v", flat, err)
		}
		for _, p := range a.Points {
			if want := 1 - math.Exp(-4.83*p.T); !near(p.CDF, want, 1e-10) {
				t.Errorf("flat %v: F(%g) = %.12g, want %.12g", flat, p.T, p.CDF, want)
			}
		}
		if a.MeanErr != nil || !near(a.Mean, 1/4.83, 1e-12) {
			t.Errorf("flat %v: mean %g (%v), want 1/4.83", flat, a.Mean, a.MeanErr)
		}
	}
}

// TestAnalyzeDenseMean: a chain whose series would need more than a million
// steps is solved by the dense matrix exponential, which has no series; the
// mean then comes from the linear solve (it was reported unavailable):
// Exp(1e19) then Exp(1) to the first firing of b, mean 1 + 1e-19.
func TestAnalyzeDenseMean(t *testing.T) {
	s := testchain.Structure(t, "P = (a, 1e19).Q; Q = (b, 1.0).P; P")
	a, err := Analyze(context.Background(), s, Query{TargetActions: []string{"b"}, Times: []float64{1, 1e9}}, AnalyzeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a.Result.Method != "dense matrix exponential" {
		t.Fatalf("solved by %s, want the dense matrix exponential", a.Result.Method)
	}
	if a.MeanErr != nil || !near(a.Mean, 1, 1e-12) {
		t.Errorf("mean %g (%v), want 1", a.Mean, a.MeanErr)
	}
	if !near(a.Points[0].CDF, 1-math.Exp(-1), 1e-10) {
		t.Errorf("F(1) = %.12g, want 1 - 1/e", a.Points[0].CDF)
	}
}
