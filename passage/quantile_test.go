package passage

import (
	"context"
	"errors"
	"math"
	"testing"

	"pepa/internal/testing/testchain"
	"pepa/internal/testing/testmodels"
)

// TestQuantilesStopEarly: asked only up to a horizon and for quantiles
// (Options.Quantiles), the series stops once the CDF reaches the largest
// of them, and the quantiles still solve the closed form of a
// hypoexponential passage; a quantile past the series is
// ErrBeyondHorizon, never a wrong number.
func TestQuantilesStopEarly(t *testing.T) {
	rates := []float64{0.5, 1.5, 3, 7}
	c := chainOf(t, erlangModel(len(rates), rates))
	pr := InitialProblem(c, actions(t, c, "done"))
	full := solveOne(t, c, pr, Options{Complete: true})
	r := solveOne(t, c, pr, Options{Horizon: 1, Quantiles: []float64{0.5, 0.9}})
	if r.Complete || r.Iterations() >= full.Iterations() {
		t.Fatalf("%d steps (complete %v), the complete series %d", r.Iterations(), r.Complete, full.Iterations())
	}
	for _, p := range []float64{0.01, 0.5, 0.9} {
		q, err := r.Quantile(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := hypoCDF(rates, q); !near(got, p, 1e-9) {
			t.Errorf("quantile %g = %g, where the CDF is %.12g", p, q, got)
		}
	}
	// The series ends soon after the 0.9-quantile: 0.999999 is past it.
	if q, err := r.Quantile(0.999999); !errors.Is(err, ErrBeyondHorizon) {
		t.Errorf("0.999999-quantile %g (%v) from a series cut after the 0.9-quantile", q, err)
	}
	if got := cdf(t, r, 1); !near(got, hypoCDF(rates, 1), 1e-10) {
		t.Errorf("F(1) = %.15g, want %.15g", got, hypoCDF(rates, 1))
	}

	// A passage that ends with probability 1/2 never reaches 0.9: its
	// series runs to completion, and the quantile is +Inf.
	c2 := chainOf(t, "P = (a, 1).Q + (b, 1).Dead; Q = (done, 2).P; Dead = (never, 1).Dead; Z = (z, 1).Z; P <never> Z")
	r2 := solveOne(t, c2, InitialProblem(c2, actions(t, c2, "done")), Options{Horizon: 1, Quantiles: []float64{0.9}})
	if q, err := r2.Quantile(0.9); !r2.Complete || err != nil || !math.IsInf(q, 1) {
		t.Errorf("0.9-quantile %g (%v, complete %v), want +Inf", q, err, r2.Complete)
	}
}

// TestQuantilesAgreeWithCompleteSeries: on random models, passages in
// lanes and alone, the quantiles from a series stopped once they are
// reached equal those of the complete series.
func TestQuantilesAgreeWithCompleteSeries(t *testing.T) {
	ps := []float64{0.25, 0.5, 0.95}
	compared, shorter := 0, 0
	for seed := int64(1); seed <= 200; seed++ {
		_, s, c := randomChain(t, seed)
		if c == nil || c.N < 2 {
			continue
		}
		probs := actionProblems(s, c, 9, 3)
		for _, block := range [][]Problem{probs[:min(1, len(probs))], probs} {
			if len(block) == 0 {
				continue
			}
			full, err := Solve(t.Context(), c, block, Options{Complete: true, MaxIterations: 20000})
			if err != nil {
				continue
			}
			cut, err := Solve(t.Context(), c, block, Options{Horizon: 0.5, Quantiles: ps, MaxIterations: 20000})
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			for p := range block {
				if cut[p].Iterations() < full[p].Iterations() {
					shorter++
				}
				for _, x := range ps {
					want, err1 := full[p].Quantile(x)
					got, err2 := cut[p].Quantile(x)
					if err1 != nil || err2 != nil {
						t.Fatalf("seed %d passage %d: %g-quantile: %v, %v", seed, p, x, err1, err2)
					}
					if !(want == got || math.Abs(want-got) <= 1e-8*want) {
						t.Fatalf("seed %d passage %d: %g-quantile %.15g from %d steps, %.15g from the complete series (%d steps)", seed, p, x, got, cut[p].Iterations(), want, full[p].Iterations())
					}
				}
				compared++
			}
		}
	}
	if compared < 300 || shorter < 50 {
		t.Fatalf("%d passages compared, %d with a shorter series", compared, shorter)
	}
	t.Logf("%d passages compared, %d with a shorter series", compared, shorter)
}

// TestAnalyzeQuantilesMapping: the passage verb's analysis of the last
// machine of 20 applications on 5 machines with quantiles stops its
// series at the 0.99-quantile instead of completing it, and gives the
// quantiles, the CDF and the mean of the complete analysis.
func TestAnalyzeQuantilesMapping(t *testing.T) {
	s := testchain.Structure(t, testmodels.Mapping(20, 5, 1))
	q := Query{TargetActions: testmodels.LastActions(20, 5)[4], Flat: true, Times: []float64{10}, Quantiles: []float64{0.5, 0.99}}
	got, err := Analyze(context.Background(), s, q, AnalyzeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q.Times = nil // the default grid: the complete series
	want, err := Analyze(context.Background(), s, q, AnalyzeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Result.Complete || got.Result.Iterations() >= want.Result.Iterations() {
		t.Fatalf("%d steps (complete %v), the complete series %d", got.Result.Iterations(), got.Result.Complete, want.Result.Iterations())
	}
	for i, x := range got.Quantiles {
		if w := want.Quantiles[i]; math.Abs(x.T-w.T) > 1e-8*w.T {
			t.Errorf("%g-quantile %.12g, complete series %.12g", x.P, x.T, w.T)
		}
	}
	if w, _ := want.Result.CDF(10); math.Abs(got.Points[0].CDF-w) > 1e-10 {
		t.Errorf("F(10) = %.15g, complete series %.15g", got.Points[0].CDF, w)
	}
	if math.Abs(got.Mean-want.Mean) > 1e-9*want.Mean {
		t.Errorf("mean %.15g (%s), complete series %.15g (%s)", got.Mean, got.MeanFrom, want.Mean, want.MeanFrom)
	}
	t.Logf("%d steps against %d; mean %s", got.Result.Iterations(), want.Result.Iterations(), got.MeanFrom)
}
