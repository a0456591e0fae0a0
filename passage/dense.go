package passage

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"pepa/ctmc"
	"pepa/ctmc/elim"
)

// DenseMaxStates is the largest chain whose passage Solve computes by the
// dense matrix exponential when the uniformization series would be too
// long (DenseSwitchSteps).
const DenseMaxStates = 64

// DenseSwitchSteps is the series length past which a chain of at most
// DenseMaxStates states is solved densely instead: q*t that large on so
// small a chain means rates many orders of magnitude apart (stiff).
const DenseSwitchSteps = 1 << 20

// denseDist is a passage distribution by the matrix exponential of the
// absorbing generator: states 0..m-1 are the chain's non-target states,
// m the absorbing target. F(t) = a0 + alpha exp(G t) e_m, by expm1At.
// Accuracy: the tests compare it with closed forms of stiff chains (rates
// 1e5 and 1e-4, 1e19 and 1, 1e12 with 3e-3) to 1e-10.
type denseDist struct {
	gen   *mat.Dense // (m+1) x (m+1) generator with the target absorbing
	alpha []float64  // start over the m non-target states
	a0    float64    // start mass already in the target
	into  []float64  // rate from each non-target state into the target
}

func newDenseDist(c *ctmc.Chain, pr Problem) *denseDist {
	local := make([]int, c.N)
	m := 0
	for i := range local {
		if pr.TargetStates != nil && pr.TargetStates[i] {
			local[i] = -1
			continue
		}
		local[i] = m
		m++
	}
	mask := targetMask([]Problem{pr})
	d := &denseDist{gen: mat.NewDense(m+1, m+1, nil), alpha: make([]float64, m), into: make([]float64, m)}
	for i := 0; i < c.N; i++ {
		li := local[i]
		if li < 0 {
			d.a0 += pr.Alpha[i]
			continue
		}
		d.alpha[li] = pr.Alpha[i]
		for e := c.RowPtr[i]; e < c.RowPtr[i+1]; e++ {
			j, r := int(c.Col[e]), c.RateAt(e)
			lj := local[j]
			if mask.of(c.Act[e]) != 0 {
				lj = -1
			}
			if lj == li {
				continue
			}
			if lj < 0 {
				lj = m
				d.into[li] += r
			}
			d.gen.Set(li, lj, d.gen.At(li, lj)+r)
			d.gen.Set(li, li, d.gen.At(li, li)-r)
		}
	}
	return d
}

// expm1At returns exp(G t) - I by scaling and squaring on the difference
// from the identity: with q the largest rate out of a state and
// q t / 2^s <= 1/2, D = exp(A) - I for A = G t/2^s by its Taylor series
// (||A|| <= 1, terms until they are below 1e-20), then s times
// D <- 2D + D D, which is (I + D)^2 - I. Working on D rather than on
// exp(G t) keeps a slow state's tiny chance of leaving: 1 - 1e-19 would
// round to 1 and never decay, while D keeps -1e-19 to full relative
// precision (gonum's Exp, on I + D, loses such generators entirely). Each
// row of D is computed from products with that row's own rates, so a slow
// row keeps its relative accuracy next to fast ones.
func (d *denseDist) expm1At(t float64) *mat.Dense {
	n, _ := d.gen.Dims()
	q := 0.0
	for i := 0; i < n; i++ {
		q = math.Max(q, -d.gen.At(i, i))
	}
	if q == 0 {
		return mat.NewDense(n, n, nil)
	}
	// q t / 2^s in (1/4, 1/2], in logarithms: q t may overflow (rates of
	// 1e300, t of 1e20) and still have a well-defined answer.
	s, factor := 0, q*t
	if lg := math.Log2(q) + math.Log2(t); lg > -1 {
		s = int(math.Ceil(lg + 1))
		factor = math.Exp2(lg - float64(s))
	}
	var a mat.Dense
	a.Scale(factor/q, d.gen)
	dm := mat.NewDense(n, n, nil)
	term := mat.DenseCopyOf(&a) // A^k / k!
	for k := 1; k < 40; k++ {
		dm.Add(dm, term)
		if mat.Norm(term, math.Inf(1)) < 1e-20*math.Max(mat.Norm(dm, math.Inf(1)), 1e-300) {
			break
		}
		var next mat.Dense
		next.Mul(term, &a)
		next.Scale(1/float64(k+1), &next)
		term = &next
	}
	for ; s > 0; s-- {
		var sq mat.Dense
		sq.Mul(dm, dm)
		sq.Add(&sq, dm)
		sq.Add(&sq, dm)
		dm = &sq
	}
	return dm
}

func (d *denseDist) cdf(t float64) float64 {
	if t <= 0 {
		return clamp01(d.a0)
	}
	e := d.expm1At(t) // off the diagonal, the same as exp(G t)
	m := len(d.alpha)
	f := d.a0
	for i, x := range d.alpha {
		if x != 0 {
			f += x * e.At(i, m)
		}
	}
	return clamp01(f)
}

func (d *denseDist) pdf(t float64) float64 {
	if t < 0 {
		return 0
	}
	e := d.expm1At(t)
	f := 0.0
	for i, x := range d.alpha {
		if x == 0 {
			continue
		}
		for j, r := range d.into {
			v := e.At(i, j)
			if i == j {
				v += 1
			}
			f += x * v * r
		}
	}
	return math.Max(0, f)
}

// total is the probability that the passage ever ends: a0 plus alpha h,
// h_i the probability of ever entering the target from non-target state
// i. States that cannot reach the target have h = 0; on the others, h is
// found by state reduction without subtraction (package ctmc/elim: the
// rate into the target and the rate to states that cannot reach it are
// the block's rates out, the first also the right-hand side), so stiff
// rates keep their relative accuracy. (A dense LU solve here failed on a
// chain with a closed class that cannot reach the target: its block of -S
// is singular.)
func (d *denseDist) total() (float64, error) {
	m := len(d.alpha)
	if m == 0 {
		return clamp01(d.a0), nil
	}
	// States that can reach the target, backwards from it.
	can := make([]bool, m+1)
	can[m] = true
	for changed := true; changed; {
		changed = false
		for i := 0; i < m; i++ {
			if can[i] {
				continue
			}
			for j := 0; j <= m; j++ {
				if j != i && can[j] && d.gen.At(i, j) > 0 {
					can[i], changed = true, true
					break
				}
			}
		}
	}
	var idx []int
	for i := 0; i < m; i++ {
		if can[i] {
			idx = append(idx, i)
		}
	}
	k := len(idx)
	r := make([]float64, k*k) // rates among the states that can reach the target
	into := make([]float64, k)
	lost := make([]float64, k) // rates to states that cannot
	for x, i := range idx {
		into[x] = d.into[i]
		for y, j := range idx {
			if j != i {
				r[x*k+y] = d.gen.At(i, j)
			}
		}
		for j := 0; j < m; j++ {
			if !can[j] && j != i {
				lost[x] += d.gen.At(i, j)
			}
		}
	}
	block := elim.Block{N: k, Rates: r, Out: [][]float64{into, lost}}
	if err := block.Reduce(context.Background()); err != nil {
		return 0, fmt.Errorf("absorption probabilities: %w", err)
	}
	h := make([]float64, k)
	block.SolveRight(into, h)
	p := d.a0
	for e, he := range h {
		p += d.alpha[idx[e]] * he
	}
	return clamp01(p), nil
}

// quantile is the smallest t with F(t) >= p, to a relative 1e-10: the
// bracket found by doubling, then Newton steps with the density kept inside
// it (a step that leaves it, or gains too little, bisects: geometrically
// while the bracket spans orders of magnitude). Each evaluation is a matrix
// exponential, so Newton's few steps matter: plain bisection took 200.
func (d *denseDist) quantile(p, total, eps float64) float64 {
	if total < p-eps {
		return math.Inf(1)
	}
	if d.cdf(0) >= p {
		return 0
	}
	lo, hi := 0.0, 1.0
	for d.cdf(hi) < p {
		lo, hi = hi, hi*2
		if math.IsInf(hi, 1) {
			return math.Inf(1)
		}
	}
	t := (lo + hi) / 2
	for i := 0; i < 200 && hi-lo > 1e-10*hi; i++ {
		if !(t > lo && t < hi) {
			t = (lo + hi) / 2
			if lo > 0 && hi/lo > 4 {
				t = math.Sqrt(lo * hi)
			}
		}
		f := d.cdf(t)
		if f >= p {
			hi = t
		} else {
			lo = t
		}
		dens := d.pdf(t)
		next := t - (f-p)/dens
		switch {
		case dens > 0 && next > lo && next < hi && math.Abs(next-t) < (hi-lo)/2:
			if math.Abs(next-t) <= 1e-11*t {
				return next
			}
			t = next
		case lo > 0 && hi/lo > 4:
			t = math.Sqrt(lo * hi)
		default:
			t = (lo + hi) / 2
		}
	}
	return hi
}
