package passage

import (
	"context"
	"math"
	"testing"

	"pepa/internal/testing/testmodels"
)

// TestSeriesMeanHypoexponential: Exp(2) then Exp(3): mean 1/2 + 1/3, and
// integral_T^inf (1 - F) = (3/2) e^{-2T} - (2/3) e^{-3T} (the survival
// function is 3 e^{-2t} - 2 e^{-3t}).
func TestSeriesMeanHypoexponential(t *testing.T) {
	c := chainOf(t, "P = (a, 2.0).Q; Q = (b, 3.0).P; P")
	r := solveOne(t, c, InitialProblem(c, actions(t, c, "b")), Options{Complete: true, Epsilon: 1e-13})
	mean, tail, err := r.SeriesMean()
	if err != nil {
		t.Fatal(err)
	}
	if want := 1.0/2 + 1.0/3; math.Abs(mean-want) > 1e-11 || tail > 1e-11 {
		t.Errorf("mean %.15g (tail %.3g), want %.15g", mean, tail, want)
	}
	for _, T := range []float64{0.1, 1, 3, 10} {
		got, err := r.SeriesTail(T)
		if err != nil {
			t.Fatal(err)
		}
		want := 1.5*math.Exp(-2*T) - 2.0/3*math.Exp(-3*T)
		if math.Abs(got-want) > 1e-11 {
			t.Errorf("T = %g: %.15g, want %.15g", T, got, want)
		}
	}
}

// TestSeriesMeanMatchesSolver: on a mapping model's product chain, every
// machine's mean from the series (all machines in one block) agrees with
// the linear-system solve to 1e-10 relative.
func TestSeriesMeanMatchesSolver(t *testing.T) {
	c := chainOf(t, testmodels.Mapping(9, 3, 1))
	var probs []Problem
	for _, acts := range testmodels.LastActions(9, 3) {
		probs = append(probs, InitialProblem(c, actions(t, c, acts...)))
	}
	rs, err := Solve(context.Background(), c, probs, Options{Complete: true})
	if err != nil {
		t.Fatal(err)
	}
	for p, r := range rs {
		got, _, err := r.SeriesMean()
		if err != nil {
			t.Fatal(err)
		}
		want, err := Mean(context.Background(), c, probs[p])
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-want) > 1e-10*want {
			t.Errorf("machine %d: series mean %.15g, solver %.15g", p+1, got, want)
		}
	}
}

// TestSeriesMeanInfinite: from P, half the mass goes to R, which never
// does b: the mean is infinite however the series ends.
func TestSeriesMeanInfinite(t *testing.T) {
	c := chainOf(t, "P = (a, 1.0).Q + (c, 1.0).R; Q = (b, 1.0).P; R = (d, 1.0).R; P")
	r := solveOne(t, c, InitialProblem(c, actions(t, c, "b")), Options{Complete: true})
	if !r.MayNeverEnd {
		t.Fatal("MayNeverEnd not set")
	}
	if m, _, err := r.SeriesMean(); err != nil || !math.IsInf(m, 1) {
		t.Errorf("mean %g, %v", m, err)
	}
	c = chainOf(t, "P = (a, 1.0).Q; Q = (b, 1.0).P; P")
	if r := solveOne(t, c, InitialProblem(c, actions(t, c, "b")), Options{Complete: true}); r.MayNeverEnd {
		t.Error("MayNeverEnd set on a passage that always ends")
	}
}

// TestExtraSteps: at the horizon's truncation point the series runs on
// only if it is predicted to be complete within ExtraSteps more steps,
// and then stops as soon as it is; one not run on is returned without
// error, its CDF at the horizon as without them. The prediction is
// checked against the steps a complete series takes.
func TestExtraSteps(t *testing.T) {
	c := chainOf(t, "P = (a, 2.0).Q; Q = (b, 3.0).P; P")
	pr := InitialProblem(c, actions(t, c, "b"))
	complete := solveOne(t, c, pr, Options{Complete: true})
	for _, horizon := range []float64{0.2, 0.5, 1} {
		plain := solveOne(t, c, pr, Options{Horizon: horizon})
		if plain.Complete {
			t.Fatalf("horizon %g: complete without running on", horizon)
		}
		more, ok := plain.StepsToComplete()
		actual := complete.Iterations() - plain.Iterations()
		t.Logf("horizon %g: %d steps, predicted %d more, actual %d more", horizon, plain.Iterations(), more, actual)
		if !ok || math.Abs(float64(more-actual)) > math.Max(2, 0.05*float64(actual)) {
			t.Errorf("horizon %g: predicted %d more steps (%v), a complete series takes %d more", horizon, more, ok, actual)
		}
		few := solveOne(t, c, pr, Options{Horizon: horizon, ExtraSteps: more / 2})
		if few.Complete || few.Iterations() != plain.Iterations() {
			t.Errorf("horizon %g, %d extra steps: complete %v, %d steps, want %d", horizon, more/2, few.Complete, few.Iterations(), plain.Iterations())
		}
		if a, b := cdf(t, plain, horizon), cdf(t, few, horizon); a != b {
			t.Errorf("horizon %g: F %.17g with extra steps, %.17g without", horizon, b, a)
		}
		all := solveOne(t, c, pr, Options{Horizon: horizon, ExtraSteps: 2 * more})
		if !all.Complete || all.Iterations() != complete.Iterations() {
			t.Errorf("horizon %g, %d extra steps: complete %v after %d steps, a complete series takes %d", horizon, 2*more, all.Complete, all.Iterations(), complete.Iterations())
		}
	}
}
