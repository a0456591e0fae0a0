package passage

import (
	"context"
	"math"
	"testing"

	"pepa/internal/testing/testchain"
	"pepa/internal/testing/testmodels"
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
// Exp(1e19) then Exp(1) to the first firing of b, mean 1 + 1e-19
// (uniformization forced: by cost, the Laplace engine takes this chain,
// and gives the same figures).
func TestAnalyzeDenseMean(t *testing.T) {
	s := testchain.Structure(t, "P = (a, 1e19).Q; Q = (b, 1.0).P; P")
	auto, err := Analyze(context.Background(), s, Query{TargetActions: []string{"b"}, Times: []float64{1, 1e9}}, AnalyzeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if auto.Engine != EngineLaplace || !near(auto.Mean, 1, 1e-12) || !near(auto.Points[0].CDF, 1-math.Exp(-1), 1e-10) {
		t.Errorf("auto: %s (%s), mean %g, F(1) %.12g", auto.Engine, auto.EngineWhy, auto.Mean, auto.Points[0].CDF)
	}
	a, err := Analyze(context.Background(), s, Query{TargetActions: []string{"b"}, Times: []float64{1, 1e9}}, AnalyzeOptions{Transient: EngineUniformization})
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

// forceRunOn sends every chain down the path big chains take: the mean
// from the series run on past the horizon, with at most extra more steps.
func forceRunOn(t *testing.T, extra int) {
	t.Helper()
	oldT, oldE := seriesMeanTransitions, seriesMeanExtraSteps
	seriesMeanTransitions, seriesMeanExtraSteps = 0, extra
	t.Cleanup(func() { seriesMeanTransitions, seriesMeanExtraSteps = oldT, oldE })
}

// mappingMachineMean is the closed-form mean time to the first firing of
// the last action of machine m (1-based) of testmodels.Mapping(apps,
// machines, 1): the machine races its ideal and perturbed first actions
// (rates r and p of its first application), then runs the rest of the
// chosen path in sequence.
func mappingMachineMean(apps, machines, m int) float64 {
	r := func(i int) float64 { return 0.1 + float64(i%7)*0.05 }
	p := func(i int) float64 { return 0.08 + float64(i%5)*0.04 }
	first := r(m) + p(m)
	ideal, pert := 0.0, 0.0
	for i := m + machines; i <= apps; i += machines {
		ideal += 1 / r(i)
		pert += 1 / p(i)
	}
	return 1/first + r(m)/first*ideal + p(m)/first*pert
}

// TestAnalyzeMeanFromRunOnSeries: with the threshold forced low, a short
// horizon's series runs on to completion and the mean is its sum, against
// closed forms: a hypoexponential cycle (Exp(1), Exp(2), Exp(0.5), Exp(4):
// mean 3.75) and every machine of a 12-application, 4-machine mapping's
// product chain (2,401 states). The CDF at the horizon is unchanged.
func TestAnalyzeMeanFromRunOnSeries(t *testing.T) {
	forceRunOn(t, 100_000)
	rates := []float64{1, 2, 0.5, 4}
	s := testchain.Structure(t, erlangModel(4, rates))
	a, err := Analyze(context.Background(), s, Query{TargetActions: []string{"done"}, Times: []float64{0.2}}, AnalyzeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	right, err := PoissonRight(a.Result.Q*0.2, 1e-10/2)
	if err != nil {
		t.Fatal(err)
	}
	if a.MeanFrom != "series" || !a.Result.Complete || a.Result.Iterations() <= right+1 {
		t.Errorf("mean from %q, complete %v, %d steps (the horizon needs %d)", a.MeanFrom, a.Result.Complete, a.Result.Iterations(), right+1)
	}
	if a.MeanErr != nil || math.Abs(a.Mean-3.75) > 1e-9*3.75 {
		t.Errorf("mean %.15g (%v), want 3.75", a.Mean, a.MeanErr)
	}
	if want := hypoCDF(rates, 0.2); !near(a.Points[0].CDF, want, 1e-10) {
		t.Errorf("F(0.2) = %.15g, want %.15g", a.Points[0].CDF, want)
	}

	s = testchain.Structure(t, testmodels.Mapping(12, 4, 1))
	for m, acts := range testmodels.LastActions(12, 4) {
		a, err := Analyze(context.Background(), s, Query{TargetActions: acts, Times: []float64{1}, Flat: true}, AnalyzeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := mappingMachineMean(12, 4, m+1)
		if a.MeanFrom != "series" || a.MeanErr != nil || math.Abs(a.Mean-want) > 1e-9*want {
			t.Errorf("machine %d: mean %.15g from %q (%v), want %.15g", m+1, a.Mean, a.MeanFrom, a.MeanErr, want)
		}
	}
}

// TestAnalyzeRunOnFallsBack: when the series is predicted to need more
// than the extra steps, it is not run on, the mean comes from the linear
// solve, the CDF stands, and nothing fails; with the default threshold a
// small chain is not run on.
func TestAnalyzeRunOnFallsBack(t *testing.T) {
	rates := []float64{1, 2, 0.5, 4}
	s := testchain.Structure(t, erlangModel(4, rates))
	q := Query{TargetActions: []string{"done"}, Times: []float64{0.2}}
	a, err := Analyze(context.Background(), s, q, AnalyzeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a.MeanFrom != "linear solve" || a.Result.Complete || math.Abs(a.Mean-3.75) > 1e-12*3.75 {
		t.Errorf("default threshold: mean %.15g from %q, complete %v", a.Mean, a.MeanFrom, a.Result.Complete)
	}
	horizonSteps := a.Result.Iterations()
	forceRunOn(t, 3)
	a, err = Analyze(context.Background(), s, q, AnalyzeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Predicted to need more than 3 steps: not run on at all.
	if more, ok := a.Result.StepsToComplete(); !ok || more <= 3 {
		t.Errorf("predicted %d more steps (%v)", more, ok)
	}
	if a.MeanFrom != "linear solve" || a.Result.Complete || a.Result.Iterations() != horizonSteps {
		t.Errorf("3 extra steps: mean from %q, complete %v, %d steps (the horizon's %d)", a.MeanFrom, a.Result.Complete, a.Result.Iterations(), horizonSteps)
	}
	if a.MeanErr != nil || math.Abs(a.Mean-3.75) > 1e-12*3.75 {
		t.Errorf("mean %.15g (%v), want 3.75", a.Mean, a.MeanErr)
	}
	if want := hypoCDF(rates, 0.2); !near(a.Points[0].CDF, want, 1e-10) {
		t.Errorf("F(0.2) = %.15g, want %.15g", a.Points[0].CDF, want)
	}
}

// TestAnalyzeNeverEndsWithoutSolve: half the mass from P is trapped in R,
// which never does b: the mean is +Inf from the series' own search,
// however short the horizon and whichever path.
func TestAnalyzeNeverEndsWithoutSolve(t *testing.T) {
	s := testchain.Structure(t, "P = (a, 1.0).Q + (c, 1.0).R; Q = (b, 1.0).P; R = (d, 1.0).R; P")
	for _, force := range []bool{false, true} {
		if force {
			forceRunOn(t, 100_000)
		}
		a, err := Analyze(context.Background(), s, Query{TargetActions: []string{"b"}, Times: []float64{0.1}}, AnalyzeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !math.IsInf(a.Mean, 1) || a.MeanErr != nil || a.MeanFrom != "may never end" {
			t.Errorf("run on %v: mean %g from %q (%v)", force, a.Mean, a.MeanFrom, a.MeanErr)
		}
		// a wins the race with c (1/2), then b: half of Exp(2) then Exp(1).
		if want := 0.5 * hypoCDF([]float64{2, 1}, 0.1); !near(a.Points[0].CDF, want, 1e-10) {
			t.Errorf("run on %v: F(0.1) = %.15g, want %.15g", force, a.Points[0].CDF, want)
		}
	}
}
