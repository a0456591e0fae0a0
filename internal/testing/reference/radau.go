package reference

import (
	"errors"
	"fmt"
	"math"
	"math/cmplx"
	"sort"
	"sync"

	"gonum.org/v1/gonum/mat"
)

// RadauOptions tunes the stiff integrator.
type RadauOptions struct {
	// RTol and ATol are the relative and absolute tolerances on each
	// probability (0: 1e-11 each). As in RADAU5 they are turned into the
	// tolerance of the order-3 error estimate, 0.1 RTol^(2/3), so that the
	// global error of the order-5 solution is about RTol.
	RTol, ATol float64
	// MaxSteps bounds the steps of one integration (0: 1e6).
	MaxSteps int
}

// RadauStats says what an integration did.
type RadauStats struct {
	Steps, Rejected int
	// Factorizations counts the sparse LU factorisations (one real and one
	// complex each time the step size changes).
	Factorizations int
	// Blocks is the number of strongly connected components (the chain is
	// acyclic when it equals the number of states); FillL and FillU the
	// off-diagonal entries of the last real factors.
	Blocks, FillL, FillU int
}

// ErrRadauSteps is returned when an integration needs more than
// RadauOptions.MaxSteps steps or its step size collapses.
var ErrRadauSteps = errors.New("radau: too many steps")

// TransientRadau returns pi(t) = alpha exp(Q t) for each t of ts, Q the
// chain's generator (self-loops left out), by integrating the Kolmogorov
// forward equation d pi/dt = pi Q with the Radau IIA method of order 5.
//
// # Method
//
// The three-stage Radau IIA method (c = (4-sqrt6)/10, (4+sqrt6)/10, 1),
// implemented as in Hairer and Wanner's RADAU5 (Solving ODEs II, section
// IV.8) for the linear system y' = A y, A = Q^T: the stage system
// (A_rk^{-1}/h (x) I - I (x) A) Z = 1 (x) A y0 is diagonalised by the
// eigenvectors of A_rk^{-1} (one real eigenvalue, one complex pair), so a
// step is one real and one complex sparse solve with sigma I - A,
// sigma = lambda/h; the problem being linear, the Newton iteration of
// RADAU5 converges in its first iterate and is not needed. y1 = y0 + Z3
// (the method is stiffly accurate and L-stable). The local error is
// RADAU5's embedded estimate (sigma_1 I - A)^{-1} (A y0 + sum_i e_i Z_i/h),
// refined once through A (y0 + err) after a rejection or on the first
// step, measured in the largest ratio to atol + rtol max(|y0|, |y1|)
// (RADAU5 takes a root mean square; on a probability vector of 20,000
// states that lets one state's error be 140 times the tolerance), and the
// step size follows RADAU5's controller (safety 0.9, factor limits 1/5
// and 8, Gustafsson's predictive rule, the step kept when the new one is
// within [1, 1.2] of it so as not to factorise again). The integration
// stops exactly on each requested time.
//
// The linear systems are solved by the sparse LU of sparselu.go, in
// blockOrder's numbering: fill-in only inside strongly connected
// components, none on an acyclic chain.
//
// # Accuracy
//
// The step-size control bounds local errors only; the global error is
// measured by the tests. At the default tolerances (1e-11) the
// probabilities were within 5e-11 of the closed forms (hypoexponential
// with phases from 1e-4 to 1e4, q t up to 2e9; Erlang-16 beside a fast
// flip-flop, q t up to 5e8; TestRadauClosedForms), within 2.5e-11 of the
// double-double transient on random stiff models and within 1e-11 on the
// 1,023-state network group (TestRadauAgainstDD, TestStiffOraclesLong).
// The error falls with the tolerance, about in proportion, down to a
// floor near 2e-12 at 1e-13. Rounding does not grow with q t: a step
// solves (sigma I - A) v = y0 rather than forming A y0 (whose fast terms
// cancel, an error of u q h per step), and the real solve is
// subtraction-free (sparselu.go), so the rounding error of a step is a
// few u of the probabilities whatever h. CDFsRadau also estimates the
// error by a second run.
func (c *Chain) TransientRadau(alpha, ts []float64, opt RadauOptions) ([][]float64, RadauStats, error) {
	if len(alpha) != c.N() {
		return nil, RadauStats{}, fmt.Errorf("alpha has %d entries for %d states", len(alpha), c.N())
	}
	return radau(c.generatorRows(), alpha, ts, opt)
}

// CDFsRadau is P(passage time <= t) for each t of ts by TransientRadau's
// method on the absorbing chain, run twice: at opt's tolerances and at
// tolerances 100 times larger. It returns the first run's values and, as
// an estimate of their error, the difference between the runs (the global
// error grows about in proportion to the tolerance, so the difference is
// about the coarser run's error: a generous estimate of the finer run's),
// and the finer run's statistics.
func (c *Chain) CDFsRadau(p Passage, ts []float64, opt RadauOptions) (vals, errs []float64, stats RadauStats, err error) {
	n := c.N()
	rows := append(c.absorbingRows(p), nil)
	alpha := make([]float64, n+1)
	copy(alpha, p.Alpha)
	cdf := func(pis [][]float64) []float64 {
		out := make([]float64, len(pis))
		for k, pi := range pis {
			f := pi[n]
			if p.TargetStates != nil {
				for i := 0; i < n; i++ {
					if p.TargetStates[i] {
						f += pi[i]
					}
				}
			}
			out[k] = f
		}
		return out
	}
	fine, stats, err := radau(rows, alpha, ts, opt)
	if err != nil {
		return nil, nil, stats, err
	}
	coarseOpt := opt
	coarseOpt.RTol, coarseOpt.ATol = 100*opt.rtol(), 100*opt.atol()
	coarse, _, err := radau(rows, alpha, ts, coarseOpt)
	if err != nil {
		return nil, nil, stats, err
	}
	vals, cv := cdf(fine), cdf(coarse)
	errs = make([]float64, len(ts))
	for k := range vals {
		errs[k] = math.Abs(vals[k] - cv[k])
	}
	return vals, errs, stats, nil
}

func (o RadauOptions) rtol() float64 {
	if o.RTol > 0 {
		return o.RTol
	}
	return 1e-11
}

func (o RadauOptions) atol() float64 {
	if o.ATol > 0 {
		return o.ATol
	}
	return 1e-11
}

// radauCoefficients are the constants of the three-stage Radau IIA
// method: the real eigenvalue gamma and the complex one lambda (with its
// conjugate) of A_rk^{-1}, the weights w[i][k] = V[i][k] (V^{-1} 1)[k]
// with which stage i is Z_i = w[i][0] x_0 + 2 Re(w[i][1] x_1), x_k =
// (lambda_k/h I - A)^{-1} A y0, and RADAU5's error-estimate coefficients
// dd[i] = gamma e_i.
type radauCoefficients struct {
	gamma  float64
	lambda complex128
	wReal  [3]float64
	wCplx  [3]complex128
	dd     [3]float64
}

var radauCoef = sync.OnceValue(func() radauCoefficients {
	s6 := math.Sqrt(6)
	ark := mat.NewDense(3, 3, []float64{
		(88 - 7*s6) / 360, (296 - 169*s6) / 1800, (-2 + 3*s6) / 225,
		(296 + 169*s6) / 1800, (88 + 7*s6) / 360, (-2 - 3*s6) / 225,
		(16 - s6) / 36, (16 + s6) / 36, 1.0 / 9,
	})
	var inv mat.Dense
	if err := inv.Inverse(ark); err != nil {
		panic(err)
	}
	var eig mat.Eigen
	if !eig.Factorize(&inv, mat.EigenRight) {
		panic("radau: eigen decomposition failed")
	}
	vals := eig.Values(nil)
	var vecs mat.CDense
	eig.VectorsTo(&vecs)
	// The real eigenvalue first, then the one with positive imaginary part.
	idx := []int{0, 1, 2}
	sort.Slice(idx, func(a, b int) bool { return math.Abs(imag(vals[idx[a]])) < math.Abs(imag(vals[idx[b]])) })
	if imag(vals[idx[1]]) < 0 {
		idx[1], idx[2] = idx[2], idx[1]
	}
	var v [3][3]complex128
	var lam [3]complex128
	for k, j := range idx {
		lam[k] = vals[j]
		for i := 0; i < 3; i++ {
			v[i][k] = vecs.At(i, j)
		}
	}
	// g = V^{-1} 1 by Gaussian elimination with partial pivoting.
	a := v
	g := [3]complex128{1, 1, 1}
	for col := 0; col < 3; col++ {
		p := col
		for r := col + 1; r < 3; r++ {
			if cmplx.Abs(a[r][col]) > cmplx.Abs(a[p][col]) {
				p = r
			}
		}
		a[col], a[p] = a[p], a[col]
		g[col], g[p] = g[p], g[col]
		for r := col + 1; r < 3; r++ {
			f := a[r][col] / a[col][col]
			for k := col; k < 3; k++ {
				a[r][k] -= f * a[col][k]
			}
			g[r] -= f * g[col]
		}
	}
	for r := 2; r >= 0; r-- {
		for k := r + 1; k < 3; k++ {
			g[r] -= a[r][k] * g[k]
		}
		g[r] /= a[r][r]
	}
	var rc radauCoefficients
	rc.gamma = real(lam[0])
	rc.lambda = lam[1]
	for i := 0; i < 3; i++ {
		rc.wReal[i] = real(v[i][0] * g[0])
		rc.wCplx[i] = v[i][1] * g[1]
	}
	rc.dd = [3]float64{-(13 + 7*s6) / 3, (-13 + 7*s6) / 3, -1.0 / 3}
	return rc
})

// radauPositions lays the chain out in block order: order[p] is the state
// at position p, out[p] its moves (targets in positions); q is the
// largest exit rate and blocks the number of strongly connected blocks.
func radauPositions(rows [][]flow) (order []int, out [][]flow, q float64, blocks int) {
	n := len(rows)
	order, pos, blockOf := blockOrder(rows)
	if n > 0 {
		blocks = blockOf[n-1] + 1
	}
	out = make([][]flow, n)
	for p, st := range order {
		exit := 0.0
		for _, m := range rows[st] {
			out[p] = append(out[p], flow{pos[m.to], m.rate})
			exit += m.rate
		}
		q = math.Max(q, exit)
	}
	return order, out, q, blocks
}

// radauStep is one step's work: the coefficients, the tolerances of the
// error estimate, the shifted systems factored for the step size, and the
// vectors the step writes (n each).
type radauStep struct {
	rc         radauCoefficients
	atol, rtol float64
	luR        *shiftedLU[float64]
	luC        *shiftedLU[complex128]
	v1, e1     []float64
	v2         []complex128
	z          [3][]float64
	y1         []float64
	errv, tmp  []float64
}

func newRadauStep(n int, rc radauCoefficients, atol, rtol float64) *radauStep {
	return &radauStep{rc: rc, atol: atol, rtol: rtol,
		v1: make([]float64, n), e1: make([]float64, n), v2: make([]complex128, n),
		z:  [3][]float64{make([]float64, n), make([]float64, n), make([]float64, n)},
		y1: make([]float64, n), errv: make([]float64, n), tmp: make([]float64, n)}
}

// stages computes the stages of a step hh from y (the shifted systems
// factored for hh): v_k = (sigma_k I - A)^{-1} y0 (v1 real, v2 the
// complex pair's), Z_i = sum_k w_ik (sigma_k v_k - y0) into z[i], and
// y1 = y0 + Z_3 = sum_k w_3k sigma_k v_k (sum_k w_ik = 1).
func (s *radauStep) stages(hh float64, y []float64) {
	rc, v1, v2, z := s.rc, s.v1, s.v2, s.z
	copy(v1, y)
	s.luR.solve(v1)
	for i, v := range y {
		v2[i] = complex(v, 0)
	}
	s.luC.solve(v2)
	for st := 0; st < 3; st++ {
		ar := rc.wReal[st] * rc.gamma / hh
		ac := rc.wCplx[st] * rc.lambda / complex(hh, 0)
		zs := z[st]
		for i := range zs {
			zs[i] = ar*v1[i] + 2*(real(ac)*real(v2[i])-imag(ac)*imag(v2[i]))
		}
	}
	copy(s.y1, z[2])
	for st := 0; st < 3; st++ {
		for i, v := range y {
			z[st][i] -= v
		}
	}
}

// errorNorm is the scaled norm of the step's error estimate, (sigma_1 I -
// A)^{-1} (A y0 + sum_i e_i Z_i/h) = sigma_1 v_1 - y0 + (sigma_1 I -
// A)^{-1} tmp; refine (the first step, or one after a rejection) takes an
// estimate of 1 or more once more through A.
func (s *radauStep) errorNorm(hh float64, y []float64, refine bool) float64 {
	rc, v1, z, tmp, errv := s.rc, s.v1, s.z, s.tmp, s.errv
	d1, d2, d3 := rc.dd[0]/hh, rc.dd[1]/hh, rc.dd[2]/hh
	sigma1 := rc.gamma / hh
	for i := range tmp {
		tmp[i] = d1*z[0][i] + d2*z[1][i] + d3*z[2][i]
	}
	s.luR.solve(tmp)
	for i := range errv {
		errv[i] = sigma1*v1[i] - y[i] + tmp[i]
	}
	norm := func() float64 {
		e := 0.0
		for i, v := range errv {
			sc := s.atol + s.rtol*math.Max(math.Abs(y[i]), math.Abs(s.y1[i]))
			e = math.Max(e, math.Abs(v)/sc)
		}
		return math.Max(e, 1e-10)
	}
	errNorm := norm()
	if errNorm >= 1 && refine {
		// Once more through A (y0 + err):
		// sigma_1 (v_1 + M^{-1} err) - (y0 + err) + M^{-1} tmp.
		copy(s.e1, errv)
		s.luR.solve(s.e1)
		for i := range errv {
			errv[i] = sigma1*(v1[i]+s.e1[i]) - (y[i] + errv[i]) + tmp[i]
		}
		errNorm = norm()
	}
	return errNorm
}

// radau integrates y' = Q^T y from alpha to each time of ts (any order,
// nonnegative), Q given by rows (moves to states < len(rows)).
//
// It follows Hairer and Wanner's RADAU5 (Newton-free linear stages, the
// embedded error estimate, the step controller, steps that end on the
// times asked); the stages and the error estimate are radauStep's, the
// step controller stays here, in the textbook's order, so that a reader
// can check it line by line against the method; it is an oracle, and
// obvious beats short.
func radau(rows [][]flow, alpha, ts []float64, opt RadauOptions) ([][]float64, RadauStats, error) {
	n := len(rows)
	var stats RadauStats
	for _, t := range ts {
		if !(t >= 0) || math.IsInf(t, 1) {
			return nil, stats, fmt.Errorf("time %g: want a finite t >= 0", t)
		}
	}
	order, out, q, blocks := radauPositions(rows)
	stats.Blocks = blocks
	rc := radauCoef()
	// RADAU5's tolerances for the order-3 estimate.
	rtol := 0.1 * math.Pow(opt.rtol(), 2.0/3)
	atol := rtol * opt.atol() / opt.rtol()
	maxSteps := opt.MaxSteps
	if maxSteps <= 0 {
		maxSteps = 1000000
	}

	y := make([]float64, n)
	for p, st := range order {
		y[p] = alpha[st]
	}
	step := newRadauStep(n, rc, atol, rtol)
	hFactored := math.NaN()
	factor := func(h float64) {
		if h == hFactored {
			return
		}
		step.luR = factorShifted(step.luR, out, rc.gamma/h, func(x float64) float64 { return x })
		step.luC = factorShifted(step.luC, out, rc.lambda/complex(h, 0), func(x float64) complex128 { return complex(x, 0) })
		hFactored = h
		stats.Factorizations++
		stats.FillL, stats.FillU = step.luR.entries()
	}

	const (
		safe  = 0.9
		facl  = 5.0   // the step shrinks by at most 5
		facr  = 0.125 // and grows by at most 8
		quot1 = 1.0
		quot2 = 1.2
	)
	sorted := make([]int, len(ts))
	for i := range sorted {
		sorted[i] = i
	}
	sort.Slice(sorted, func(a, b int) bool { return ts[sorted[a]] < ts[sorted[b]] })
	res := make([][]float64, len(ts))
	x := 0.0
	h := 1e-4 / math.Max(q, 1e-300)
	first, reject := true, false
	hacc, erracc := 0.0, 0.0
	accepted := 0
	for _, k := range sorted {
		tEnd := ts[k]
		for x < tEnd && q > 0 {
			if stats.Steps >= maxSteps {
				return nil, stats, fmt.Errorf("%w: %d steps, t = %g of %g", ErrRadauSteps, stats.Steps, x, tEnd)
			}
			hh, last := h, false
			if x+1.0001*hh >= tEnd {
				hh, last = tEnd-x, true
			}
			if hh <= 1e-15*x || hh <= 0 {
				return nil, stats, fmt.Errorf("%w: step size %g at t = %g", ErrRadauSteps, hh, x)
			}
			factor(hh)
			stats.Steps++
			step.stages(hh, y)
			errNorm := step.errorNorm(hh, y, first || reject)
			quot := math.Max(facr, math.Min(facl, math.Pow(errNorm, 0.25)/safe))
			hnew := hh / quot
			if errNorm < 1 {
				first = false
				accepted++
				if accepted > 1 {
					facgus := (hacc / hh) * math.Pow(errNorm*errNorm/erracc, 0.25) / safe
					facgus = math.Max(facr, math.Min(facl, facgus))
					quot = math.Max(quot, facgus)
					hnew = hh / quot
				}
				hacc, erracc = hh, math.Max(1e-2, errNorm)
				copy(y, step.y1)
				if last {
					x = tEnd
				} else {
					x += hh
				}
				if reject {
					hnew = math.Min(hnew, hh)
				}
				reject = false
				if last {
					// Keep the step proposed before the clipping,
					// unless even the clipped one was too long.
					if hnew < hh {
						h = hnew
					}
				} else if qt := hnew / hh; qt < quot1 || qt > quot2 {
					h = hnew
				}
			} else {
				stats.Rejected++
				reject = true
				if first {
					h = hh * 0.1
				} else {
					h = hnew
				}
			}
		}
		res[k] = make([]float64, n)
		for p, st := range order {
			res[k][st] = y[p]
		}
	}
	return res, stats, nil
}

// StiffDDLimit is the largest chain (the passage's end included) whose
// CDFs CDFsStiff computes by the double-double transient: on 300 states
// with one strongly connected component a value at q t = 4e8 takes about
// 0.8 s (acyclic chains of 1,024 states about 2 s; the cost is cubic).
const StiffDDLimit = 300

// CDFsStiff is CDFs for stiff chains, accurate whatever q t: P(passage
// time <= t) for every t of ts with an estimate of each value's error. Up
// to StiffDDLimit states it is CDFsDD (errors: its rigorous bound, about
// one rounding); beyond, CDFsRadau at the default tolerances (errors: the
// difference from a run at tolerances 100 times larger, an estimate, in
// the tests 10 to 50 times the actual error, which was below 5e-11).
func (c *Chain) CDFsStiff(p Passage, ts []float64) (vals, errs []float64, err error) {
	if c.N()+1 <= StiffDDLimit {
		res, err := c.CDFsDD(p, ts)
		if err != nil {
			return nil, nil, err
		}
		vals, errs = make([]float64, len(ts)), make([]float64, len(ts))
		for i, r := range res {
			vals[i], errs[i] = r.CDF, r.CDFErr
		}
		return vals, errs, nil
	}
	vals, errs, _, err = c.CDFsRadau(p, ts, RadauOptions{})
	return vals, errs, err
}
