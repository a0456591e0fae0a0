package steady

import (
	"context"
	"errors"
	"fmt"
	"math"

	"pepa/ctmc/elim"
)

// gth is the dense Grassmann-Taksar-Heyman reduction of a class's
// generator (package ctmc/elim: a closed block, its pivots formed by
// compensated sums): eliminating state k (from n-1 down to 1) censors the
// chain on states 0..k-1, and the reduction then gives the steady state up
// to scale and the correction solves of refine.
//
// perm orders the states for elimination (position -> local state; nil
// for the natural order): the state at position 0 is eliminated last.
// The reduction is accurate in any order, but the correction solves of
// refine are not: residuals accumulate towards the states eliminated last,
// and if those are rare the noise of the probable states' residuals
// swamps their corrections. Solve retries with the most probable states
// last when the natural order gives no usable estimate.
type gth struct {
	block elim.Block
	perm  []int32
	work  []float64
}

// maxDirectStates bounds the dense matrix at 2 GB.
const maxDirectStates = 16000

func newGTH(ctx context.Context, g *generator, perm []int32) (*gth, error) {
	n := g.n
	if n > 0 && n > math.MaxInt/8/n {
		return nil, fmt.Errorf("chain of %d states is too large for the direct method", n)
	}
	if n > maxDirectStates {
		return nil, fmt.Errorf("a closed class of %d states is too large for the direct method (dense, %.1f GB; at most %d states): use the iterative method", n, 8*float64(n)*float64(n)/1e9, maxDirectStates)
	}
	a := make([]float64, n*n)
	s := &gth{block: elim.Block{N: n, Rates: a, Closed: true, Compensated: true}, perm: perm, work: make([]float64, n)}
	pos := make([]int32, n)
	for i := range pos {
		pos[i] = int32(i)
	}
	for k, i := range perm {
		pos[i] = int32(k)
	}
	for j := 0; j < n; j++ {
		pj := int(pos[j])
		for k := g.in.ptr[j]; k < g.in.ptr[j+1]; k++ {
			a[int(pos[g.in.src[k]])*n+pj] += g.in.rate[k]
		}
	}
	if err := s.block.Reduce(ctx); err != nil {
		var pe *elim.PivotError
		if !errors.As(err, &pe) {
			return nil, err
		}
		st := pe.State
		if perm != nil {
			st = int(perm[st])
		}
		return nil, fmt.Errorf("direct steady-state solve: state %d has no rate left after reduction (%g): rates under- or overflow float64", g.class[st], pe.Rate)
	}
	return s, nil
}

func (s *gth) iterations() int { return 0 }

// initial back-substitutes: pi_0 = 1, pi_j = sum_{i<j} pi_i q_ij / s_j.
func (s *gth) initial(ctx context.Context) ([]float64, error) {
	p := make([]float64, s.block.N)
	p[0] = 1
	s.block.SolveLeft(nil, p)
	if s.perm != nil {
		out := make([]float64, len(p))
		for k, i := range s.perm {
			out[i] = p[k]
		}
		p = out
	}
	return p, nil
}

// correct solves d Q = -r using the reduction, with d_0 = 0: r is reduced
// as the matrix was, then d_k = (r_k + sum_{i<k} d_i q_ik) / s_k. The
// result is one solution; refine removes the multiple of pi it may
// contain.
func (s *gth) correct(ctx context.Context, p, r, d []float64) error {
	b := make([]float64, s.block.N)
	for j := range b {
		if s.perm != nil {
			b[j] = r[s.perm[j]]
		} else {
			b[j] = r[j]
		}
	}
	d[0] = 0
	s.block.SolveLeft(b, d)
	if s.perm != nil {
		copy(s.work, d)
		for k, i := range s.perm {
			d[i] = s.work[k]
		}
	}
	return nil
}
