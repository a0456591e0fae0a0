package reference

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
)

// DDMaxStates is the largest chain (the passage's end included) that
// TransientDD and CDFsDD accept: the method is dense, with three n x n
// double-double matrices and about 30 matrix products for q t = 1e8.
const DDMaxStates = 2048

// ErrDDTooLarge is returned for a chain of more than DDMaxStates states.
var ErrDDTooLarge = errors.New("chain too large for the double-double transient")

// DDBound bounds the error of the double-double transient: each
// probability p it returns is within Rel*p + Abs of the exact value, and so
// is any sum S of them (within Rel*S + Abs).
type DDBound struct{ Rel, Abs float64 }

// TransientDD returns pi(t) = alpha exp(Q t) for each t of ts, Q the
// chain's generator (self-loops left out), with a bound on the error of
// each vector.
//
// # Method
//
// Every quantity is a double-double (dd.go, about 106 bits) and every
// number computed is a sum of products of nonnegative numbers, so no
// subtraction ever cancels. With q the largest exit rate and P = I + Q/q
// (nonnegative, rows summing to 1), exp(Q h) = e^{-q h} exp(q h P) for a
// short step h = t/2^k, the smallest k with q h <= 1/2. exp(q h P) is
// its Taylor series (the Poisson weights of uniformization) to J terms,
// J the first with a tail below tau = 1e-36, summed by Horner's rule
// S <- I + (q h/j) P S with the sparse P on the left; then exp(Q t) =
// exp(Q h)^(2^k) by k squarings of the dense matrix, and pi(t) = alpha
// times that. The states are first put in the block order of blockOrder,
// so that on an acyclic chain every matrix is upper triangular and the
// products skip the zero blocks. The products accumulate each entry
// exactly in its high part (two-sum) and the errors in a float64 low part
// (the Dot2 scheme of Ogita, Rump and Oishi on double-double data).
//
// # Accuracy
//
// Because all the terms are nonnegative, rounding errors are relative
// entrywise: a product of r-term rows of nonnegative double-doubles has
// each entry within (2r^2 + 6r + 3)u^2 of its exact value, relatively
// (u = 2^-53; the error-free two-sum leaves only the low parts' float64
// sum, 2r terms each below 3u of the entry, and the dropped lo*lo
// products; to first order). Squaring doubles an entrywise relative error
// and adds that of the product, so the k squarings multiply the error of
// exp(Q h) by m = 2^k (m < 4 q t, or 1), and the computed exp(Q t) is
// within
//
//	Rel = (m+1) (delta_0 + (2n^2 + 6n + 3)u^2) + 3n u^2 + u
//
// relatively of the exponential of the double-double generator, where
// delta_0 = J (2d^2 + 6d + 33)u^2 + 3e4 u^2 (d the most entries of a row
// of P) covers the series and the factor e^{-q h}; the last u is the
// final rounding to float64. The truncated tails (tau per step, m steps)
// and the rounding of P's diagonal (q - exit_i)/q (absolute, (3d+16)u^2
// per row, a perturbation of the generator by q (3d+16)u^2 acting for
// time t) are absolute: Abs = m tau + q t (3d+16)u^2, in the 1-norm of
// the vector (so also for any sum of probabilities). DDBound reports
// both. For q t = 1e8 (m = 2^28) and rows of a few entries: n = 300,
// Rel = u + 7e-19; n = 1,023, Rel = u + 7e-18; Abs = 4e-23. So every
// probability is its exact value rounded once (u relative), up to 1e-17
// relative and 1e-22 absolute. The bounds are worst-case; against closed
// forms computed in double-double every CDF and survival value of the
// tests was the correctly rounded one (TestDDClosedForms).
func (c *Chain) TransientDD(alpha, ts []float64) ([][]float64, []DDBound, error) {
	if len(alpha) != c.N() {
		return nil, nil, fmt.Errorf("alpha has %d entries for %d states", len(alpha), c.N())
	}
	rows := c.generatorRows()
	out := make([][]float64, len(ts))
	bounds := make([]DDBound, len(ts))
	for i, t := range ts {
		v, b, err := transientDD(rows, alpha, t)
		if err != nil {
			return nil, nil, err
		}
		out[i] = make([]float64, len(v))
		for j, x := range v {
			out[i][j] = x.float()
		}
		bounds[i] = b
	}
	return out, bounds, nil
}

// generatorRows is each state's moves, self-loops left out.
func (c *Chain) generatorRows() [][]flow {
	rows := make([][]flow, c.N())
	for i, ts := range c.Trans {
		for _, t := range ts {
			if t.To != i {
				rows[i] = append(rows[i], flow{t.To, t.Rate})
			}
		}
	}
	return rows
}

// DDCDF is a passage's distribution at one time by the double-double
// transient: CDF = P(passage time <= T) and Survival = P(passage time >
// T), each rounded once from its double-double sum (so Survival keeps its
// relative accuracy when CDF is within 1e-16 of 1), with error bounds
// (Rel*value + Abs of TransientDD's DDBound).
type DDCDF struct {
	T                   float64
	CDF, Survival       float64
	CDFErr, SurvivalErr float64
}

// CDFsDD is the passage-time distribution at each t of ts by the
// double-double transient on the absorbing chain (TransientDD's method
// and accuracy; the chain with the passage's end at most DDMaxStates
// states).
func (c *Chain) CDFsDD(p Passage, ts []float64) ([]DDCDF, error) {
	n := c.N()
	rows := append(c.absorbingRows(p), nil)
	ended := make([]bool, n+1)
	ended[n] = true
	for i := 0; i < n; i++ {
		ended[i] = p.TargetStates != nil && p.TargetStates[i]
	}
	alpha := make([]float64, n+1)
	copy(alpha, p.Alpha)
	out := make([]DDCDF, len(ts))
	for i, t := range ts {
		v, b, err := transientDD(rows, alpha, t)
		if err != nil {
			return nil, err
		}
		var f, s dd
		for j, x := range v {
			if ended[j] {
				f = ddAdd(f, x)
			} else {
				s = ddAdd(s, x)
			}
		}
		out[i] = DDCDF{T: t, CDF: f.float(), Survival: s.float()}
		out[i].CDFErr = b.Rel*out[i].CDF + b.Abs
		out[i].SurvivalErr = b.Rel*out[i].Survival + b.Abs
	}
	return out, nil
}

// ddMatrix is a dense n x n double-double matrix, row-major, with the
// range [first[i], last[i]) of each row's nonzero entries.
type ddMatrix struct {
	n           int
	hi, lo      []float64
	first, last []int
}

func newDDMatrix(n int) *ddMatrix {
	return &ddMatrix{n: n, hi: make([]float64, n*n), lo: make([]float64, n*n), first: make([]int, n), last: make([]int, n)}
}

// finishRow normalises row i (hi + lo to a double-double) and records its
// nonzero range.
func (a *ddMatrix) finishRow(i int) {
	n := a.n
	h, l := a.hi[i*n:(i+1)*n], a.lo[i*n:(i+1)*n]
	first, last := n, 0
	for j := range h {
		if h[j] != 0 || l[j] != 0 {
			h[j], l[j] = fastTwoSum(h[j], l[j])
			first = min(first, j)
			last = j + 1
		}
	}
	if first > last {
		first, last = 0, 0
	}
	a.first[i], a.last[i] = first, last
}

// accumulate adds (ah + al) (bh + bl), elementwise over the row segment,
// to the accumulators (ch, cl): the high parts by two-sum (exact), every
// error and the cross products into cl. All the numbers are nonnegative.
func accumulate(ch, cl []float64, ah, al float64, bh, bl []float64) {
	bh, bl, cl = bh[:len(ch)], bl[:len(ch)], cl[:len(ch)]
	for j, b := range bh {
		p := ah * b
		pe := math.FMA(ah, b, -p)
		pe = math.FMA(ah, bl[j], pe)
		pe = math.FMA(al, b, pe)
		c := ch[j]
		s := c + p
		bb := s - c
		ch[j] = s
		cl[j] += ((c - (s - bb)) + (p - bb)) + pe
	}
}

// parallelRows runs f on every row, on all processors.
func parallelRows(n int, f func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := 0; i < n; i++ {
			f(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				f(i)
			}
		}()
	}
	wg.Wait()
}

// mulDD is c = a b for nonnegative a, b.
func mulDD(c, a, b *ddMatrix) {
	n := a.n
	parallelRows(n, func(i int) {
		ch, cl := c.hi[i*n:(i+1)*n], c.lo[i*n:(i+1)*n]
		clear(ch)
		clear(cl)
		for k := a.first[i]; k < a.last[i]; k++ {
			ah := a.hi[i*n+k]
			if ah == 0 {
				continue
			}
			f, l := b.first[k], b.last[k]
			accumulate(ch[f:l], cl[f:l], ah, a.lo[i*n+k], b.hi[k*n+f:k*n+l], b.lo[k*n+f:k*n+l])
		}
		c.finishRow(i)
	})
}

// u2 is the square of float64's unit roundoff, 2^-106.
const u2 = 0x1p-106

// prodErr is the relative error bound, in units of u^2, of one entry of a
// product of nonnegative double-double rows of r terms (see TransientDD).
func prodErr(r int) float64 {
	x := float64(r)
	return 2*x*x + 6*x + 3
}

// transientDD is alpha exp(Q t) as double-doubles, Q given by its rows
// (moves to states < len(rows), no self-loops), with its error bound.
func transientDD(rows [][]flow, alpha []float64, t float64) ([]dd, DDBound, error) {
	n := len(rows)
	if n > DDMaxStates {
		return nil, DDBound{}, fmt.Errorf("%w: %d states (at most %d)", ErrDDTooLarge, n, DDMaxStates)
	}
	if !(t >= 0) || math.IsInf(t, 1) {
		return nil, DDBound{}, fmt.Errorf("time %g: want a finite t >= 0", t)
	}
	order, pos, _ := blockOrder(rows)
	// P = I + Q/q in the block order, as double-doubles: off-diagonal
	// entries rate/q (duplicates summed first), diagonal (q - exit)/q.
	type entry struct {
		col int
		v   dd
	}
	exit := make([]dd, n)
	q := dd{}
	pRows := make([][]entry, n)
	d := 1
	for p, s := range order {
		sum := map[int]dd{}
		var cols []int
		for _, m := range rows[s] {
			to := pos[m.to]
			if _, ok := sum[to]; !ok {
				cols = append(cols, to)
			}
			sum[to] = ddAdd(sum[to], ddOf(m.rate))
			exit[p] = ddAdd(exit[p], ddOf(m.rate))
		}
		for _, col := range cols {
			pRows[p] = append(pRows[p], entry{col, sum[col]})
		}
		if exit[p].hi > q.hi || exit[p].hi == q.hi && exit[p].lo > q.lo {
			q = exit[p]
		}
		d = max(d, len(cols)+1)
	}
	v := make([]dd, n)
	if q.hi == 0 || t == 0 {
		for j := range v {
			v[j] = ddOf(alpha[j])
		}
		return v, DDBound{Rel: 0x1p-53}, nil
	}
	for p := range pRows {
		for k := range pRows[p] {
			pRows[p][k].v = ddDiv(pRows[p][k].v, q)
		}
		if diag := ddDiv(ddSub(q, exit[p]), q); diag.hi > 0 {
			pRows[p] = append(pRows[p], entry{p, diag})
		}
	}
	// The step: h = t/2^k, q h <= 1/2.
	h, k := t, 0
	for q.hi*h > 0.5 {
		h /= 2
		k++
	}
	x := ddMulF(q, h)
	// J terms: the tail after term J, at most twice term J+1 (x <= 1/2),
	// below tau.
	const tau = 1e-36
	J, term := 0, 1.0
	for {
		term *= x.hi / float64(J+1)
		if 2*term <= tau {
			break
		}
		J++
	}
	// Horner: S <- I + (x/j) P S, j = J..1, from S = I.
	s, next := newDDMatrix(n), newDDMatrix(n)
	for i := 0; i < n; i++ {
		s.hi[i*n+i] = 1
		s.first[i], s.last[i] = i, i+1
	}
	for j := J; j >= 1; j-- {
		c := ddDiv(x, ddOf(float64(j)))
		parallelRows(n, func(i int) {
			ch, cl := next.hi[i*n:(i+1)*n], next.lo[i*n:(i+1)*n]
			clear(ch)
			clear(cl)
			ch[i] = 1
			for _, e := range pRows[i] {
				a := ddMul(c, e.v)
				f, l := s.first[e.col], s.last[e.col]
				accumulate(ch[f:l], cl[f:l], a.hi, a.lo, s.hi[e.col*n+f:e.col*n+l], s.lo[e.col*n+f:e.col*n+l])
			}
			next.finishRow(i)
		})
		s, next = next, s
	}
	// exp(Q h) = e^{-x} S.
	decay := ddExp(ddNeg(x))
	parallelRows(n, func(i int) {
		for j := s.first[i]; j < s.last[i]; j++ {
			e := ddMul(dd{s.hi[i*n+j], s.lo[i*n+j]}, decay)
			s.hi[i*n+j], s.lo[i*n+j] = e.hi, e.lo
		}
	})
	for r := 0; r < k; r++ {
		mulDD(next, s, s)
		s, next = next, s
	}
	// pi = alpha exp(Q t), back in the chain's numbering.
	vh, vl := make([]float64, n), make([]float64, n)
	for p, st := range order {
		if a := alpha[st]; a != 0 {
			f, l := s.first[p], s.last[p]
			accumulate(vh[f:l], vl[f:l], a, 0, s.hi[p*n+f:p*n+l], s.lo[p*n+f:p*n+l])
		}
	}
	for p, st := range order {
		h, l := fastTwoSum(vh[p], vl[p])
		v[st] = dd{h, l}
	}
	// The bound (TransientDD's doc).
	m := math.Ldexp(1, k)
	delta0 := (float64(J)*(prodErr(d)+30) + 3e4) * u2
	rel := (m+1)*(delta0+prodErr(n)*u2) + 3*float64(n)*u2
	if rel > 1e-6 {
		return nil, DDBound{}, fmt.Errorf("double-double transient: q t = %g too large for its error bound (%g)", q.hi*t, rel)
	}
	abs := m*tau + q.hi*t*float64(3*d+16)*u2
	return v, DDBound{Rel: rel + 0x1p-53, Abs: abs}, nil
}
