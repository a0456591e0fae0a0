package passage

import (
	"context"
	"errors"
	"math"
	"testing"
)

// The passage ends at the first firing of a target action, even when that
// transition is a self-loop: it leaves the state once redirected to the
// absorbing target, so it counts for the uniformization rate. Each case
// has a closed form: the first firing of a in a state whose a-rates sum
// to lambda (whatever else happens in between that does not change it)
// is Exp(lambda).
func TestTargetSelfLoops(t *testing.T) {
	cases := []struct {
		name, src string
		lambda    float64
		at        []float64
	}{
		{"one self-loop", "P = (a, 2.0).P; P", 2, []float64{0.5, 1, 2}},
		{"two racing self-loops", "A0 = (a, 0.5).A0 + (a, 1.0).A0; A0", 1.5, []float64{0.25, 1, 3}},
		{"array of self-loops with a slow other action", "A0 = (a, 2.0).A0 + (a, 2.0).A0 + (c, 0.01).A0; A0[2][a]", 4, []float64{0.25, 0.5, 1}},
		{"array unsynchronised", "A0 = (a, 2.0).A0 + (c, 0.01).A1; A1 = (a, 2.0).A0; A0[2]", 4, []float64{0.25, 0.5, 1}},
	}
	for _, tc := range cases {
		c := chainOf(t, tc.src)
		pr := InitialProblem(c, actions(t, c, "a"))
		if got := MaxLeaveRate(c, []Problem{pr}); got < tc.lambda {
			t.Errorf("%s: MaxLeaveRate %g, below the target rate %g", tc.name, got, tc.lambda)
		}
		r := solveOne(t, c, pr, Options{Horizon: 3})
		for _, at := range tc.at {
			want := 1 - math.Exp(-tc.lambda*at)
			if got := cdf(t, r, at); !near(got, want, 1e-10) {
				t.Errorf("%s: F(%g) = %.12g, want %.12g", tc.name, at, got, want)
			}
			if got := expmCDF(c, pr, at); !near(got, want, 1e-12) {
				t.Errorf("%s: dense expm F(%g) = %.12g, want %.12g", tc.name, at, got, want)
			}
		}
		if m, err := Mean(context.Background(), c, pr); err != nil || !near(m, 1/tc.lambda, 1e-12) {
			t.Errorf("%s: mean %g (%v), want %g", tc.name, m, err, 1/tc.lambda)
		}
	}
}

// A self-loop that ends a passage counts for that passage only: solved
// together, each passage matches its solution alone.
func TestSelfLoopRateSharedSweep(t *testing.T) {
	c := chainOf(t, "P = (a, 5.0).P + (b, 1.0).Q; Q = (c, 1.0).P; P")
	prA := InitialProblem(c, actions(t, c, "a"))
	prC := InitialProblem(c, actions(t, c, "c"))
	rs, err := Solve(context.Background(), c, []Problem{prA, prC}, Options{Horizon: 4})
	if err != nil {
		t.Fatal(err)
	}
	for k, pr := range []Problem{prA, prC} {
		for _, at := range []float64{0.1, 1, 4} {
			if got, want := cdf(t, rs[k], at), expmCDF(c, pr, at); !near(got, want, 1e-10) {
				t.Errorf("passage %d: F(%g) = %.12g, expm %.12g", k, at, got, want)
			}
		}
	}
}

// The kernel refuses a rate that would make a diagonal entry negative,
// and Solve refuses such an Options.Q.
func TestNegativeDiagonalRefused(t *testing.T) {
	c := chainOf(t, "P = (a, 2.0).P; P")
	pr := InitialProblem(c, actions(t, c, "a"))
	if _, err := buildKernel(c, []Problem{pr}, 1.5); err == nil {
		t.Errorf("kernel accepted q = 1.5 below the leaving rate 2")
	}
	if _, err := Solve(context.Background(), c, []Problem{pr}, Options{Q: 1.5, Horizon: 1}); err == nil {
		t.Errorf("Solve accepted Q = 1.5 below the leaving rate 2")
	}
	k, err := buildKernel(c, []Problem{pr}, UniformizationRate(c, []Problem{pr}))
	if err != nil {
		t.Fatal(err)
	}
	for j, d := range k.diag {
		if d < 0 {
			t.Errorf("diag[%d] = %g", j, d)
		}
	}
}

func TestPoissonRight(t *testing.T) {
	for _, l := range []float64{0, 1e-6, 0.3, 1, 7.5, 100, 1e4, 3e6} {
		for _, eps := range []float64{1e-4, 1e-10, 1e-14} {
			w, err := FoxGlynn(l, eps)
			if err != nil {
				t.Fatal(err)
			}
			if r, err := PoissonRight(l, eps); err != nil || r != w.Right() {
				t.Errorf("lambda %g eps %g: PoissonRight %d (%v), FoxGlynn %d", l, eps, r, err, w.Right())
			}
		}
	}
	if r, err := PoissonRight(1e20, 1e-10); err != nil || r < MaxSeriesValues {
		t.Errorf("lambda 1e20: %d (%v)", r, err)
	}
	if _, err := FoxGlynn(1e20, 1e-10); err == nil {
		t.Errorf("FoxGlynn(1e20) gave no error")
	}
}

// TestDeadMassStopsEarly: in A0 <f> B0 below, A leaves A0 at 300.5 and
// then is stuck (f is blocked), so d fires with probability 0.5/300.5, at
// rate 300.5: F(t) = (0.5/300.5)(1 - e^{-300.5 t}). The mass that took b
// first can never be absorbed; it must not keep the series going, at
// t = 1e5 (q*t about 3e7) or for a complete series.
func TestDeadMassStopsEarly(t *testing.T) {
	c := chainOf(t, "A0 = (d, 0.5).A1 + (b, 300.0).A1; A1 = (f, 1.5).A0; B0 = (b, 1.0).B1; B1 = (a, 0.5).B0; B0 <f> A0")
	pr := InitialProblem(c, actions(t, c, "d"))
	want := func(at float64) float64 { return 0.5 / 300.5 * (1 - math.Exp(-300.5*at)) }
	for _, opt := range []Options{{Horizon: 1e5}, {Complete: true}} {
		r := solveOne(t, c, pr, opt)
		if !r.Complete || r.Iterations() > 1000 {
			t.Errorf("%+v: complete %v after %d steps", opt, r.Complete, r.Iterations())
		}
		for _, at := range []float64{1e-3, 0.01, 1, 1e5} {
			if got := cdf(t, r, at); !near(got, want(at), 1e-10) {
				t.Errorf("%+v: F(%g) = %.15g, want %.15g", opt, at, got, want(at))
			}
		}
	}
	// The first firing of a: B's Exp(1) then Exp(0.5), whatever A does.
	pa := InitialProblem(c, actions(t, c, "a"))
	r := solveOne(t, c, pa, Options{Horizon: 1e5})
	for _, at := range []float64{0.5, 3, 30, 1e5} {
		if got, want := cdf(t, r, at), hypoCDF([]float64{1, 0.5}, at); !near(got, want, 1e-10) {
			t.Errorf("a: F(%g) = %.15g, want %.15g", at, got, want)
		}
	}
	if m, err := Mean(context.Background(), c, pa); err != nil || !near(m, 3, 1e-12) {
		t.Errorf("a: mean %g (%v), want 3", m, err)
	}
}

// TestStepCap: an explicit MaxIterations is honoured with ErrTooManySteps.
func TestStepCap(t *testing.T) {
	c := chainOf(t, erlangModel(2, []float64{1e3, 1e-3}))
	pr := InitialProblem(c, actions(t, c, "done"))
	_, err := Solve(context.Background(), c, []Problem{pr}, Options{Complete: true, MaxIterations: 1000})
	if !errors.Is(err, ErrTooManySteps) {
		t.Errorf("error %v, want ErrTooManySteps", err)
	}
}

// TestStiffDense: chains too stiff for the series (q*t far past
// DenseSwitchSteps) are solved by the dense matrix exponential, against
// the closed form of the hypoexponential distribution.
func TestStiffDense(t *testing.T) {
	for _, rates := range [][]float64{{1e5, 1e-4}, {1e-4, 1e5}, {1e19, 1}, {1e12, 3e-3, 5e-1}} {
		c := chainOf(t, erlangModel(len(rates), rates))
		pr := InitialProblem(c, actions(t, c, "done"))
		mean := 0.0
		for _, r := range rates {
			mean += 1 / r
		}
		for _, opt := range []Options{{Complete: true}, {Horizon: 20 * mean}} {
			r := solveOne(t, c, pr, opt)
			if r.Method != "dense matrix exponential" {
				t.Errorf("%v: method %q after %d steps", rates, r.Method, r.Iterations())
			}
			for _, f := range []float64{1e-9, 1e-3, 0.1, 1, 3, 20} {
				at := f * mean
				if got, want := cdf(t, r, at), hypoCDF(rates, at); !near(got, want, 1e-10) {
					t.Errorf("%v %+v: F(%g) = %.15g, want %.15g", rates, opt, at, got, want)
				}
			}
			if opt.Complete {
				q, err := r.Quantile(0.5)
				if err != nil || !near(hypoCDF(rates, q), 0.5, 1e-8) {
					t.Errorf("%v: median %g (%v): F there %.12g", rates, q, err, hypoCDF(rates, q))
				}
			}
		}
		if m, err := Mean(context.Background(), c, pr); err != nil || !relNear(m, mean, 1e-12) {
			t.Errorf("%v: mean %.15g (%v), want %.15g", rates, m, err, mean)
		}
	}
}
