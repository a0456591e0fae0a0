package steady

import (
	"context"
	"errors"
	"fmt"
	"math"

	"pepa/ctmc"
	"pepa/ctmc/elim"
)

// generator is the generator matrix of one closed class, renumbered
// 0..n-1 in state order, stored by columns: for local state j, in.ptr[j]..
// in.ptr[j+1] list the transitions into j from states i != j (sources
// ascending; parallel transitions from one source are separate entries,
// next to each other) and their rates. exit
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
func newGenerator(c *ctmc.Chain, class []int32) (*generator, error) {
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
	ntrans := int64(0)
	for _, i := range class {
		ntrans += c.RowPtr[i+1] - c.RowPtr[i]
	}
	g.outRate = make([]float64, 0, ntrans)
	for k, i := range class {
		var sum, comp float64
		for t := c.RowPtr[i]; t < c.RowPtr[i+1]; t++ {
			j := local[c.Col[t]]
			if j < 0 {
				return nil, fmt.Errorf("internal error: closed class leaks from state %d to %d", i, c.Col[t])
			}
			if int(j) != k {
				g.in.ptr[j+1]++
				sum, comp = elim.AddCompensated(sum, comp, c.RateAt(t))
				g.outRate = append(g.outRate, c.RateAt(t))
			}
		}
		g.outPtr[k+1] = int64(len(g.outRate))
		g.exit[k] = sum + comp
		// A closed class of one state may have only self-loops (a machine
		// with one application): Solve gives it probability 1 without a
		// solve. Otherwise every state of a closed class leaves it.
		if n == 1 && g.exit[k] == 0 {
			continue
		}
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
			rate[fill[j]] = c.RateAt(t)
			fill[j]++
		}
	}
	// Sources arrive in ascending order. Parallel transitions (several
	// actions, or several derivations, to the same target) are kept apart:
	// merging them would round a+b, and the residual, whose outflows are
	// the unmerged rates, would then see an imbalance that no vector
	// removes (measured: 7e-15 at a probable state, 1.2e-12 in the
	// throughputs of a nearly decomposable chain). The ILU matrices merge
	// them for themselves.
	g.in.src, g.in.rate = src, rate
	return g, nil
}

// parallel says whether incoming entry k of state j repeats the source of entry k-1
// (a parallel transition), for the matrices that merge them.
func (g *generator) parallel(j int, k int64) bool {
	return k > g.in.ptr[j] && g.in.src[k-1] == g.in.src[k]
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
			sum, comp = elim.AddCompensated(sum, comp, prod)
			comp += math.FMA(a, b, -prod)
		}
		for k := g.in.ptr[j]; k < g.in.ptr[j+1]; k++ {
			a, b := p[g.in.src[k]], g.in.rate[k]
			prod := a * b
			sum, comp = elim.AddCompensated(sum, comp, prod)
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

// steadySolver is one way of solving the class's generator: an initial
// solution, and corrections d with d Q = -r for a residual r = p Q.
type steadySolver interface {
	initial(ctx context.Context) ([]float64, error)
	correct(ctx context.Context, p, r, d []float64) error
	iterations() int
}

const unitRoundoff = 0x1p-53

// refine checks p (any positive scaling) by iterative refinement: it forms
// the exact residual r = p Q, solves for the correction d, and estimates
// from d the error of every throughput relative to itself. With apply
// false it returns that estimate for p as it is. Otherwise, while some
// estimate exceeds tol, it applies the correction and repeats. On
// acceptance it normalises p in place and returns the estimates by action
// name. It fails when the estimates stop shrinking above tol.
func refine(ctx context.Context, c *ctmc.Chain, g *generator, s steadySolver, p []float64, tol float64, apply bool) (map[string]float64, int, error) {
	e := newEstimator(c, g)
	prev := math.Inf(1)
	slow := 0
	const maxSteps = 40
	for step := 0; ; step++ {
		if err := ctx.Err(); err != nil {
			return nil, step, err
		}
		g.residual(p, e.r)
		worst, worstA, trusted, err := e.run(ctx, s, p)
		if err != nil {
			return nil, step, err
		}
		if worst <= tol && trusted || !apply {
			for i := range p {
				p[i] /= e.S
			}
			out := make(map[string]float64)
			for a, ok := range e.enabled {
				if ok {
					out[c.S.Actions[a]] = e.est[a]
				}
			}
			return out, step, nil
		}
		if worst > 0.5*prev {
			slow++
		} else {
			slow = 0
		}
		if slow >= 5 || step == maxSteps {
			if !trusted {
				return nil, step, fmt.Errorf("%w: the correction solve does not converge", errNoProgress)
			}
			return nil, step, fmt.Errorf("%w: estimated relative error %.3g on the throughput of %s after %d refinement steps (tolerance %.3g)",
				errNoProgress, worst, c.S.Actions[worstA], step, tol)
		}
		prev = math.Min(prev, worst)
		for i := range p {
			// An iterate's correction can overshoot a rare state below
			// zero; keep it positive (the scaled corrections divide by
			// it) by shrinking it instead. Only iterates are affected:
			// what is returned is whatever passed the check above.
			p[i] = math.Max(p[i]+e.d[i], p[i]*1e-3)
		}
	}
}

// estimator holds refine's work arrays.
type estimator struct {
	c                *ctmc.Chain
	g                *generator
	r, d             []float64
	x, xc, dx, floor []float64
	est              []float64
	enabled          []bool
	S                float64
}

func newEstimator(c *ctmc.Chain, g *generator) *estimator {
	na := len(c.S.Actions)
	return &estimator{c: c, g: g, r: make([]float64, g.n), d: make([]float64, g.n),
		x: make([]float64, na), xc: make([]float64, na), dx: make([]float64, na), floor: make([]float64, na),
		est: make([]float64, na), enabled: make([]bool, na)}
}

// run solves for the correction d of p with s (the residual e.r already
// formed) and sets e.est; it returns the worst estimate and its action,
// and whether the correction solve met its tolerance.
func (e *estimator) run(ctx context.Context, s steadySolver, p []float64) (float64, int, bool, error) {
	c, g := e.c, e.g
	d, r := e.d, e.r
	for i := range d {
		d[i] = 0
	}
	err := s.correct(ctx, p, r, d)
	trusted := err == nil
	if err != nil && !errors.Is(err, errInaccurate) {
		return 0, 0, false, err
	}
	for _, v := range d {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, 0, false, fmt.Errorf("%w: the error check over- or underflows (the steady-state probabilities span more than float64 holds, about 1e-308 to 1e308)", errNoProgress)
		}
	}
	var S, Sc, D float64
	for i := range p {
		S, Sc = elim.AddCompensated(S, Sc, p[i])
		D += d[i]
	}
	S += Sc
	e.S = S
	x, xc, dx, floor := e.x, e.xc, e.dx, e.floor
	for a := range x {
		x[a], xc[a], dx[a], floor[a] = 0, 0, 0, 0
	}
	for k, i := range g.class {
		pi := p[k] / S
		dpi := d[k]/S - pi*D/S
		// The state's own relative imbalance: a correction solve can be
		// blind to one state, but a probability that is off shows in
		// its own balance.
		imbalance := math.Abs(r[k]) / (math.Abs(p[k]) * g.exit[k])
		for t := c.RowPtr[i]; t < c.RowPtr[i+1]; t++ {
			a := c.Act[t]
			e.enabled[a] = true
			x[a], xc[a] = elim.AddCompensated(x[a], xc[a], pi*c.RateAt(t))
			dx[a] += dpi * c.RateAt(t)
			if !(imbalance <= floor[a]) {
				floor[a] = imbalance
			}
		}
	}
	worst, worstA := 0.0, -1
	for a := range x {
		if !e.enabled[a] {
			continue
		}
		xa := x[a] + xc[a]
		switch {
		case xa > 0:
			e.est[a] = math.Max(math.Abs(dx[a])/xa, floor[a]) + 2*unitRoundoff
		case dx[a] == 0:
			e.est[a] = 0
		default:
			e.est[a] = math.Inf(1)
		}
		if !(e.est[a] <= worst) {
			worst, worstA = e.est[a], a
		}
	}
	return worst, worstA, trusted, nil
}
