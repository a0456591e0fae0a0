package steady

import (
	"context"
	"fmt"
	"math"
	"sync"
)

// gth is the dense Grassmann-Taksar-Heyman reduction of a class's
// generator. a holds the rates q_ij (i != j) row-major; eliminating state
// k (from n-1 down to 1) censors the chain on states 0..k-1:
//
//	s_k = sum_{j<k} q_kj,  q_ij += q_ik q_kj / s_k  for i, j < k.
//
// s_k is a sum of the remaining off-diagonal rates rather than the
// diagonal minus something, so no step subtracts and every computed
// probability has a small relative error, however small it is (O'Cinneide
// 1993). After the reduction a[i*n+j] (i < j) and a[k*n+j] (j < k) hold the
// rates at the moment state j, respectively k, was eliminated, and
// a[k*n+k] holds s_k, which is all the back substitution and the
// correction solves need.
//
// perm orders the states for elimination (position -> local state; nil
// for the natural order): the state at position 0 is eliminated last.
// The reduction is accurate in any order, but the correction solves of
// refine are not: residuals accumulate towards the states eliminated last,
// and if those are rare the noise of the probable states' residuals
// swamps their corrections. Solve retries with the most probable states
// last when the natural order gives no usable estimate.
type gth struct {
	n    int
	a    []float64
	perm []int32
	work []float64
}

// maxDirectStates bounds the dense matrix at 2 GB.
const maxDirectStates = 16000

// gthParallelRows is the number of rows below which one elimination step is
// not split between goroutines (the split costs a few microseconds).
const gthParallelRows = 256

func newGTH(ctx context.Context, g *generator, perm []int32) (*gth, error) {
	n := g.n
	if n > 0 && n > math.MaxInt/8/n {
		return nil, fmt.Errorf("chain of %d states is too large for the direct method", n)
	}
	if n > maxDirectStates {
		return nil, fmt.Errorf("a closed class of %d states is too large for the direct method (dense, %.1f GB; at most %d states): use the iterative method", n, 8*float64(n)*float64(n)/1e9, maxDirectStates)
	}
	s := &gth{n: n, a: make([]float64, n*n), perm: perm, work: make([]float64, n)}
	a := s.a
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
	var wg sync.WaitGroup
	for k := n - 1; k >= 1; k-- {
		if k&63 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		rowK := a[k*n : k*n+k]
		sum, comp := 0.0, 0.0
		for _, v := range rowK {
			sum, comp = twoSumAcc(sum, comp, v)
		}
		sk := sum + comp
		if !(sk > 0) || math.IsInf(sk, 0) {
			st := k
			if perm != nil {
				st = int(perm[k])
			}
			return nil, fmt.Errorf("direct steady-state solve: state %d has no rate left after reduction (%g): rates under- or overflow float64", g.class[st], sk)
		}
		a[k*n+k] = sk
		eliminate := func(lo, hi int) {
			for i := lo; i < hi; i++ {
				f := a[i*n+k]
				if f == 0 {
					continue
				}
				f /= sk
				row := a[i*n : i*n+k]
				for j, v := range rowK {
					row[j] += f * v
				}
			}
		}
		if k < gthParallelRows {
			eliminate(0, k)
			continue
		}
		mid := k / 2
		wg.Add(1)
		go func() {
			defer wg.Done()
			eliminate(mid, k)
		}()
		eliminate(0, mid)
		wg.Wait()
	}
	return s, nil
}

func (s *gth) iterations() int { return 0 }

// initial back-substitutes: pi_0 = 1, pi_j = sum_{i<j} pi_i q_ij / s_j.
func (s *gth) initial(ctx context.Context) ([]float64, error) {
	n, a := s.n, s.a
	p := make([]float64, n)
	p[0] = 1
	// Column access in a row-major matrix: accumulate row by row instead,
	// adding pi_i q_ij to every later j once pi_i is final.
	acc := make([]float64, n)
	for i := 0; i < n; i++ {
		if i > 0 {
			p[i] = acc[i] / a[i*n+i]
		}
		pi := p[i]
		row := a[i*n : (i+1)*n]
		for j := i + 1; j < n; j++ {
			acc[j] += pi * row[j]
		}
	}
	if s.perm != nil {
		out := make([]float64, n)
		for k, i := range s.perm {
			out[i] = p[k]
		}
		p = out
	}
	return p, nil
}

// correct solves d Q = -r using the reduction: the right-hand side is
// reduced as the matrix was (b_j += b_k q_kj / s_k for j < k), then d_0 = 0
// and d_k = (sum_{i<k} d_i q_ik - b_k) / s_k. The result is one solution;
// refine removes the multiple of pi it may contain.
func (s *gth) correct(ctx context.Context, p, r, d []float64) error {
	n, a := s.n, s.a
	b := make([]float64, n)
	for j := range b {
		if s.perm != nil {
			b[j] = -r[s.perm[j]]
		} else {
			b[j] = -r[j]
		}
	}
	for k := n - 1; k >= 1; k-- {
		f := b[k] / a[k*n+k]
		if f == 0 {
			continue
		}
		row := a[k*n : k*n+k]
		for j, v := range row {
			b[j] += f * v
		}
	}
	acc := make([]float64, n)
	d[0] = 0
	for i := 0; i < n; i++ {
		if i > 0 {
			d[i] = (acc[i] - b[i]) / a[i*n+i]
		}
		di := d[i]
		if di == 0 {
			continue
		}
		row := a[i*n : (i+1)*n]
		for j := i + 1; j < n; j++ {
			acc[j] += di * row[j]
		}
	}
	if s.perm != nil {
		copy(s.work, d)
		for k, i := range s.perm {
			d[i] = s.work[k]
		}
	}
	return nil
}
