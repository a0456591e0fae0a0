package passage

import (
	"context"
	"math"
	"testing"

	"pepa/internal/testmodels"
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

// TestExtraSteps: past the horizon's truncation point the series runs at
// most ExtraSteps more steps; it stops as soon as the passage is complete,
// and one still incomplete is returned without error, its CDF at the
// horizon as without them.
func TestExtraSteps(t *testing.T) {
	c := chainOf(t, "P = (a, 2.0).Q; Q = (b, 3.0).P; P")
	pr := InitialProblem(c, actions(t, c, "b"))
	plain := solveOne(t, c, pr, Options{Horizon: 0.1})
	few := solveOne(t, c, pr, Options{Horizon: 0.1, ExtraSteps: 4})
	if few.Complete || few.Iterations() != plain.Iterations()+4 {
		t.Errorf("4 extra steps: complete %v, %d steps, want %d", few.Complete, few.Iterations(), plain.Iterations()+4)
	}
	if a, b := cdf(t, plain, 0.1), cdf(t, few, 0.1); a != b {
		t.Errorf("F(0.1) %.17g with extra steps, %.17g without", b, a)
	}
	all := solveOne(t, c, pr, Options{Horizon: 0.1, ExtraSteps: 1 << 20})
	complete := solveOne(t, c, pr, Options{Complete: true})
	if !all.Complete || all.Iterations() != complete.Iterations() {
		t.Errorf("many extra steps: complete %v after %d steps, a complete series takes %d", all.Complete, all.Iterations(), complete.Iterations())
	}
}
