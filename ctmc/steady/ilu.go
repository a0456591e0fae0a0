package steady

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
)

// iluSolver solves the class's balance equations with BiCGSTAB, right-
// preconditioned by an incomplete LU factorisation without fill (ILU(0)).
// The singular system pi Q = 0 is made regular by fixing the unknown of one
// state f: the matrix A has row j = -(column j of Q) for j != f with
// column f left out (its entries go to the right-hand side), and row f =
// e_f. Then A is a nonsingular M-matrix (every proper principal submatrix
// of an irreducible generator is), so ILU(0) exists with positive pivots.
// A is stored in CSR with sorted columns.
type iluSolver struct {
	n     int
	fixed int
	ptr   []int64
	col   []int32
	val   []float64 // A
	// ILU(0) factors of B = A^T on B's pattern, CSR: unit L below the
	// diagonal, U on and above.
	bptr     []int64
	bcol     []int32
	lu       []float64
	luScaled []float64 // lu scaled for the current correction solve
	bdiag    []int64
	g        *generator
	maxIter  int
	iters    int
	parallel bool
	// colScale and rowScale, when set, make bicgstab solve
	// diag(rowScale) A diag(colScale) y = diag(rowScale) b instead.
	colScale, rowScale []float64
	scaled             bool
	start              []float64 // initial iterate, x_f = 1
	// work vectors, reused by every solve
	r, rhat, p, v, s, t, phat, shat, b, tmp, tmp2 []float64
}

// iluParallelStates is the size above which matrix-vector products are
// split between two goroutines.
const iluParallelStates = 100000

func newILUSolver(ctx context.Context, g *generator, maxIter int) (*iluSolver, error) {
	n := g.n
	s := &iluSolver{n: n, g: g, maxIter: maxIter, parallel: n >= iluParallelStates}
	// The state whose unknown is fixed to 1 is the most probable one by a
	// few Gauss-Seidel sweeps (which keep x positive and set each rare
	// state from its inflow, getting its order of magnitude about right):
	// fixing a rare state instead would make the other unknowns huge, and
	// the rounding of A x, relative to them, would swamp the residual.
	s.start = make([]float64, n)
	for i := range s.start {
		s.start[i] = 1 / float64(n)
	}
	s.sweeps(s.start, 4)
	for i, v := range s.start {
		if v > s.start[s.fixed] {
			s.fixed = i
		}
	}
	for i := range s.start {
		s.start[i] /= s.start[s.fixed]
	}
	f := int32(s.fixed)
	s.ptr = make([]int64, n+1)
	for j := 0; j < n; j++ {
		cnt := int64(1)
		if j != s.fixed {
			for k := g.in.ptr[j]; k < g.in.ptr[j+1]; k++ {
				if g.in.src[k] != f && !g.parallel(j, k) {
					cnt++
				}
			}
		}
		s.ptr[j+1] = s.ptr[j] + cnt
	}
	nnz := s.ptr[n]
	s.col = make([]int32, nnz)
	s.val = make([]float64, nnz)
	for j := 0; j < n; j++ {
		o := s.ptr[j]
		if j == s.fixed {
			s.col[o], s.val[o] = int32(j), 1
			continue
		}
		placed := false
		for k := g.in.ptr[j]; k < g.in.ptr[j+1]; k++ {
			i := g.in.src[k]
			if i == f {
				continue
			}
			if g.parallel(j, k) {
				s.val[o-1] -= g.in.rate[k]
				continue
			}
			if !placed && int(i) > j {
				s.col[o], s.val[o] = int32(j), g.exit[j]
				o++
				placed = true
			}
			s.col[o], s.val[o] = i, -g.in.rate[k]
			o++
		}
		if !placed {
			s.col[o], s.val[o] = int32(j), g.exit[j]
		}
	}
	if err := s.factor(ctx); err != nil {
		return nil, err
	}
	for _, w := range []*[]float64{&s.r, &s.rhat, &s.p, &s.v, &s.s, &s.t, &s.phat, &s.shat, &s.b, &s.tmp, &s.tmp2} {
		*w = make([]float64, n)
	}
	return s, nil
}

// factor computes the ILU(0) factors of B = A^T (row i of B: the rates
// out of state i, negated, q_i on the diagonal, column f left out; row f
// = e_f), so that A is preconditioned by M = (L_B U_B)^T. B's rows sum to
// R_i = q_if >= 0, which makes a subtraction-free factorisation possible,
// in the manner of GTH: every off-diagonal entry of L and U is a sum of
// terms of one sign, and the pivot, which plain ILU(0) forms as
// b_ii - sum_k l_ik u_ki and which on stiff chains cancels down to
// rounding noise, is instead the row's remaining outflow
//
//	u_ii = rho_i + sum_{j>i} |u_ij|,  rho_i = R_i + sum_{k<i} |l_ik| rho_k + dropped_i,
//
// rho_k being row k's own leak and dropped_i the fill ILU(0) leaves out of
// row i. In exact arithmetic this is the same factorisation.
func (s *iluSolver) factor(ctx context.Context) error {
	n, g := s.n, s.g
	f := int32(s.fixed)
	// B in CSR, columns ascending: transpose the incoming lists.
	bptr := make([]int64, n+1)
	for j := 0; j < n; j++ {
		if j == s.fixed {
			continue
		}
		for k := g.in.ptr[j]; k < g.in.ptr[j+1]; k++ {
			if i := g.in.src[k]; i != f && !g.parallel(j, k) {
				bptr[i+1]++
			}
		}
	}
	for i := 0; i < n; i++ {
		bptr[i+1] += bptr[i] + 1 // + the diagonal
	}
	bcol := make([]int32, bptr[n])
	lu := make([]float64, bptr[n])
	diag := make([]int64, n)
	leak := make([]float64, n)
	fill := append([]int64(nil), bptr[:n]...)
	placed := make([]bool, n)
	placeDiag := func(i int) {
		if !placed[i] {
			bcol[fill[i]], diag[i], placed[i] = int32(i), fill[i], true
			fill[i]++
		}
	}
	leak[s.fixed] = 1
	for j := 0; j < n; j++ {
		// Row i's entries arrive in ascending column j; its diagonal goes
		// in before the first column above i.
		for k := g.in.ptr[j]; k < g.in.ptr[j+1]; k++ {
			i := g.in.src[k]
			if i == f {
				continue
			}
			if j == s.fixed {
				leak[i] += g.in.rate[k]
				continue
			}
			if g.parallel(j, k) {
				lu[fill[i]-1] -= g.in.rate[k]
				continue
			}
			if int(i) < j {
				placeDiag(int(i))
			}
			bcol[fill[i]], lu[fill[i]] = int32(j), -g.in.rate[k]
			fill[i]++
		}
	}
	for i := 0; i < n; i++ {
		placeDiag(i)
	}
	pos := make([]int64, n)
	for i := range pos {
		pos[i] = -1
	}
	for i := 0; i < n; i++ {
		if i&4095 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		for k := bptr[i]; k < bptr[i+1]; k++ {
			pos[bcol[k]] = k
		}
		rho := leak[i]
		for k := bptr[i]; k < diag[i]; k++ {
			c := bcol[k]
			l := lu[k] / lu[diag[c]] // <= 0
			lu[k] = l
			rho -= l * leak[c]
			for m := diag[c] + 1; m < bptr[c+1]; m++ {
				j := bcol[m]
				upd := l * lu[m] // >= 0
				if j == int32(i) {
					continue // the pivot is formed below
				}
				if q := pos[j]; q >= 0 {
					lu[q] -= upd
				} else {
					rho += upd
				}
			}
		}
		leak[i] = rho
		piv := rho
		for k := diag[i] + 1; k < bptr[i+1]; k++ {
			piv -= lu[k]
		}
		if i == s.fixed {
			piv = 1
		}
		lu[diag[i]] = piv
		for k := bptr[i]; k < bptr[i+1]; k++ {
			pos[bcol[k]] = -1
		}
		if !(piv > 0) || math.IsInf(piv, 0) {
			return fmt.Errorf("iterative steady-state solve: ILU(0) pivot %g at state %d (rates under- or overflow float64)", piv, g.class[i])
		}
	}
	s.bptr, s.bcol, s.lu, s.bdiag = bptr, bcol, lu, diag
	return nil
}

// precondition sets z = M^-1 y, with the factors of the scaled system
// when a correction is being solved.
func (s *iluSolver) precondition(y, z []float64) {
	if s.scaled {
		// M's factors are those of an M-matrix, so M^-1 >= 0 and the
		// triangular solves of a nonnegative vector add only: solving
		// for the positive and the negative part of y separately keeps
		// every component accurate relative to itself, with one
		// subtraction at the end.
		pos, neg := s.tmp, s.tmp2
		for i, v := range y {
			pos[i], neg[i] = math.Max(v, 0), math.Max(-v, 0)
		}
		s.luSolve(s.luScaled, pos, pos)
		s.luSolve(s.luScaled, neg, neg)
		for i := range z {
			z[i] = pos[i] - neg[i]
		}
		return
	}
	s.luSolve(s.lu, y, z)
}

// scaleFactors sets luScaled to the ILU(0) factors of the scaled system.
// With B^ = C B R (C = diag(colScale) on B's rows, R = diag(rowScale) on
// its columns), B^ = (C L C^-1)(C U R), and ILU(0) is the same identity
// on the pattern. Scaling the factors rather than the vectors keeps the
// triangular solves in the scaled system's units, where every component
// is of order one; scaling vectors around unscaled solves would let the
// probable states' rounding swamp the rare ones.
func (s *iluSolver) scaleFactors() {
	if s.luScaled == nil {
		s.luScaled = make([]float64, len(s.lu))
	}
	cs, rs := s.colScale, s.rowScale
	for i := 0; i < s.n; i++ {
		ci := cs[i]
		for k := s.bptr[i]; k < s.bptr[i+1]; k++ {
			j := s.bcol[k]
			if int(j) < i {
				s.luScaled[k] = s.lu[k] * ci / cs[j]
			} else {
				s.luScaled[k] = s.lu[k] * ci * rs[j]
			}
		}
	}
}

// luSolve sets z = M^-1 y with factors lu: M = (L_B U_B)^T = U_B^T L_B^T,
// so z = (L_B^T)^-1 (U_B^T)^-1 y, both by scattering along B's rows, in
// place in z (y may be z).
func (s *iluSolver) luSolve(lu, y, z []float64) {
	col, ptr, diag := s.bcol, s.bptr, s.bdiag
	if len(z) > 0 && &z[0] != &y[0] {
		copy(z, y)
	}
	for i := 0; i < s.n; i++ {
		zi := z[i] / lu[diag[i]]
		z[i] = zi
		if zi == 0 {
			continue
		}
		for k := diag[i] + 1; k < ptr[i+1]; k++ {
			z[col[k]] -= lu[k] * zi
		}
	}
	for i := s.n - 1; i >= 0; i-- {
		zi := z[i]
		if zi == 0 {
			continue
		}
		for k := ptr[i]; k < diag[i]; k++ {
			z[col[k]] -= lu[k] * zi
		}
	}
}

// mul sets y = A x (or the scaled matrix times x), on two goroutines for
// large chains.
func (s *iluSolver) mul(x, y []float64) {
	scaled := s.scaled
	rows := func(lo, hi int) {
		for i := lo; i < hi; i++ {
			sum := 0.0
			if scaled {
				for k := s.ptr[i]; k < s.ptr[i+1]; k++ {
					c := s.col[k]
					sum += s.val[k] * (x[c] * s.colScale[c])
				}
				y[i] = sum * s.rowScale[i]
				continue
			}
			for k := s.ptr[i]; k < s.ptr[i+1]; k++ {
				sum += s.val[k] * x[s.col[k]]
			}
			y[i] = sum
		}
	}
	if !s.parallel {
		rows(0, s.n)
		return
	}
	var wg sync.WaitGroup
	mid := s.n / 2
	wg.Add(1)
	go func() {
		defer wg.Done()
		rows(mid, s.n)
	}()
	rows(0, mid)
	wg.Wait()
}

func (s *iluSolver) iterations() int { return s.iters }

// initial solves A x = b (b_j = q_fj, b_f = 1) to a relative residual of
// 1e-8; refinement takes it from there.
func (s *iluSolver) initial(ctx context.Context) ([]float64, error) {
	b := s.b
	for i := range b {
		b[i] = 0
	}
	f := int32(s.fixed)
	for j := 0; j < s.n; j++ {
		if j == s.fixed {
			b[j] = 1
			continue
		}
		for k := s.g.in.ptr[j]; k < s.g.in.ptr[j+1]; k++ {
			if s.g.in.src[k] == f {
				b[j] = s.g.in.rate[k]
			}
		}
	}
	x := s.start
	if err := s.bicgstab(ctx, b, x, 1e-8); err != nil && !errors.Is(err, errInaccurate) {
		return nil, err
	}
	// The Krylov solve is accurate relative to the largest entries only
	// and can leave rare states anywhere, even negative: reset them from
	// their inflows.
	for i := range x {
		x[i] = math.Max(x[i], 0)
	}
	s.sweeps(x, 4)
	return x, nil
}

// sweeps runs forward and backward Gauss-Seidel sweeps on x Q = 0, leaving
// a state whose inflow is zero as it is.
func (s *iluSolver) sweeps(x []float64, n int) {
	g := s.g
	update := func(j int) {
		sum := 0.0
		for k := g.in.ptr[j]; k < g.in.ptr[j+1]; k++ {
			sum += x[g.in.src[k]] * g.in.rate[k]
		}
		if sum > 0 {
			x[j] = sum / g.exit[j]
		}
	}
	for sweep := 0; sweep < n; sweep++ {
		if sweep%2 == 0 {
			for j := 0; j < s.n; j++ {
				update(j)
			}
		} else {
			for j := s.n - 1; j >= 0; j-- {
				update(j)
			}
		}
		normalise(x)
	}
}

func normalise(x []float64) {
	s := 0.0
	for _, v := range x {
		s += v
	}
	for i := range x {
		x[i] /= s
	}
}

// correct solves A d = r (r_f replaced by 0): d Q = -r on every state but
// f, and d_f = 0. The system is scaled first by the current solution p:
// unknowns e_i = d_i / p_i and balance equations divided by the outflow
// p_j q_j, so that a relative residual of 1e-4 in the scaled system means
// every state's balance and every state's correction to 1e-4 of its own
// size, rare states included; unscaled, a normwise stopping test would
// leave the states of probability 1e-30 as they were.
func (s *iluSolver) correct(ctx context.Context, p, r, d []float64) error {
	if s.colScale == nil {
		s.colScale = make([]float64, s.n)
		s.rowScale = make([]float64, s.n)
	}
	for j := range p {
		pj := math.Max(math.Abs(p[j]), 1e-300)
		s.colScale[j] = pj
		if j == s.fixed {
			s.rowScale[j] = 1 / pj
		} else {
			s.rowScale[j] = 1 / (pj * s.g.exit[j])
		}
	}
	s.scaled = true
	s.scaleFactors()
	b := s.b
	for j := range b {
		b[j] = r[j] * s.rowScale[j]
	}
	b[s.fixed] = 0
	for i := range d {
		d[i] = 0
	}
	err := s.bicgstab(ctx, b, d, correctionTolerance)
	for i := range d {
		d[i] *= s.colScale[i]
	}
	s.scaled = false
	return err
}

// errInaccurate says a solve stopped short of its tolerance (breakdown,
// or a true residual that the recursion does not reach); its x is still
// the last iterate, usable as a refinement step but not as a check.
var errInaccurate = errors.New("BiCGSTAB stopped short of its tolerance")

// bicgstab improves x towards A x = b until the true residual satisfies
// ||b - A x||_2 <= tol ||b||_2. Breakdowns and a recursive residual that
// has drifted from the true one restart it from x, a few times; then it
// returns errInaccurate with x as far as it got.
func (s *iluSolver) bicgstab(ctx context.Context, b, x []float64, tol float64) error {
	bn := norm2(b)
	if bn == 0 {
		for i := range x {
			x[i] = 0
		}
		return nil
	}
	r, rhat, p, v, sv, t, phat, shat := s.r, s.rhat, s.p, s.v, s.s, s.t, s.phat, s.shat
	const maxRestarts = 5
	// One solve gets at most 50 n + 200 iterations: BiCGSTAB that has not
	// converged by then is stagnating, and refine decides what to do.
	solveCap := s.iters + 50*s.n + 200
	for restart := 0; ; restart++ {
		s.mul(x, r)
		for i := range r {
			r[i] = b[i] - r[i]
			rhat[i] = r[i]
			p[i], v[i] = 0, 0
		}
		rn := norm2(r)
		if rn <= tol*bn {
			return nil
		}
		if restart == maxRestarts || math.IsNaN(rn) {
			return fmt.Errorf("%w: relative residual %.3g, wanted %.3g", errInaccurate, rn/bn, tol)
		}
		rho, alpha, omega := 1.0, 1.0, 1.0
	iterate:
		for {
			if s.iters >= s.maxIter {
				return fmt.Errorf("iterative steady-state solve did not converge in %d BiCGSTAB iterations (relative residual %.3g, wanted %.3g)", s.maxIter, norm2(r)/bn, tol)
			}
			if s.iters >= solveCap {
				return fmt.Errorf("%w: relative residual %.3g after %d iterations, wanted %.3g", errInaccurate, norm2(r)/bn, 50*s.n+200, tol)
			}
			s.iters++
			if s.iters&7 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			rhoNew := dot(rhat, r)
			if rhoNew == 0 || omega == 0 || math.IsNaN(rhoNew) {
				break iterate
			}
			beta := rhoNew / rho * alpha / omega
			rho = rhoNew
			for i := range p {
				p[i] = r[i] + beta*(p[i]-omega*v[i])
			}
			s.precondition(p, phat)
			s.mul(phat, v)
			den := dot(rhat, v)
			if den == 0 || math.IsNaN(den) {
				break iterate
			}
			alpha = rho / den
			for i := range sv {
				sv[i] = r[i] - alpha*v[i]
			}
			if norm2(sv) <= tol*bn {
				for i := range x {
					x[i] += alpha * phat[i]
				}
				break iterate // the restart recomputes the true residual
			}
			s.precondition(sv, shat)
			s.mul(shat, t)
			tt := dot(t, t)
			if tt == 0 {
				omega = 0
			} else {
				omega = dot(t, sv) / tt
			}
			for i := range x {
				x[i] += alpha*phat[i] + omega*shat[i]
				r[i] = sv[i] - omega*t[i]
			}
			if norm2(r) <= tol*bn {
				break iterate
			}
		}
	}
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i, x := range a {
		s += x * b[i]
	}
	return s
}

func norm2(a []float64) float64 { return math.Sqrt(dot(a, a)) }

// correctionTolerance is the scaled relative residual to which correction
// solves are taken. A loose one (1e-4) would do for refinement alone, but
// the correction is also the error estimate, and on nearly decomposable
// chains a residual understates the error by the condition number: at
// 1e-10 the estimate is good to a factor 2 up to condition numbers near
// 1e9.
const correctionTolerance = 1e-10
