package elim

import (
	"context"
	"errors"
	"math"
	"math/big"
	"math/rand"
	"testing"
)

// stiffRate is log-uniform in [1e-4, 1e5].
func stiffRate(rng *rand.Rand) float64 { return math.Pow(10, -4+9*rng.Float64()) }

// newBig is a 256-bit float: the references below are exact far below
// float64's roundoff.
func newBig(x float64) *big.Float { return new(big.Float).SetPrec(256).SetFloat64(x) }

// relErr is |got - want| / |want| (want nonzero).
func relErr(got float64, want *big.Float) float64 {
	d := newBig(got)
	d.Sub(d, want)
	d.Quo(d, want)
	f, _ := d.Float64()
	return math.Abs(f)
}

// TestStiffBirthDeath: the steady state of birth-death chains with rates
// from 1e-4 to 1e5 (probabilities down to 1e-100 and below) against the
// closed form pi_k ~ prod_{i<k} l_i / m_{i+1} in 256-bit floats: every
// probability within 1e-13 of itself, with and without compensated
// pivots. A pivot formed as a difference loses the rare states entirely.
func TestStiffBirthDeath(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for trial := 0; trial < 50; trial++ {
		n := 2 + rng.Intn(60)
		lam, mu := make([]float64, n), make([]float64, n)
		a := make([]float64, n*n)
		for k := 0; k+1 < n; k++ {
			lam[k], mu[k+1] = stiffRate(rng), stiffRate(rng)
			a[k*n+k+1], a[(k+1)*n+k] = lam[k], mu[k+1]
		}
		want := make([]*big.Float, n)
		want[0] = newBig(1)
		for k := 1; k < n; k++ {
			want[k] = newBig(0).Mul(want[k-1], newBig(lam[k-1]))
			want[k].Quo(want[k], newBig(mu[k]))
		}
		for _, compensated := range []bool{false, true} {
			b := Block{N: n, Rates: append([]float64(nil), a...), Closed: true, Compensated: compensated}
			if err := b.Reduce(context.Background()); err != nil {
				t.Fatal(err)
			}
			x := make([]float64, n)
			x[0] = 1
			b.SolveLeft(nil, x)
			for k := range x {
				if e := relErr(x[k], want[k]); !(e <= 1e-13) {
					t.Fatalf("trial %d (n %d, compensated %v): pi_%d/pi_0 = %g, relative error %.3g", trial, n, compensated, k, x[k], e)
				}
			}
		}
	}
}

// randomBlock is a stiff block of n states that every state leaves: a
// cycle through all of them, a few more rates, and rates out of the
// block from some states (from state n-1 at least).
func randomBlock(rng *rand.Rand, n int) (rates, out []float64) {
	rates, out = make([]float64, n*n), make([]float64, n)
	for i := 0; i < n; i++ {
		rates[i*n+(i+1)%n] += stiffRate(rng)
		for e := rng.Intn(4); e > 0; e-- {
			if j := rng.Intn(n); j != i {
				rates[i*n+j] += stiffRate(rng)
			}
		}
		if i == n-1 || rng.Intn(3) == 0 {
			out[i] = stiffRate(rng)
		}
	}
	return rates, out
}

// bigSolve solves the n x n system m x = rhs in 256-bit floats by
// Gaussian elimination with partial pivoting (m is overwritten).
func bigSolve(m [][]*big.Float, rhs []*big.Float) []*big.Float {
	n := len(m)
	for col := 0; col < n; col++ {
		piv := col
		for r := col + 1; r < n; r++ {
			if new(big.Float).Abs(m[r][col]).Cmp(new(big.Float).Abs(m[piv][col])) > 0 {
				piv = r
			}
		}
		m[col], m[piv] = m[piv], m[col]
		rhs[col], rhs[piv] = rhs[piv], rhs[col]
		for r := col + 1; r < n; r++ {
			f := newBig(0).Quo(m[r][col], m[col][col])
			for k := col; k < n; k++ {
				m[r][k].Sub(m[r][k], newBig(0).Mul(f, m[col][k]))
			}
			rhs[r].Sub(rhs[r], newBig(0).Mul(f, rhs[col]))
		}
	}
	x := make([]*big.Float, n)
	for r := n - 1; r >= 0; r-- {
		s := newBig(0).Set(rhs[r])
		for k := r + 1; k < n; k++ {
			s.Sub(s, newBig(0).Mul(m[r][k], x[k]))
		}
		x[r] = s.Quo(s, m[r][r])
	}
	return x
}

// system is S - A of a block in 256-bit floats (transposed if left: the
// row-vector system x (S - A) = rhs as a column system).
func system(n int, rates, out []float64, left bool) [][]*big.Float {
	m := make([][]*big.Float, n)
	for i := range m {
		m[i] = make([]*big.Float, n)
		for j := range m[i] {
			m[i][j] = newBig(0)
		}
	}
	for i := 0; i < n; i++ {
		m[i][i].Add(m[i][i], newBig(out[i]))
		for j := 0; j < n; j++ {
			if r := rates[i*n+j]; j != i && r != 0 {
				m[i][i].Add(m[i][i], newBig(r))
				if left {
					m[j][i].Sub(m[j][i], newBig(r))
				} else {
					m[i][j].Sub(m[i][j], newBig(r))
				}
			}
		}
	}
	return m
}

// TestSolvesAgainstBigFloat: on random stiff blocks, the expected times
// of a row-vector solve and the absorption probabilities and mean times
// of column-vector solves are each within 1e-12 of the 256-bit solution,
// relative to themselves.
func TestSolvesAgainstBigFloat(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	for trial := 0; trial < 60; trial++ {
		n := 1 + rng.Intn(30)
		rates, out := randomBlock(rng, n)
		in := make([]float64, n)
		for i := range in {
			if rng.Intn(2) == 0 {
				in[i] = stiffRate(rng)
			}
		}
		in[0] = 1
		ones := make([]float64, n)
		for i := range ones {
			ones[i] = 1
		}
		b := Block{N: n, Rates: append([]float64(nil), rates...), Out: [][]float64{append([]float64(nil), out...)},
			Cols: [][]float64{append([]float64(nil), ones...)}}
		if err := b.Reduce(context.Background()); err != nil {
			t.Fatal(err)
		}
		check := func(what string, got []float64, left bool, rhs []float64) {
			t.Helper()
			bigRHS := make([]*big.Float, n)
			for i, v := range rhs {
				bigRHS[i] = newBig(v)
			}
			want := bigSolve(system(n, rates, out, left), bigRHS)
			for i := range got {
				if e := relErr(got[i], want[i]); !(e <= 1e-12) {
					t.Fatalf("trial %d (n %d): %s[%d] = %g, relative error %.3g", trial, n, what, i, got[i], e)
				}
			}
		}
		x := make([]float64, n)
		b.SolveLeft(append([]float64(nil), in...), x)
		check("expected time", x, true, in)
		b.SolveRight(b.Out[0], x)
		check("absorption probability", x, false, out)
		b.SolveRight(b.Cols[0], x)
		check("mean time", x, false, ones)
	}
}

// TestSplitSameBits: a step's rows split between two goroutines give
// the very bits of one goroutine's elimination.
func TestSplitSameBits(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	const n = 400
	rates, out := randomBlock(rng, n)
	for i := range rates {
		if rates[i] == 0 && rng.Intn(4) == 0 && i%(n+1) != 0 {
			rates[i] = stiffRate(rng)
		}
	}
	cst := make([]float64, n)
	for i := range cst {
		cst[i] = 1
	}
	reduce := func(rows int) *Block {
		defer func(r, w int) { parallelRows, parallelWork = r, w }(parallelRows, parallelWork)
		parallelRows, parallelWork = rows, 0
		b := &Block{N: n, Rates: append([]float64(nil), rates...), Out: [][]float64{append([]float64(nil), out...)},
			Cols: [][]float64{append([]float64(nil), cst...)}}
		if err := b.Reduce(context.Background()); err != nil {
			t.Fatal(err)
		}
		return b
	}
	split, one := reduce(64), reduce(n) // the work gate off: every step from 64 rows up is split
	same := func(what string, x, y []float64) {
		t.Helper()
		for i := range x {
			if math.Float64bits(x[i]) != math.Float64bits(y[i]) {
				t.Fatalf("%s[%d]: %x split, %x on one goroutine", what, i, math.Float64bits(x[i]), math.Float64bits(y[i]))
			}
		}
	}
	same("rates", split.Rates, one.Rates)
	same("out", split.Out[0], one.Out[0])
	same("cols", split.Cols[0], one.Cols[0])
}

// TestPivotError: a state that cannot leave the states before it (here:
// no rate at all) is refused by position, and so is a closed block that
// is not irreducible.
func TestPivotError(t *testing.T) {
	// State 1 of 3 has no rate: it is eliminated second.
	b := Block{N: 3, Rates: []float64{0, 1, 0, 0, 0, 0, 2, 0, 0}, Out: [][]float64{{1, 0, 0}}}
	var pe *PivotError
	if err := b.Reduce(context.Background()); !errors.As(err, &pe) || pe.State != 1 || pe.Rate != 0 {
		t.Fatalf("got %v, want state 1 at rate 0", err)
	}
	// 0 <-> 1 and 2 alone: 2 is eliminated first, with nothing to leave by.
	c := Block{N: 3, Rates: []float64{0, 1, 0, 1, 0, 0, 0, 0, 0}, Closed: true}
	if err := c.Reduce(context.Background()); !errors.As(err, &pe) || pe.State != 2 {
		t.Fatalf("got %v, want state 2", err)
	}
	// A rate that overflows float64 in the pivot.
	d := Block{N: 2, Rates: []float64{0, 1, math.MaxFloat64, 0}, Out: [][]float64{{1, math.MaxFloat64}}}
	if err := d.Reduce(context.Background()); !errors.As(err, &pe) || pe.State != 1 || !math.IsInf(pe.Rate, 1) {
		t.Fatalf("got %v, want state 1 at rate +Inf", err)
	}
}

// TestReduceCancel: a cancelled context stops the reduction.
func TestReduceCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rates, out := randomBlock(rand.New(rand.NewSource(1)), 300)
	b := Block{N: 300, Rates: rates, Out: [][]float64{out}}
	if err := b.Reduce(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
}
