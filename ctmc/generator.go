package ctmc

import (
	"context"
	"fmt"
	"math"
)

// generator is the generator matrix of one closed class, renumbered
// 0..n-1 in state order, stored by columns: for local state j, in.ptr[j]..
// in.ptr[j+1] list the states i != j with a transition to j (ascending, one
// entry per source, rates of all actions summed) and the rates q_ij. exit
// holds q_j = sum_{k != j} q_jk. Self-loops are left out: they do not move
// the chain. reward lists, per local state, the chain's transitions (self-
// loops included, they fire) for throughputs.
type generator struct {
	n     int
	class []int32 // local index -> chain state
	in    csr
	exit  []float64
	// outPtr/outRate list the rates out of each state (self-loops left
	// out, not merged), so that the residual can subtract p_j q_j as the
	// exact sum of p_j q_jk: a rounded q_j is a different chain, and on a
	// stiff one the difference shows at 1e-12 relative.
	outPtr  []int64
	outRate []float64
}

// csr is a compressed matrix of incoming transitions: for state j, the
// entries ptr[j]..ptr[j+1] give source states and rates.
type csr struct {
	ptr  []int64
	src  []int32
	rate []float64
}

// newGenerator builds the class's generator. Every transition of a class
// state stays in the class (it is closed).
func newGenerator(c *Chain, class []int32) (*generator, error) {
	n := len(class)
	local := make([]int32, c.N)
	for i := range local {
		local[i] = -1
	}
	for k, i := range class {
		local[i] = int32(k)
	}
	g := &generator{n: n, class: class, exit: make([]float64, n)}
	g.in.ptr = make([]int64, n+1)
	g.outPtr = make([]int64, n+1)
	for k, i := range class {
		var sum, comp float64
		for t := c.RowPtr[i]; t < c.RowPtr[i+1]; t++ {
			j := local[c.Col[t]]
			if j < 0 {
				return nil, fmt.Errorf("internal error: closed class leaks from state %d to %d", i, c.Col[t])
			}
			if int(j) != k {
				g.in.ptr[j+1]++
				sum, comp = twoSumAcc(sum, comp, c.Rate[t])
				g.outRate = append(g.outRate, c.Rate[t])
			}
		}
		g.outPtr[k+1] = int64(len(g.outRate))
		g.exit[k] = sum + comp
		if !(g.exit[k] > 0) || math.IsInf(g.exit[k], 0) {
			return nil, fmt.Errorf("state %d (%s) has exit rate %g: steady state needs finite positive exit rates", i, c.StateString(int(i)), g.exit[k])
		}
	}
	for j := 0; j < n; j++ {
		g.in.ptr[j+1] += g.in.ptr[j]
	}
	src := make([]int32, g.in.ptr[n])
	rate := make([]float64, g.in.ptr[n])
	fill := append([]int64(nil), g.in.ptr[:n]...)
	for k, i := range class {
		for t := c.RowPtr[i]; t < c.RowPtr[i+1]; t++ {
			j := local[c.Col[t]]
			if int(j) == k {
				continue
			}
			src[fill[j]] = int32(k)
			rate[fill[j]] = c.Rate[t]
			fill[j]++
		}
	}
	// Sources arrive in ascending order; merge duplicates (several actions
	// or several derivations to the same target) in place.
	out := int64(0)
	start := int64(0)
	for j := 0; j < n; j++ {
		end := g.in.ptr[j+1]
		rowStart := out
		for t := start; t < end; t++ {
			if out > rowStart && src[out-1] == src[t] {
				rate[out-1] += rate[t]
				continue
			}
			src[out], rate[out] = src[t], rate[t]
			out++
		}
		start = end
		g.in.ptr[j+1] = out
	}
	g.in.src, g.in.rate = src[:out], rate[:out]
	return g, nil
}

// residual sets r = p Q with every product split exactly (FMA) and every
// sum compensated, so that r_j is correct to a few units in the last place
// of the largest term of state j, however much the terms cancel.
func (g *generator) residual(p, r []float64) {
	for j := 0; j < g.n; j++ {
		sum, comp := 0.0, 0.0
		for k := g.outPtr[j]; k < g.outPtr[j+1]; k++ {
			a, b := -p[j], g.outRate[k]
			prod := a * b
			sum, comp = twoSumAcc(sum, comp, prod)
			comp += math.FMA(a, b, -prod)
		}
		for k := g.in.ptr[j]; k < g.in.ptr[j+1]; k++ {
			a, b := p[g.in.src[k]], g.in.rate[k]
			prod := a * b
			sum, comp = twoSumAcc(sum, comp, prod)
			comp += math.FMA(a, b, -prod)
		}
		r[j] = sum + comp
	}
}

// normResidual is ||p Q||_inf / (max_i q_i ||p||_inf).
func (g *generator) normResidual(p []float64) float64 {
	r := make([]float64, g.n)
	g.residual(p, r)
	rm, pm, qm := 0.0, 0.0, 0.0
	for j := range r {
		rm = math.Max(rm, math.Abs(r[j]))
		pm = math.Max(pm, math.Abs(p[j]))
		qm = math.Max(qm, g.exit[j])
	}
	return rm / (qm * pm)
}

// twoSumAcc adds x to the compensated sum (sum, comp) (Neumaier's variant
// of Kahan summation).
func twoSumAcc(sum, comp, x float64) (float64, float64) {
	t := sum + x
	if math.Abs(sum) >= math.Abs(x) {
		comp += (sum - t) + x
	} else {
		comp += (x - t) + sum
	}
	return t, comp
}

// steadySolver is one way of solving the class's generator: an initial
// solution, and corrections d with d Q = -r for a residual r = p Q.
type steadySolver interface {
	initial(ctx context.Context) ([]float64, error)
	correct(ctx context.Context, r, d []float64) error
	iterations() int
}

const unitRoundoff = 0x1p-53

// refine checks p (any positive scaling) by iterative refinement: it forms
// the exact residual r = p Q, solves for the correction d, and estimates
// from d the error of every throughput relative to itself. While some
// estimate exceeds tol it applies the correction and repeats; when none
// does it normalises p in place and returns the estimates by action name.
// It fails when the estimates stop shrinking above tol.
func refine(ctx context.Context, c *Chain, g *generator, s steadySolver, p []float64, tol float64) (map[string]float64, int, error) {
	n := g.n
	r := make([]float64, n)
	d := make([]float64, n)
	na := len(c.S.Actions)
	x := make([]float64, na)
	xc := make([]float64, na)
	dx := make([]float64, na)
	enabled := make([]bool, na)
	est := make([]float64, na)
	prev := math.Inf(1)
	slow := 0
	const maxSteps = 40
	for step := 0; ; step++ {
		if err := ctx.Err(); err != nil {
			return nil, step, err
		}
		g.residual(p, r)
		for i := range d {
			d[i] = 0
		}
		if err := s.correct(ctx, r, d); err != nil {
			return nil, step, err
		}
		var S, Sc, D float64
		for i := range p {
			S, Sc = twoSumAcc(S, Sc, p[i])
			D += d[i]
		}
		S += Sc
		for a := range x {
			x[a], xc[a], dx[a] = 0, 0, 0
		}
		for k, i := range g.class {
			pi := p[k] / S
			dpi := d[k]/S - pi*D/S
			for t := c.RowPtr[i]; t < c.RowPtr[i+1]; t++ {
				a := c.Act[t]
				enabled[a] = true
				x[a], xc[a] = twoSumAcc(x[a], xc[a], pi*c.Rate[t])
				dx[a] += dpi * c.Rate[t]
			}
		}
		worst, worstA := 0.0, -1
		for a := range x {
			if !enabled[a] {
				continue
			}
			xa := x[a] + xc[a]
			switch {
			case xa > 0:
				est[a] = math.Abs(dx[a])/xa + 2*unitRoundoff
			case dx[a] == 0:
				est[a] = 0
			default:
				est[a] = math.Inf(1)
			}
			if !(est[a] <= worst) {
				worst, worstA = est[a], a
			}
		}
		if worst <= tol {
			for i := range p {
				p[i] /= S
			}
			out := make(map[string]float64)
			for a := range x {
				if enabled[a] {
					out[c.S.Actions[a]] = est[a]
				}
			}
			return out, step, nil
		}
		if worst > 0.5*prev {
			slow++
		} else {
			slow = 0
		}
		if slow >= 3 || step == maxSteps {
			return nil, step, fmt.Errorf("%w: estimated relative error %.3g on the throughput of %s after %d refinement steps (tolerance %.3g)",
				errNoProgress, worst, c.S.Actions[worstA], step, tol)
		}
		prev = math.Min(prev, worst)
		for i := range p {
			p[i] += d[i]
		}
	}
}
