package laplace

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"pepa/ctmc"
	"pepa/internal/testing/testchain"
	"pepa/internal/testing/testmodels"
)

func engineFor(t testing.TB, c *ctmc.Chain, tgt Target, sets [][]bool, base float64) *Engine {
	t.Helper()
	sys, err := NewSystem(c, tgt)
	if err != nil {
		t.Fatal(err)
	}
	alpha := make([]float64, c.N)
	alpha[0] = 1
	e, err := New(context.Background(), sys, alpha, sets, base, 1e-10)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestHypoexponentialStiff: phases with rates 1e-4 to 1e4 (q t up to 1e9):
// every CDF value against the closed form, the mean (the sum of 1/rate),
// quantiles, and the target given as an action (the sink) or as a state.
func TestHypoexponentialStiff(t *testing.T) {
	rates := []float64{1e4, 0.1, 1e-4, 2.5e-4, 5, 3e-3}
	c := testchain.Chain(t, testmodels.Hypoexponential(rates))
	done := make([]bool, c.N)
	for i := range done {
		done[i] = strings.HasPrefix(c.StateString(i), fmt.Sprintf("P%d", len(rates)))
	}
	mean := 0.0
	for _, r := range rates {
		mean += 1 / r
	}
	act := c.S.Actions
	last := int32(-1)
	for k, a := range act {
		if a == fmt.Sprintf("a%d", len(rates)-1) {
			last = int32(k)
		}
	}
	for _, tc := range []struct {
		name string
		e    *Engine
	}{
		{"state", engineFor(t, c, Target{}, [][]bool{done}, 2e4)},
		{"action", engineFor(t, c, Target{Actions: []int32{last}}, [][]bool{make([]bool, c.N)}, 2e4)},
	} {
		e := tc.e
		if math.Abs(e.Mean(0)-mean) > 1e-12*mean {
			t.Errorf("%s: mean %.17g, want %.17g", tc.name, e.Mean(0), mean)
		}
		if e.Limit(0) != 1 {
			t.Errorf("%s: limit %g", tc.name, e.Limit(0))
		}
		for _, tt := range []float64{10, 300, 3000, 1e4, 3e4, 1e5, 3e5} {
			got, err := e.CDF(0, tt)
			if err != nil {
				t.Fatal(err)
			}
			want := testmodels.HypoexponentialCDF(rates, tt)
			if math.Abs(got-want) > e.Predicted() {
				t.Errorf("%s: F(%g) = %.17g, closed form %.17g (%.2g)", tc.name, tt, got, want, got-want)
			}
		}
		for _, p := range []float64{0.01, 0.5, 0.99} {
			q, err := e.Quantile(0, p)
			if err != nil {
				t.Fatal(err)
			}
			if f := testmodels.HypoexponentialCDF(rates, q); math.Abs(f-p) > 1e-9 {
				t.Errorf("%s: quantile %g at %g, where the closed form is %g", tc.name, p, q, f)
			}
		}
		d, err := e.Check(1e4)
		if err != nil {
			t.Fatal(err)
		}
		if d > 1e-11 {
			t.Errorf("%s: the second contour differs by %g", tc.name, d)
		}
		t.Logf("%s: %d solves, predicted %.2g, check %.2g", tc.name, e.Solves(), e.Predicted(), d)
	}
}

// TestAgainstDenseExponential: random acyclic chains and chains with
// birth-death blocks, at q t small enough for the dense exponential to be
// accurate to about 1e-13, every state's set.
func TestAgainstDenseExponential(t *testing.T) {
	src := `a = 2; b = 3; c = 0.5; d = 4; f = 1.5;
M = (x, a).M2 + (y, c).M3; M2 = (z, b).M4; M3 = (z, d).M4; M4 = (w, f).Mf; Mf = (stop, 1).Mf;
O = (busy, 0.7).O1; O1 = (idle, 1.3).O;
M <> O
`
	c := testchain.Chain(t, src)
	// The set: M finished (closed).
	fin := make([]bool, c.N)
	for i := range fin {
		fin[i] = strings.HasPrefix(c.StateString(i), "Mf")
	}
	e := engineFor(t, c, Target{}, [][]bool{fin}, 2)
	n := c.N
	q := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		for k := c.RowPtr[i]; k < c.RowPtr[i+1]; k++ {
			if j := int(c.Col[k]); j != i {
				q.Set(i, j, q.At(i, j)+c.RateAt(k))
				q.Set(i, i, q.At(i, i)-c.RateAt(k))
			}
		}
	}
	for _, tt := range []float64{0.1, 0.5, 1, 2, 4, 8, 20} {
		var ex, qt mat.Dense
		qt.Scale(tt, q)
		ex.Exp(&qt)
		want := 0.0
		for j := 0; j < n; j++ {
			if fin[j] {
				want += ex.At(0, j)
			}
		}
		got, err := e.CDF(0, tt)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-want) > e.Predicted() {
			t.Errorf("F(%g) = %.17g, dense %.17g", tt, got, want)
		}
	}
}

// TestContoursTable: the written-out contours are the search's.
func TestContoursTable(t *testing.T) {
	for _, c := range contours {
		if got := optimalContour(c.m, windowRatio, 0); got != c {
			t.Errorf("m = %d: the search gives %+v, the table %+v", c.m, got, c)
		}
	}
}

// interruptedCDF is the closed form of P(T <= t) for work of two
// exponential phases (rates a, b) on a machine that an owner interrupts
// preemptively, arriving and leaving at rate r, the machine starting idle:
// a phase of rate a from idle has the transform
// a (s + r) / (s^2 + (a + 2r) s + a r), two real poles (the slow one
// computed without cancellation), so T's survival is a sum of four
// exponentials, and P(T <= t) 1 minus it. Also the mean, 2/a + 2/b (the
// owner is away as long again as the work runs, on average).
func interruptedCDF(a, b, r, t float64) float64 {
	phase := func(a float64) (p1, p2, n0, n1 float64) {
		// Numerator a (s + r); denominator (s - p1)(s - p2).
		disc := math.Sqrt(a*a + 4*r*r)
		p2 = -((a + 2*r) + disc) / 2 // fast
		p1 = a * r / p2              // slow: p1 p2 = a r
		return p1, p2, a, a * r
	}
	a1, a2, an0, an1 := phase(a)
	b1, b2, bn0, bn1 := phase(b)
	poles := []float64{a1, a2, b1, b2}
	// Phi(s) = N(s) / prod (s - p_i), N = (an0 s + an1)(bn0 s + bn1); the
	// CDF's transform Phi(s)/s has residue 1 at 0 and N(p)/(p prod_{j != i}
	// (p - p_j)) at each pole: the survival is minus their sum.
	sf := 0.0
	for i, p := range poles {
		num := (an0*p + an1) * (bn0*p + bn1)
		den := p
		for j, q := range poles {
			if j != i {
				den *= p - q
			}
		}
		sf -= num / den * math.Exp(p*t)
	}
	return 1 - sf
}

// TestInterruptedMachineClosedForm: a machine whose owner interrupts it
// 10^2 to 10^6 times faster than its work ends (a block cycled through
// far faster than it is left: Gaussian elimination on it lost digits, and
// the engine refused it before the GTH-form solves) against the closed
// form: the mean exactly, every CDF value within the stated accuracy.
func TestInterruptedMachineClosedForm(t *testing.T) {
	src := func(toggle string) string {
		return `M = (w1, 0.01).M2; M2 = (w2, 0.02).Mf; Mf = (stop, 1).Mf;
O = (busy, ` + toggle + `).O1 + (w1, infty).O + (w2, infty).O; O1 = (idle, ` + toggle + `).O;
M <w1, w2> O
`
	}
	for _, r := range []float64{1e2, 1e4, 1e6} {
		c := testchain.Chain(t, src(fmt.Sprint(r)))
		fin := make([]bool, c.N)
		for i := range fin {
			fin[i] = strings.HasPrefix(c.StateString(i), "Mf")
		}
		e := engineFor(t, c, Target{}, [][]bool{fin}, 300)
		if got, want := e.Mean(0), 2/0.01+2/0.02; math.Abs(got-want) > 1e-12*want {
			t.Errorf("r = %g: mean %.17g, want %.17g", r, got, want)
		}
		if _, err := e.Check(300); err != nil {
			t.Fatal(err)
		}
		for _, tt := range []float64{10, 100, 300, 1000, 3000} {
			got, err := e.CDF(0, tt)
			if err != nil {
				t.Fatal(err)
			}
			want := interruptedCDF(0.01, 0.02, r, tt)
			if d := math.Abs(got - want); d > math.Max(e.Accuracy(), 1e-13) {
				t.Errorf("r = %g: F(%g) = %.15g, closed form %.15g (difference %.2g, accuracy %.2g)", r, tt, got, want, d, e.Accuracy())
			}
		}
		t.Logf("r = %g: %d solves, accuracy %.2g", r, e.Solves(), e.Accuracy())
	}
}

// TestErlangEveryWindow: Erlang work of 4 to 32 phases (poles of that
// order at the rate: the transform is large near the contour) asked at
// times over five windows, far from the goal the engine checks at: every
// value within the accuracy the engine states (the windows check
// themselves: with only the goal checked, Erlang-3's rise in the first
// second was 1.3e-5 off in a group while the goal was right).
func TestErlangEveryWindow(t *testing.T) {
	for _, k := range []int{4, 16, 32} {
		rates := make([]float64, k)
		for i := range rates {
			rates[i] = float64(k) // mean 1
		}
		c := testchain.Chain(t, testmodels.Hypoexponential(rates))
		done := make([]bool, c.N)
		for i := range done {
			done[i] = strings.HasPrefix(c.StateString(i), fmt.Sprintf("P%d", k))
		}
		e := engineFor(t, c, Target{}, [][]bool{done}, 20)
		if _, err := e.Check(20); err != nil {
			t.Fatal(err)
		}
		worst := 0.0
		for i := 0; i <= 80; i++ {
			tt := 0.02 * math.Pow(10, float64(i)/20) // 0.02 to 2,000
			got, err := e.CDF(0, tt)
			if err != nil {
				t.Fatal(err)
			}
			want := erlangCDFForTest(k, float64(k), tt)
			d := math.Abs(got - want)
			worst = math.Max(worst, d)
			if d > e.Accuracy()+1e-14 {
				t.Errorf("Erlang-%d: F(%g) = %.15g, closed form %.15g (difference %.2g, stated accuracy %.2g)", k, tt, got, want, d, e.Accuracy())
			}
		}
		t.Logf("Erlang-%d: %d solves, level %d, stated accuracy %.2g, largest difference %.2g", k, e.Solves(), e.Level(), e.Accuracy(), worst)
	}
}

// erlangCDFForTest is P(Poisson(l t) >= k): the Erlang-k CDF of rate l.
func erlangCDFForTest(k int, l, t float64) float64 {
	x := l * t
	term, sf := math.Exp(-x), 0.0
	for j := 0; j < k; j++ {
		sf += term
		term *= x / float64(j+1)
	}
	return 1 - sf
}
