package ctmc

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
	n        int
	fixed    int
	ptr      []int64
	col      []int32
	val      []float64 // A
	lu       []float64 // ILU(0) factors on A's pattern: unit L below the diagonal, U on and above
	diag     []int64   // index of the diagonal entry of each row
	g        *generator
	maxIter  int
	iters    int
	parallel bool
	// work vectors, reused by every solve
	r, rhat, p, v, s, t, phat, shat, b []float64
}

// iluParallelStates is the size above which matrix-vector products are
// split between two goroutines.
const iluParallelStates = 100000

func newILUSolver(ctx context.Context, g *generator, maxIter int) (*iluSolver, error) {
	n := g.n
	s := &iluSolver{n: n, g: g, maxIter: maxIter, parallel: n >= iluParallelStates}
	// Fix the state with the largest exit rate... any state works; the
	// first keeps the numbering simple.
	s.fixed = 0
	f := int32(s.fixed)
	s.ptr = make([]int64, n+1)
	for j := 0; j < n; j++ {
		cnt := int64(1)
		if j != s.fixed {
			for k := g.in.ptr[j]; k < g.in.ptr[j+1]; k++ {
				if g.in.src[k] != f {
					cnt++
				}
			}
		}
		s.ptr[j+1] = s.ptr[j] + cnt
	}
	nnz := s.ptr[n]
	s.col = make([]int32, nnz)
	s.val = make([]float64, nnz)
	s.diag = make([]int64, n)
	for j := 0; j < n; j++ {
		o := s.ptr[j]
		if j == s.fixed {
			s.col[o], s.val[o], s.diag[j] = int32(j), 1, o
			continue
		}
		placed := false
		for k := g.in.ptr[j]; k < g.in.ptr[j+1]; k++ {
			i := g.in.src[k]
			if i == f {
				continue
			}
			if !placed && int(i) > j {
				s.col[o], s.val[o], s.diag[j] = int32(j), g.exit[j], o
				o++
				placed = true
			}
			s.col[o], s.val[o] = i, -g.in.rate[k]
			o++
		}
		if !placed {
			s.col[o], s.val[o], s.diag[j] = int32(j), g.exit[j], o
		}
	}
	if err := s.factor(ctx); err != nil {
		return nil, err
	}
	for _, w := range []*[]float64{&s.r, &s.rhat, &s.p, &s.v, &s.s, &s.t, &s.phat, &s.shat, &s.b} {
		*w = make([]float64, n)
	}
	return s, nil
}

// factor computes ILU(0) (the IKJ variant) into s.lu.
func (s *iluSolver) factor(ctx context.Context) error {
	n := s.n
	lu := append([]float64(nil), s.val...)
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
		for k := s.ptr[i]; k < s.ptr[i+1]; k++ {
			pos[s.col[k]] = k
		}
		for k := s.ptr[i]; k < s.diag[i]; k++ {
			c := s.col[k]
			l := lu[k] / lu[s.diag[c]]
			lu[k] = l
			for m := s.diag[c] + 1; m < s.ptr[c+1]; m++ {
				if q := pos[s.col[m]]; q >= 0 {
					lu[q] -= l * lu[m]
				}
			}
		}
		for k := s.ptr[i]; k < s.ptr[i+1]; k++ {
			pos[s.col[k]] = -1
		}
		if d := lu[s.diag[i]]; !(d > 0) || math.IsInf(d, 0) {
			return fmt.Errorf("iterative steady-state solve: ILU(0) pivot %g at state %d (rates under- or overflow float64)", d, s.g.class[i])
		}
	}
	s.lu = lu
	return nil
}

// precondition sets z = (LU)^-1 y.
func (s *iluSolver) precondition(y, z []float64) {
	lu, col := s.lu, s.col
	for i := 0; i < s.n; i++ {
		sum := y[i]
		for k := s.ptr[i]; k < s.diag[i]; k++ {
			sum -= lu[k] * z[col[k]]
		}
		z[i] = sum
	}
	for i := s.n - 1; i >= 0; i-- {
		sum := z[i]
		for k := s.diag[i] + 1; k < s.ptr[i+1]; k++ {
			sum -= lu[k] * z[col[k]]
		}
		z[i] = sum / lu[s.diag[i]]
	}
}

// mul sets y = A x, on two goroutines for large chains.
func (s *iluSolver) mul(x, y []float64) {
	rows := func(lo, hi int) {
		for i := lo; i < hi; i++ {
			sum := 0.0
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
	x := make([]float64, s.n)
	for i := range x {
		x[i] = 1
	}
	if err := s.bicgstab(ctx, b, x, 1e-8); err != nil {
		return nil, err
	}
	return x, nil
}

// correct solves A d = r (r_f replaced by 0) to a relative residual of
// 1e-4: d Q = -r on every state but f, and d_f = 0.
func (s *iluSolver) correct(ctx context.Context, r, d []float64) error {
	b := s.b
	copy(b, r)
	b[s.fixed] = 0
	for i := range d {
		d[i] = 0
	}
	return s.bicgstab(ctx, b, d, 1e-4)
}

var errBreakdown = errors.New("BiCGSTAB breakdown")

// bicgstab improves x towards A x = b until ||b - A x||_2 <= tol ||b||_2.
func (s *iluSolver) bicgstab(ctx context.Context, b, x []float64, tol float64) error {
	bn := norm2(b)
	if bn == 0 {
		for i := range x {
			x[i] = 0
		}
		return nil
	}
	r, rhat, p, v, sv, t, phat, shat := s.r, s.rhat, s.p, s.v, s.s, s.t, s.phat, s.shat
	restarts := 0
restart:
	s.mul(x, r)
	for i := range r {
		r[i] = b[i] - r[i]
		rhat[i] = r[i]
		p[i], v[i] = 0, 0
	}
	if norm2(r) <= tol*bn {
		return nil
	}
	rho, alpha, omega := 1.0, 1.0, 1.0
	for {
		if s.iters >= s.maxIter {
			return fmt.Errorf("iterative steady-state solve did not converge in %d BiCGSTAB iterations (relative residual %.3g, wanted %.3g)", s.maxIter, norm2(r)/bn, tol)
		}
		s.iters++
		if s.iters&7 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		rhoNew := dot(rhat, r)
		if rhoNew == 0 || omega == 0 || math.IsNaN(rhoNew) {
			if restarts++; restarts > 20 {
				return fmt.Errorf("iterative steady-state solve: %w (relative residual %.3g)", errBreakdown, norm2(r)/bn)
			}
			goto restart
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
			if restarts++; restarts > 20 {
				return fmt.Errorf("iterative steady-state solve: %w", errBreakdown)
			}
			goto restart
		}
		alpha = rho / den
		for i := range sv {
			sv[i] = r[i] - alpha*v[i]
		}
		if norm2(sv) <= tol*bn {
			for i := range x {
				x[i] += alpha * phat[i]
			}
			return nil
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
			return nil
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
