package passage

import (
	"context"
	"math"
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
	for _, tt := range []float64{0.1, 1, 3.7} {
		got, err := Hidden(context.Background(), c, alpha, observed, tt, 1e-14)
		if err != nil {
			t.Fatal(err)
		}
		e := expDenseForTest(q, tt)
		for j := 0; j < 4; j++ {
			want := 0.0
			for i := 0; i < 4; i++ {
				want += alpha[i] * e[i][j]
			}
			if math.Abs(got[j]-want) > 1e-12 {
				t.Errorf("t = %g: state %d: %.15g, dense %.15g", tt, j, got[j], want)
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
