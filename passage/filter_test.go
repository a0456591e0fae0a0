package passage

import (
	"context"
	"math"
	"math/big"
	"testing"

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
