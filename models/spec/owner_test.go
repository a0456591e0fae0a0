package spec

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/integrate/quad"
	"gonum.org/v1/gonum/mat"

	"pepa/internal/testing/testchain"
	"pepa/models"
)

// ownerMachine generates, solves (decomposed and flat) and returns the one
// machine of a specification with one application of expected time w on
// one machine with the given owner and Erlang phases.
func ownerMachine(t *testing.T, w float64, owner string, phases int) (models.MachineResult, models.MachineResult) {
	t.Helper()
	spec := fmt.Sprintf(`{"etc": [[%g]], "owners": {"M1": %s}, "work": {"erlang": %d},
		"mappings": [{"name": "m", "allocation": {"M1": ["A1"]}}]}`, w, owner, phases)
	in, err := ParseSpec("s.json", []byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	src, pragmas := generate(t, in, in.Mappings[0])
	opt := models.Options{Question: models.Question{Beta: w, Epsilon: 1e-13}, Pragmas: pragmas}
	dec := analyzeDecomposed(t, src, opt)
	flat, err := models.Analyze(context.Background(), testchain.Chain(t, src), opt)
	if err != nil {
		t.Fatal(err)
	}
	return dec.Machines[0], flat.Machines[0]
}

func closeTo(a, b, rel float64) bool { return math.Abs(a-b) <= rel*math.Max(1, math.Abs(b)) }

// TestOnOffOwner: exponential work of mean w on a machine whose owner comes
// at rate a and leaves at rate b and preempts the work. From an idle owner
// the finishing time is phase-type with S = [[-(1/w + a), a], [b, -b]]:
// survival c1 e^{s1 t} + c2 e^{s2 t}, s1,2 the roots of
// s^2 + (1/w + a + b) s + b/w = 0, c1 + c2 = 1, c1 s1 + c2 s2 = -1/w;
// its mean is w (1 + a/b).
func TestOnOffOwner(t *testing.T) {
	w, a, b := 4.0, 0.3, 1.2
	dec, flat := ownerMachine(t, w, fmt.Sprintf(`{"arrival": %g, "service": %g}`, a, b), 1)
	mu := 1 / w
	sum, prod := mu+a+b, mu*b
	disc := math.Sqrt(sum*sum - 4*prod)
	s1, s2 := (-sum+disc)/2, (-sum-disc)/2
	c1 := (-mu - s2) / (s1 - s2)
	c2 := 1 - c1
	for _, at := range []float64{0.5, 2, 4, 10, 30} {
		want := 1 - c1*math.Exp(s1*at) - c2*math.Exp(s2*at)
		for _, m := range []models.MachineResult{dec, flat} {
			got, err := m.CDF(at)
			if err != nil || !closeTo(got, want, 1e-12) {
				t.Errorf("F(%g) = %.15g (%v), closed form %.15g", at, got, err, want)
			}
		}
	}
	if want := w * (1 + a/b); !closeTo(dec.Mean, want, 1e-12) || !closeTo(flat.Mean, want, 1e-12) {
		t.Errorf("mean %.15g / %.15g, want %.15g", dec.Mean, flat.Mean, want)
	}
	if want := b / (a + b); !closeTo(dec.Availability, want, 1e-15) || !closeTo(dec.Slowdown, 1/want, 1e-15) {
		t.Errorf("availability %g, slowdown %g; want %g", dec.Availability, dec.Slowdown, want)
	}
}

// TestQueueOwnerMean: an M/M/1/N owner with preemptive priority and an idle
// start: each owner arrival during the work adds a busy period, so
// E[T] = w (1 + rho (1 - rho^N)/(1 - rho)) = w (1 - rho^(N+1)) / (1 - rho),
// whatever the work's distribution (Erlang-k).
func TestQueueOwnerMean(t *testing.T) {
	w, lo, mo, N := 3.0, 0.4, 1.0, 4
	rho := lo / mo
	want := w * (1 - math.Pow(rho, float64(N+1))) / (1 - rho)
	for _, k := range []int{1, 3} {
		dec, flat := ownerMachine(t, w, fmt.Sprintf(`{"arrival": %g, "service": %g, "capacity": %d}`, lo, mo, N), k)
		if !closeTo(dec.Mean, want, 1e-12) || !closeTo(flat.Mean, want, 1e-12) {
			t.Errorf("k=%d: mean %.15g / %.15g, want %.15g", k, dec.Mean, flat.Mean, want)
		}
	}
}

// TestQueueOwnerVariance: with a large N (an M/M/1 owner, truncated where
// rho^N is negligible) the variance of T = W + sum of busy periods is
// 2 rho w / (mu (1 - rho)^3) + w^2 / (k (1 - rho)^2): E[Var(T|W)] from the
// busy periods' second moment 2/(mu^2 (1-rho)^3), and Var(E[T|W]) from
// Var(W) = w^2/k scaled by 1/(1-rho).
func TestQueueOwnerVariance(t *testing.T) {
	w, lo, mo, N, k := 2.0, 0.3, 1.0, 40, 2
	rho := lo / mo
	dec, _ := ownerMachine(t, w, fmt.Sprintf(`{"arrival": %g, "service": %g, "capacity": %d}`, lo, mo, N), k)
	// E[T^2] = integral of 2 t (1 - F(t)), on panels up to where 1 - F is
	// at the CDF's accuracy (1e-13).
	T := 10 * dec.Mean
	for i := 0; i < 40; i++ {
		if f, _ := dec.CDF(T); 1-f < 1e-12 {
			break
		}
		T *= 1.5
	}
	m2 := 0.0
	const panels = 400
	for i := 0; i < panels; i++ {
		a, b := T*float64(i)/panels, T*float64(i+1)/panels
		m2 += quad.Fixed(func(x float64) float64 { f, _ := dec.CDF(x); return 2 * x * (1 - f) }, a, b, 12, quad.Legendre{}, 0)
	}
	variance := m2 - dec.Mean*dec.Mean
	want := 2*rho*w/(mo*math.Pow(1-rho, 3)) + w*w/(float64(k)*(1-rho)*(1-rho))
	if !closeTo(variance, want, 1e-8) {
		t.Errorf("variance %.12g, want %.12g", variance, want)
	}
	if !closeTo(dec.Mean, w/(1-rho), 1e-12) {
		t.Errorf("mean %.15g, want w/(1-rho) = %.15g", dec.Mean, w/(1-rho))
	}
}

// TestStationaryStart: starting with the owner in its steady state adds the
// expected time for the owner queue to empty, sum_n pi_n D_n, with D_n the
// mean time from n owner jobs to none: D_0 = 0 and, for 0 < n < N,
// (lo + mo) D_n = 1 + lo D_{n+1} + mo D_{n-1}, mo D_N = 1 + mo D_{N-1},
// solved here with a dense linear solve.
func TestStationaryStart(t *testing.T) {
	w, lo, mo, N := 3.0, 0.5, 1.25, 3
	idle, _ := ownerMachine(t, w, fmt.Sprintf(`{"arrival": %g, "service": %g, "capacity": %d}`, lo, mo, N), 2)
	stat, statFlat := ownerMachine(t, w, fmt.Sprintf(`{"arrival": %g, "service": %g, "capacity": %d, "start": "stationary"}`, lo, mo, N), 2)
	a := mat.NewDense(N, N, nil)
	rhs := mat.NewVecDense(N, nil)
	for n := 1; n <= N; n++ {
		i := n - 1
		rhs.SetVec(i, 1)
		if n < N {
			a.Set(i, i, lo+mo)
			a.Set(i, i+1, -lo)
		} else {
			a.Set(i, i, mo)
		}
		if n > 1 {
			a.Set(i, i-1, -mo)
		}
	}
	var d mat.VecDense
	if err := d.SolveVec(a, rhs); err != nil {
		t.Fatal(err)
	}
	rho := lo / mo
	norm := 0.0
	for n := 0; n <= N; n++ {
		norm += math.Pow(rho, float64(n))
	}
	extra := 0.0
	for n := 1; n <= N; n++ {
		extra += math.Pow(rho, float64(n)) / norm * d.AtVec(n-1)
	}
	if want := idle.Mean + extra; !closeTo(stat.Mean, want, 1e-12) || !closeTo(statFlat.Mean, want, 1e-12) {
		t.Errorf("stationary start: mean %.15g / %.15g, want %.15g + %.15g = %.15g", stat.Mean, statFlat.Mean, idle.Mean, extra, want)
	}
	if stat.PByBeta >= idle.PByBeta {
		t.Errorf("a busy owner at the start should not help: %g >= %g", stat.PByBeta, idle.PByBeta)
	}
}

// TestSharingOwner: processor sharing with a stationary M/M/1 background
// (truncated at a capacity where rho^N is negligible) stretches the mean by
// 1/(1-rho), whatever the work's distribution.
func TestSharingOwner(t *testing.T) {
	w, lo, mo, N := 2.0, 0.5, 1.0, 60
	rho := lo / mo
	for _, k := range []int{1, 3} {
		dec, _ := ownerMachine(t, w, fmt.Sprintf(`{"arrival": %g, "service": %g, "capacity": %d, "discipline": "sharing", "start": "stationary"}`, lo, mo, N), k)
		if want := w / (1 - rho); !closeTo(dec.Mean, want, 1e-9) {
			t.Errorf("k=%d: mean %.15g, want %.15g", k, dec.Mean, want)
		}
		if !closeTo(dec.Availability, 1-rho, 1e-12) || !closeTo(dec.Slowdown, 1/(1-rho), 1e-12) {
			t.Errorf("availability %g, slowdown %g; want %g, %g", dec.Availability, dec.Slowdown, 1-rho, 1/(1-rho))
		}
	}
}

func TestOwnerSpecErrors(t *testing.T) {
	base := `{"etc": [[1, 2]], "availability": {"nominal": [1, 0.5]}, %s, "mappings": [{"name": "m", "allocation": {"M1": ["A1"]}}]}`
	tests := []struct{ owners, want string }{
		{`"owners": {"M9": {"arrival": 1, "service": 2}}`, `owner of "M9": no such machine`},
		{`"owners": {"M1": {"arrival": -1, "service": 2}}`, "the arrival rate must be positive"},
		{`"owners": {"M1": {"arrival": 1, "service": 2, "discipline": "fifo"}}`, "discipline must be preemptive or sharing"},
		{`"owners": {"M1": {"arrival": 1, "service": 2, "capacity": -3}}`, "capacity must be from 1 to 1000"},
		{`"owners": {"M1": {"arrival": 1, "service": 2, "start": "busy"}}`, "start must be idle or stationary"},
		{`"owners": {"M2": {"arrival": 1, "service": 2}}`, "machine M2 has an owner process, so its static availability must be 1"},
		{`"work": {"erlang": 0}`, "work.erlang must be a whole number of phases"},
	}
	for _, tt := range tests {
		_, err := ParseSpec("s.json", []byte(fmt.Sprintf(base, tt.owners)))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", tt.owners, err, tt.want)
		}
	}
}
