package passage

import (
	"context"
	"errors"
	"math"
	"math/big"
	"strings"
	"testing"
	"time"

	"pepa/ctmc"
)

// TestHiddenAgainstDense: Hidden is alpha exp(Q_h t) of a dense matrix
// exponential (expDense: scaling and squaring of a Taylor series), on a
// chain with observed and unobserved transitions and self-loops of both
// kinds, to 1e-12; Observe moves exactly the observed action's mass.
func TestHiddenAgainstDense(t *testing.T) {
	// States 0..3; actions 1 (hidden), 2 (observed).
	type tr struct {
		from, to int
		act      int32
		rate     float64
	}
	trs := []tr{{0, 1, 1, 2}, {0, 2, 2, 0.5}, {1, 0, 1, 1}, {1, 3, 2, 3}, {2, 2, 2, 0.7}, {2, 3, 1, 1.5}, {3, 3, 1, 4}, {3, 0, 2, 0.2}}
	c := &ctmc.Chain{S: &ctmc.Structure{Actions: []string{"tau", "h", "o"}}, N: 4, RowPtr: []int64{0}}
	for s := 0; s < 4; s++ {
		for _, x := range trs {
			if x.from == s {
				c.Col = append(c.Col, int32(x.to))
				c.Act = append(c.Act, x.act)
				c.Rates = append(c.Rates, x.rate)
			}
		}
		c.RowPtr = append(c.RowPtr, int64(len(c.Col)))
	}
	q := make([][]float64, 4)
	for i := range q {
		q[i] = make([]float64, 4)
	}
	for _, x := range trs {
		q[x.from][x.from] -= x.rate
		if x.act == 1 {
			q[x.from][x.to] += x.rate
		}
	}
	alpha := []float64{0.6, 0.1, 0.3, 0}
	observed := []bool{false, false, true}
	for _, engine := range []string{EngineUniformization, EngineLaplace} {
		for _, tt := range []float64{0.1, 1, 3.7} {
			got, ran, err := HiddenWith(context.Background(), c, alpha, observed, tt, 1e-14, engine)
			if err != nil {
				t.Fatal(err)
			}
			if ran != engine {
				t.Errorf("%s: %s ran", engine, ran)
			}
			e := expDenseForTest(q, tt)
			for j := 0; j < 4; j++ {
				want := 0.0
				for i := 0; i < 4; i++ {
					want += alpha[i] * e[i][j]
				}
				if math.Abs(got[j]-want) > 1e-12 {
					t.Errorf("%s: t = %g: state %d: %.15g, dense %.15g", engine, tt, j, got[j], want)
				}
			}
		}
	}
	moved := Observe(c, []float64{1, 2, 3, 4}, 2)
	want := []float64{4 * 0.2, 0, 1*0.5 + 3*0.7, 2 * 3}
	for j := range want {
		if math.Abs(moved[j]-want[j]) > 1e-15 {
			t.Errorf("Observe: state %d %g, want %g", j, moved[j], want[j])
		}
	}
}

// expDenseForTest is exp(Q t) by scaling and squaring a 30-term Taylor
// series (small, well-scaled matrices only).
func expDenseForTest(q [][]float64, t float64) [][]float64 {
	n := len(q)
	mul := func(a, b [][]float64) [][]float64 {
		out := make([][]float64, n)
		for i := range out {
			out[i] = make([]float64, n)
			for k := 0; k < n; k++ {
				for j := 0; j < n; j++ {
					out[i][j] += a[i][k] * b[k][j]
				}
			}
		}
		return out
	}
	sq := 10
	a := make([][]float64, n)
	for i := range a {
		a[i] = make([]float64, n)
		for j := range a[i] {
			a[i][j] = q[i][j] * t / float64(int(1)<<sq)
		}
	}
	sum := make([][]float64, n)
	term := make([][]float64, n)
	for i := range sum {
		sum[i] = make([]float64, n)
		term[i] = make([]float64, n)
		sum[i][i], term[i][i] = 1, 1
	}
	for k := 1; k <= 30; k++ {
		term = mul(term, a)
		for i := range term {
			for j := range term[i] {
				term[i][j] /= float64(k)
				sum[i][j] += term[i][j]
			}
		}
	}
	for s := 0; s < sq; s++ {
		sum = mul(sum, sum)
	}
	return sum
}

// chainForTest builds a chain over n states from (from, to, action, rate)
// transitions.
func chainForTest(n int, actions []string, trs [][4]float64) *ctmc.Chain {
	c := &ctmc.Chain{S: &ctmc.Structure{Actions: actions}, N: n, RowPtr: []int64{0}}
	for s := 0; s < n; s++ {
		for _, x := range trs {
			if int(x[0]) == s {
				c.Col = append(c.Col, int32(x[1]))
				c.Act = append(c.Act, int32(x[2]))
				c.Rates = append(c.Rates, x[3])
			}
		}
		c.RowPtr = append(c.RowPtr, int64(len(c.Col)))
	}
	return c
}

// TestHiddenBounded: a span past MaxHiddenSteps is refused with an error
// wrapping ErrTooManySteps that says how far the chain may go (no
// overflowed count); a span just under it, on a chain whose every exit is
// observed, ends as soon as the mass is gone, with exactly the closed
// form's 0 (exp(-0.5 t) underflows); a chain whose mass never leaves (a
// hidden cycle) runs until its context ends; Poisson weights past their
// largest rate say so without a negative count.
func TestHiddenBounded(t *testing.T) {
	// State 0 <-> 1 hidden (action 1, rate 1 each way), both leave by the
	// observed action 2 at rate 0.5 into state 2, which moves no more.
	decay := chainForTest(3, []string{"tau", "h", "o"}, [][4]float64{{0, 1, 1, 1}, {0, 2, 2, 0.5}, {1, 0, 1, 1}, {1, 2, 2, 0.5}})
	observed := []bool{false, false, true}
	q := 1.5 * 1.02
	if span := HiddenSpan(decay, nil, EngineUniformization); math.Abs(span-MaxHiddenSteps/q) > 1e-6*span {
		t.Errorf("HiddenSpan %g, want %g", span, MaxHiddenSteps/q)
	}
	for _, tt := range []float64{2 * MaxHiddenSteps / q, 1e300, math.MaxFloat64} {
		_, err := Hidden(context.Background(), decay, []float64{1, 0, 0}, observed, tt, 1e-10)
		if !errors.Is(err, ErrTooManySteps) || !strings.Contains(err.Error(), "at most") || strings.Contains(err.Error(), "-9") {
			t.Errorf("t = %g: %v", tt, err)
		}
	}
	// Just under the cap: the mass is exp(-0.5 t) in states 0 and 1, 0 in
	// float64 long before; the steps stop there (a deadline far above the
	// microseconds they take, far below the minutes a billion steps do).
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got, err := Hidden(ctx, decay, []float64{0.5, 0.5, 0}, observed, 0.99*MaxHiddenSteps/q, 1e-10)
	if err != nil {
		t.Fatalf("just under the cap: %v", err)
	}
	if got[0] != 0 || got[1] != 0 || got[2] != 0 {
		t.Errorf("just under the cap: %v, want all 0 (state 2 is reached only by the observed action)", got)
	}
	// A short time on the same chain still agrees with the closed form:
	// the mass left is exp(-0.5 t), split evenly (0 and 1 are symmetric).
	got, err = Hidden(context.Background(), decay, []float64{0.5, 0.5, 0}, observed, 3, 1e-14)
	if err != nil {
		t.Fatal(err)
	}
	if want := 0.5 * math.Exp(-1.5); math.Abs(got[0]-want) > 1e-13 || math.Abs(got[1]-want) > 1e-13 {
		t.Errorf("t = 3: %v, want %g each", got[:2], want)
	}
	// Long enough for the early stop to be tried (every 64 steps) while
	// the sum still grows: Hidden agrees with the whole series, summed here
	// step by step with nothing stopped, and with the closed form, relative
	// to the small mass left.
	for _, tt := range []float64{40, 100, 300} {
		got, err = Hidden(context.Background(), decay, []float64{0.5, 0.5, 0}, observed, tt, 1e-14)
		if err != nil {
			t.Fatal(err)
		}
		// The whole series at the tolerance Hidden ended with (it tightens
		// epsilon where little mass is left: at the one asked, the series
		// was 36% low at t = 300), and the closed form, relative.
		tight := 1e-14 * math.Exp(-0.5*tt) / 10
		want := wholeSeries(t, decay, []float64{0.5, 0.5, 0}, observed, tt, tight)
		closed := 0.5 * math.Exp(-0.5*tt)
		for j := range want {
			if math.Abs(got[j]-want[j]) > 1e-12*math.Abs(want[j]) {
				t.Errorf("t = %g: state %d: %.17g, the whole series %.17g", tt, j, got[j], want[j])
			}
		}
		for j := 0; j < 2; j++ {
			if math.Abs(got[j]-closed) > 1e-12*closed {
				t.Errorf("t = %g: state %d: %.17g, closed form %.17g", tt, j, got[j], closed)
			}
		}
	}
	// Mass that never leaves: the steps run on until the context ends.
	cycle := chainForTest(2, []string{"tau", "h"}, [][4]float64{{0, 1, 1, 1}, {1, 0, 1, 1}})
	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := Hidden(ctx, cycle, []float64{1, 0}, []bool{false, false}, 0.99*HiddenSpan(cycle, nil, EngineAuto), 1e-10); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a cycle past its context: %v after %s", err, time.Since(start))
	}
	if _, err := FoxGlynn(1e300, 1e-10); err == nil || strings.Contains(err.Error(), "-9") || !strings.Contains(err.Error(), "too large") {
		t.Errorf("FoxGlynn(1e300): %v", err)
	}
}

// wholeSeries is alpha exp(Q_h t) by uniformization with a dense step
// matrix, every term from 0 to the Fox-Glynn right point summed.
func wholeSeries(t *testing.T, c *ctmc.Chain, alpha []float64, observed []bool, tt, epsilon float64) []float64 {
	t.Helper()
	n := c.N
	p := make([][]float64, n)
	q := 0.0
	exit := make([]float64, n)
	for s := 0; s < n; s++ {
		p[s] = make([]float64, n)
		for e := c.RowPtr[s]; e < c.RowPtr[s+1]; e++ {
			exit[s] += c.Rates[e]
		}
		q = math.Max(q, exit[s])
	}
	q *= 1.02
	for s := 0; s < n; s++ {
		p[s][s] = 1 - exit[s]/q
		for e := c.RowPtr[s]; e < c.RowPtr[s+1]; e++ {
			if !observed[c.Act[e]] {
				p[s][c.Col[e]] += c.Rates[e] / q
			}
		}
	}
	w, err := FoxGlynn(q*tt, epsilon)
	if err != nil {
		t.Fatal(err)
	}
	v := append([]float64(nil), alpha...)
	sum := make([]float64, n)
	for k := 0; k <= w.Right(); k++ {
		if k >= w.Left {
			for s := range v {
				sum[s] += w.W[k-w.Left] * v[s]
			}
		}
		next := make([]float64, n)
		for s := range v {
			for j := range v {
				next[j] += v[s] * p[s][j]
			}
		}
		v = next
	}
	return sum
}

// TestHiddenStiffCycle: an owner's cycle of three states (complex
// eigenvalues) turning 10^4 times faster than the observed completions
// that end it, run for q t up to 3e7: Laplace-transform inversion (auto
// chooses it) against the matrix exponential in 200-bit arithmetic
// (expBigForTest), within 1e-13. Uniformization forced is within 1e-10
// (its 3e7 steps in float64 gather about 4e-11 of rounding at t = 700).
func TestHiddenStiffCycle(t *testing.T) {
	// 0 -> 1 -> 2 -> 0 hidden at 1e4, 2e4, 1.5e4; 0 and 2 complete
	// (observed) at 1e-3 and 3e-3 to state 3, which the hidden action
	// leaves slowly back to 0.
	type tr struct {
		from, to int
		act      int32
		rate     float64
	}
	trs := []tr{{0, 1, 1, 1e4}, {1, 2, 1, 2e4}, {2, 0, 1, 1.5e4}, {0, 3, 2, 1e-3}, {2, 3, 2, 3e-3}, {3, 0, 1, 5e-4}}
	c := &ctmc.Chain{S: &ctmc.Structure{Actions: []string{"tau", "h", "o"}}, N: 4, RowPtr: []int64{0}}
	var gen [][3]float64 // the generator's off-diagonal rates and exits: (from, to or -1, rate)
	for s := 0; s < 4; s++ {
		for _, x := range trs {
			if x.from == s {
				c.Col = append(c.Col, int32(x.to))
				c.Act = append(c.Act, x.act)
				c.Rates = append(c.Rates, x.rate)
			}
		}
		c.RowPtr = append(c.RowPtr, int64(len(c.Col)))
	}
	for _, x := range trs {
		to := float64(x.to)
		if x.act != 1 {
			to = -1 // observed: the mass leaves
		}
		gen = append(gen, [3]float64{float64(x.from), to, x.rate})
	}
	alpha := []float64{0.5, 0.2, 0.2, 0.1}
	observed := []bool{false, false, true}
	for _, tt := range []float64{30, 700} {
		want := expBigForTest(4, gen, alpha, tt)
		lap, ran, err := HiddenWith(context.Background(), c, alpha, observed, tt, 1e-12, EngineAuto)
		if err != nil {
			t.Fatal(err)
		}
		if ran != EngineLaplace {
			t.Errorf("t = %g: auto ran %s, want laplace (q t = %.3g)", tt, ran, 4.5e4*tt)
		}
		uni, _, err := HiddenWith(context.Background(), c, alpha, observed, tt, 1e-13, EngineUniformization)
		if err != nil {
			t.Fatal(err)
		}
		for j := range want {
			if math.Abs(lap[j]-want[j]) > 1e-13 {
				t.Errorf("t = %g: state %d: laplace %.15g, exact %.15g", tt, j, lap[j], want[j])
			}
			if math.Abs(uni[j]-want[j]) > 1e-10 {
				t.Errorf("t = %g: state %d: uniformization %.15g, exact %.15g", tt, j, uni[j], want[j])
			}
		}
	}
}

// expBigForTest is alpha exp(Q t) in 200-bit floating point for the n x n
// generator of the transitions gen ((from, to, rate); to -1: the mass
// leaves), its diagonal summed in 200 bits too (in float64, -1e4 - 1e-3
// is off by 2e-12, which 700 time units turn into 1e-11): exp(Q t / 2^40)
// by 40 terms of its Taylor series, squared 40 times.
func expBigForTest(n int, gen [][3]float64, alpha []float64, t float64) []float64 {
	const prec = 200
	nf := func(x float64) *big.Float { return new(big.Float).SetPrec(prec).SetFloat64(x) }
	mat := func() [][]*big.Float {
		m := make([][]*big.Float, n)
		for i := range m {
			m[i] = make([]*big.Float, n)
			for j := range m[i] {
				m[i][j] = nf(0)
			}
		}
		return m
	}
	mul := func(a, b [][]*big.Float) [][]*big.Float {
		c := mat()
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				for k := 0; k < n; k++ {
					c[i][j].Add(c[i][j], new(big.Float).SetPrec(prec).Mul(a[i][k], b[k][j]))
				}
			}
		}
		return c
	}
	scale := new(big.Float).SetPrec(prec).SetMantExp(nf(t), -40)
	a, e, term := mat(), mat(), mat()
	for _, g := range gen {
		from, to, r := int(g[0]), int(g[1]), nf(g[2])
		a[from][from].Sub(a[from][from], r)
		if to >= 0 {
			a[from][to].Add(a[from][to], r)
		}
	}
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			a[i][j].Mul(a[i][j], scale)
		}
		e[i][i].SetFloat64(1)
		term[i][i].SetFloat64(1)
	}
	for k := 1; k <= 40; k++ {
		term = mul(term, a)
		for i := range term {
			for j := range term[i] {
				term[i][j].Quo(term[i][j], nf(float64(k)))
				e[i][j].Add(e[i][j], term[i][j])
			}
		}
	}
	for s := 0; s < 40; s++ {
		e = mul(e, e)
	}
	out := make([]float64, n)
	for j := 0; j < n; j++ {
		sum := nf(0)
		for i := 0; i < n; i++ {
			sum.Add(sum, new(big.Float).SetPrec(prec).Mul(nf(alpha[i]), e[i][j]))
		}
		out[j], _ = sum.Float64()
	}
	return out
}
