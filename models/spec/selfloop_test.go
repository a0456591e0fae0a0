package spec

import (
	"context"
	"fmt"
	"math"
	"testing"

	"pepa/internal/testing/testchain"
	"pepa/models"
)

// checkClosedForm compares a machine's robustness figures with its
// finishing-time survival function: P(F <= beta), the mean, and the
// quantile (the closed-form CDF at the printed quantile is the level).
func checkClosedForm(t *testing.T, what string, m models.MachineResult, res *models.Result, beta, mean, level float64, survival func(float64) float64) {
	t.Helper()
	if want := 1 - survival(beta); !closeTo(m.PByBeta, want, 1e-9) {
		t.Errorf("%s: P(F <= %g) = %.15g, closed form %.15g", what, beta, m.PByBeta, want)
	}
	if res != nil && len(res.Machines) == 1 && !closeTo(res.PAllByBeta, 1-survival(beta), 1e-9) {
		t.Errorf("%s: P(all <= %g) = %.15g, closed form %.15g", what, beta, res.PAllByBeta, 1-survival(beta))
	}
	if !closeTo(m.Mean, mean, 1e-9) {
		t.Errorf("%s: E[F] = %.15g, closed form %.15g", what, m.Mean, mean)
	}
	if got := 1 - survival(m.Quantile); !closeTo(got, level, 1e-9) {
		t.Errorf("%s: F(q%g = %.12g) = %.15g by the closed form", what, level*100, m.Quantile, got)
	}
	for _, at := range []float64{0.1 * mean, mean, 3 * mean} {
		got, err := m.CDF(at)
		if want := 1 - survival(at); err != nil || !closeTo(got, want, 1e-9) {
			t.Errorf("%s: F(%g) = %.15g (%v), closed form %.15g", what, at, got, err, want)
		}
	}
}

// TestOneApplicationMachine: a machine with one application repeats it,
// so its completion is a self-loop labelled by the target action; the
// finishing time is Exp(r).
func TestOneApplicationMachine(t *testing.T) {
	r, beta := 2.5, 1.0
	src := fmt.Sprintf("r = %g;\nA1 = (compute1, infty).A1;\nM = (compute1, r).M;\nA1 <compute1> M\n", r)
	opt := models.Options{Question: models.Question{Beta: beta, Epsilon: 1e-13}}
	surv := func(at float64) float64 { return math.Exp(-r * at) }
	dec := analyzeDecomposed(t, src, opt)
	flat, err := models.Analyze(context.Background(), testchain.Chain(t, src), opt)
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range []*models.Result{dec, flat} {
		checkClosedForm(t, res.Solved, res.Machines[0], res, beta, 1/r, 0.99, surv)
		if !closeTo(res.ExpectedMakespan, 1/r, 1e-9) {
			t.Errorf("%s: E[makespan] = %.15g, want %.15g", res.Solved, res.ExpectedMakespan, 1/r)
		}
	}
}

// TestSharingOwnerExponential: exponential work (mean w) on a machine
// whose single owner job (arrival a, service b) shares the processor. In
// gen's model both the work's completion and the owner's moves leave the
// other's state alone, so completion is a self-loop in either owner
// state: from an idle owner the finishing time is phase-type with
// S = [[-(mu + a), a], [b/2, -(mu/2 + b/2)]], mu = 1/w: survival
// c1 e^{s1 t} + c2 e^{s2 t} with s1, s2 the eigenvalues of S, c1 + c2 = 1
// and c1 s1 + c2 s2 = -mu (the slope at 0); the mean is alpha (-S)^-1 1.
func TestSharingOwnerExponential(t *testing.T) {
	w, a, b := 1.0, 0.3, 1.2
	dec, flat := ownerMachine(t, w, fmt.Sprintf(`{"arrival": %g, "service": %g, "capacity": 1, "discipline": "sharing"}`, a, b), 1)
	mu := 1 / w
	s00, s01, s10, s11 := -(mu + a), a, b/2, -(mu/2 + b/2)
	tr, det := s00+s11, s00*s11-s01*s10
	disc := math.Sqrt(tr*tr - 4*det)
	s1, s2 := (tr+disc)/2, (tr-disc)/2
	c1 := (-mu - s2) / (s1 - s2)
	c2 := 1 - c1
	surv := func(at float64) float64 { return c1*math.Exp(s1*at) + c2*math.Exp(s2*at) }
	// (-S)^-1 1, first entry: (-s11 + s01) / det.
	mean := (-s11 + s01) / det
	for _, m := range []struct {
		what string
		r    models.MachineResult
	}{{"decomposed", dec}, {"flat", flat}} {
		checkClosedForm(t, m.what, m.r, nil, w, mean, 0.99, surv)
	}
}

// TestStiffMachines: machines whose rates are eight orders of magnitude
// apart, decomposed: each keeps its own uniformization rate, and both
// finishing times match their closed forms (Exp(r) for a one-application
// machine).
func TestStiffMachines(t *testing.T) {
	src := "A1 = (compute1, infty).A1; A2 = (compute2, infty).A2;\nM1 = (compute1, 1e4).M1;\nM2 = (compute2, 1e-4).M2;\n(A1 <compute1> M1) <> (A2 <compute2> M2)\n"
	beta := 5000.0
	res := analyzeDecomposed(t, src, models.Options{Question: models.Question{Beta: beta, Epsilon: 1e-12}})
	for _, m := range res.Machines {
		r := map[string]float64{"M1": 1e4, "M2": 1e-4}[m.Name]
		if want := 1 - math.Exp(-r*beta); !closeTo(m.PByBeta, want, 1e-10) || !closeTo(m.Mean, 1/r, 1e-10) {
			t.Errorf("%s: P(F <= %g) = %.12g (want %.12g), mean %g (want %g)", m.Name, beta, m.PByBeta, want, m.Mean, 1/r)
		}
	}
	if want := (1 - math.Exp(-1e4*beta)) * (1 - math.Exp(-1e-4*beta)); !closeTo(res.PAllByBeta, want, 1e-10) {
		t.Errorf("P(all <= beta) = %.12g, want %.12g", res.PAllByBeta, want)
	}
}
