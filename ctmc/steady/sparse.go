package steady

import (
	"context"
	"fmt"
	"math"
	"pepa/internal/option"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"

	"pepa/ctmc"
	"pepa/ctmc/elim"
	"pepa/internal/membudget"
)

// sparseGTH is the GTH reduction of a closed class in a nested-dissection
// order (nd.go), by fronts (the multifrontal method): each node of the
// dissection tree gathers, in a dense matrix over its own states and its
// boundary, the class's rates that concern its states and the updates its
// children left on their boundaries, eliminates its own states there as
// dense GTH does (each pivot the sum of the rates the state has left,
// never a difference: the reduction adds, multiplies and divides rates
// only), keeps what the solves need and leaves the update of its boundary
// to its parent. In exact arithmetic this is the dense reduction in that
// order, and every rate of it is a rate of a censored chain (at most the
// state's own exit rate): rates neither overflow nor need scaling.
//
// Probabilities do: on a population model's chain they span far more than
// float64 holds (1e-400 and less beside 1). The back-substitution
// therefore keeps each probability as a float64 mantissa and its own
// binary exponent (xm, xe), and everything measured from them is formed in
// a scale that holds it: the residual and the correction of the error
// estimate relative to each state's own probability, every throughput in
// the scale of the states that enable its action.
//
// Rates of the censored chains can underflow all the same, where the
// probabilities span more than float64 within one front: the rate from a
// probable state into a far rarer one, through many uphill steps, is
// below 1e-308, and the rare state's whole inflow rounds to 0. The
// reduction then runs on the similar matrix W Q W^-1 (W = diag(w), w an
// estimate of the steady state, each entry with its own exponent): its
// entries w_i a_ij / w_j are flows relative to the target's probability,
// at most about the target's exit rate, whatever the span; the censoring
// formula is unchanged under the transform, and the back-substitution
// gives y = pi / w, about 1 everywhere. What underflows now is the rate
// from a rare state to a far more probable one, relative to the latter: a
// negligible part of its inflow, but the largest part of the rare state's
// pivot (its total rate left). The pivots are therefore not formed again:
// they are the rates of the same censored chains, which the unscaled
// reduction in the same order formed (sums of rates in their own scale,
// which do not underflow). w and those pivots come from an earlier pass
// (sparsePlan.solve).
type sparseGTH struct {
	g *classGraph
	o *ndOrder
	// w, by position, is the scaling of the reduction (nil: none, w = 1).
	w *xvec
	// fac holds, node after node, for each eliminated state k (in order)
	// its row (the rates to the later states of its front, as they were
	// when it was eliminated) then its column (the rates from the later
	// states into it divided by its pivot); facAt[node] is where a
	// node's start.
	fac   []float64
	facAt []int64
	piv   []float64 // by position: the pivot (total rate left) of each eliminated state
	// children lists each node's children, childAt[node]..childAt[node+1].
	children []int32
	childAt  []int32
}

// sparseBytes is what factorSparse and the solve after it allocate: the
// factors, the largest front with the pending updates, the pivots, the
// positions' scratch, the two extended vectors and the correction's two
// (8 bytes a state each, about), and the result over the chain.
func sparseBytes(o *ndOrder, N int) int64 {
	n := int64(len(o.perm))
	return membudget.Bytes(o.factor, 8) + membudget.Bytes(o.frontPeak, 8) + membudget.Bytes(n, 8+4+12+16+8+36) + membudget.Bytes(int64(N), 8)
}

// panelStates is the number of states a front eliminates before it
// updates the rest of the front by one matrix product (gonum's Dgemm).
const panelStates = 48

// factorSparse reduces the class in the order o; scaled by w (by
// position; nil: unscaled), with piv the pivots of the unscaled reduction
// in the same order (sparseGTH says why). fac, if not nil, is a factor
// array of a pass before in the same order, reused (every entry is
// written again).
func factorSparse(ctx context.Context, g *classGraph, o *ndOrder, w *xvec, piv, fac []float64) (*sparseGTH, error) {
	if int64(len(fac)) != o.factor {
		fac = make([]float64, o.factor)
	}
	s := &sparseGTH{g: g, o: o, w: w, fac: fac, facAt: make([]int64, len(o.nodes)+1), piv: piv}
	if w == nil {
		s.piv = make([]float64, g.n)
	}
	s.childLists()
	n := g.n
	loc := make([]int32, n) // by position: the index in the current front
	front := make([]float64, 0, o.maxFront*o.maxFront)
	stack := make([]float64, 0, o.stackPeak)
	at := int64(0)
	impl := blas64.Implementation()
	var fpos []int32
	for k := range o.nodes {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		nd := &o.nodes[k]
		m := int(nd.hi - nd.lo)
		F := m + len(nd.bound)
		for i := 0; i < m; i++ {
			loc[int(nd.lo)+i] = int32(i)
		}
		for t, p := range nd.bound {
			loc[p] = int32(m + t)
		}
		A := front[:F*F]
		clear(A)
		// The class's own rates: those out of the node's states to its
		// front (the earlier states' entries were gathered by the fronts
		// that eliminated them), and those into them from the boundary.
		for p := nd.lo; p < nd.hi; p++ {
			v := o.perm[p]
			r := int(loc[p]) * F
			for t := g.rowPtr[v]; t < g.rowPtr[v+1]; t++ {
				if pw := o.pos[g.rowCol[t]]; pw >= nd.lo {
					A[r+int(loc[pw])] += s.scaledRate(g.rowRate[t], p, pw)
				}
			}
			col := int(loc[p])
			for t := g.colPtr[v]; t < g.colPtr[v+1]; t++ {
				if pu := o.pos[g.colSrc[t]]; pu >= nd.hi {
					A[int(loc[pu])*F+col] += s.scaledRate(g.colRate[t], pu, p)
				}
			}
		}
		// The children's updates, the last child's on top of the stack.
		kids := s.children[s.childAt[k]:s.childAt[k+1]]
		for c := len(kids) - 1; c >= 0; c-- {
			cb := o.nodes[kids[c]].bound
			bc := len(cb)
			U := stack[len(stack)-bc*bc:]
			for a, pa := range cb {
				row := A[int(loc[pa])*F:]
				for b, pb := range cb {
					row[loc[pb]] += U[a*bc+b]
				}
			}
			stack = stack[:len(stack)-bc*bc]
		}
		me := m
		if nd.parent < 0 {
			me = m - 1 // the class's last state: nothing left to leave to
		}
		fpos = s.frontPositions(k, fpos)
		if err := s.reduceFront(impl, A, F, me, fpos); err != nil {
			return nil, err
		}
		// Keep each eliminated state's row and column.
		s.facAt[k] = at
		for j := 0; j < me; j++ {
			at += int64(copy(s.fac[at:], A[j*F+j+1:(j+1)*F]))
			for i := j + 1; i < F; i++ {
				s.fac[at] = A[i*F+j]
				at++
			}
		}
		// The boundary's update, for the parent.
		b := F - m
		for i := 0; i < b; i++ {
			stack = append(stack, A[(m+i)*F+m:(m+i+1)*F]...)
		}
	}
	s.facAt[len(o.nodes)] = at
	return s, nil
}

// scaledRate is the rate q from position a to position b in the
// reduction's scale: w_a q / w_b.
func (s *sparseGTH) scaledRate(q float64, a, b int32) float64 {
	if s.w == nil {
		return q
	}
	return s.w.scaled(q, a, b)
}

// childLists lists each node's children (in postorder).
func (s *sparseGTH) childLists() {
	nodes := s.o.nodes
	s.childAt = make([]int32, len(nodes)+1)
	for _, nd := range nodes {
		if nd.parent >= 0 {
			s.childAt[nd.parent+1]++
		}
	}
	for k := range nodes {
		s.childAt[k+1] += s.childAt[k]
	}
	s.children = make([]int32, s.childAt[len(nodes)])
	fill := append([]int32(nil), s.childAt[:len(nodes)]...)
	for k, nd := range nodes {
		if nd.parent >= 0 {
			s.children[fill[nd.parent]] = int32(k)
			fill[nd.parent]++
		}
	}
}

// reduceFront eliminates the first me states of the dense front A (F x F,
// row-major) in order, GTH's way: state j's pivot is the compensated sum
// of its rates to the states after it, every row i > j that enters j
// takes f = a_ij / pivot times row j, and a_ij is replaced by f. It goes
// panel by panel: within a panel the panel's rows are updated at once and
// the later rows only in the panel's columns; the rest of the later rows
// is then updated by one product, L (their f's) times U (the panel's
// rows), which adds nonnegative products as the state-by-state loop does.
// Diagonal entries take terms too (the return to a state); they are never
// read. fpos lists the front's positions. Scaled (s.w), the pivots are
// given.
func (s *sparseGTH) reduceFront(impl blas.Float64, A []float64, F, me int, fpos []int32) error {
	for p0 := 0; p0 < me; p0 += panelStates {
		p1 := min(p0+panelStates, me)
		for j := p0; j < p1; j++ {
			row := A[j*F : (j+1)*F]
			piv := s.piv[fpos[j]]
			if s.w == nil {
				var sum, comp float64
				for _, v := range row[j+1:] {
					sum, comp = elim.AddCompensated(sum, comp, v)
				}
				piv = sum + comp
			}
			if !(piv > 0) || math.IsInf(piv, 0) {
				st := s.g.class[s.o.perm[fpos[j]]]
				return fmt.Errorf("%w: sparse GTH: state %d has no rate left after reduction (%g): rates under- or overflow float64", errNoProgress, st, piv)
			}
			s.piv[fpos[j]] = piv
			for i := j + 1; i < F; i++ {
				a := A[i*F+j]
				if a == 0 {
					continue
				}
				f := a / piv
				A[i*F+j] = f
				var dst, src []float64
				if i < p1 {
					dst, src = A[i*F+j+1:(i+1)*F], row[j+1:]
				} else {
					dst, src = A[i*F+j+1:i*F+p1], row[j+1:p1]
				}
				src = src[:len(dst)]
				for t, v := range src {
					dst[t] += f * v
				}
			}
		}
		if p1 < F {
			r := F - p1
			impl.Dgemm(blas.NoTrans, blas.NoTrans, r, r, p1-p0, 1, A[p1*F+p0:], F, A[p0*F+p1:], F, 1, A[p1*F+p1:], F)
		}
	}
	return nil
}

// frontPositions lists node k's front: its own positions, then its
// boundary.
func (s *sparseGTH) frontPositions(k int, buf []int32) []int32 {
	nd := &s.o.nodes[k]
	buf = buf[:0]
	for p := nd.lo; p < nd.hi; p++ {
		buf = append(buf, p)
	}
	return append(buf, nd.bound...)
}

// eliminated is the number of states node k eliminates.
func (s *sparseGTH) eliminated(k int) int {
	nd := &s.o.nodes[k]
	if nd.parent < 0 {
		return int(nd.hi-nd.lo) - 1
	}
	return int(nd.hi - nd.lo)
}

// xvec is a vector of positive numbers each kept as a mantissa and a
// binary exponent of its own (x = m 2^e), by position.
type xvec struct {
	m []float64
	e []int32
}

// ratio is x_a / x_b in float64 (0 if it underflows, +Inf if it
// overflows).
func (x *xvec) ratio(a, b int32) float64 {
	return math.Ldexp(x.m[a]/x.m[b], int(x.e[a]-x.e[b]))
}

// scaled is f x_a / x_b in float64, formed without the ratio alone
// overflowing or underflowing: f (a rate, or a rate over a pivot) can be
// as far below 1 as x_a / x_b is above it, and the product is what the
// callers need (0 or +Inf only when the product itself is beyond
// float64).
func (x *xvec) scaled(f float64, a, b int32) float64 {
	return math.Ldexp(f*x.m[a]/x.m[b], int(x.e[a]-x.e[b]))
}

// argmax is the position of the largest entry.
func (x *xvec) argmax() int32 {
	best := int32(0)
	for p := range x.m {
		if x.ratio(int32(p), best) > 1 {
			best = int32(p)
		}
	}
	return best
}

// solve back-substitutes the steady state up to scale (divided by s.w
// when scaled): the last position 1, then, from the root's states down,
// x_j = sum over the later states i of its front of x_i a_ij / pivot_j,
// each sum formed in the scale of its largest term. A state whose every
// term is 0 (its inflow underflowed in the reduction) is an error, or,
// with unsure not nil (by position), left unknown (mantissa 0) and
// counted; its terms count as 0 in the states solved after it, which are
// marked in unsure as it is (their values may miss most of their
// inflow).
func (s *sparseGTH) solve(ctx context.Context, unsure []bool) (x *xvec, unknown int, err error) {
	n := s.g.n
	x = &xvec{m: make([]float64, n), e: make([]int32, n)}
	x.m[n-1], x.e[n-1] = 0.5, 1
	var fpos []int32
	for k := len(s.o.nodes) - 1; k >= 0; k-- {
		if k&255 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, 0, err
			}
		}
		fpos = s.frontPositions(k, fpos)
		F := len(fpos)
		me := s.eliminated(k)
		// Column j of the node starts after its row: offsets from the
		// node's start.
		for j := me - 1; j >= 0; j-- {
			col := s.fac[s.colAt(k, j, F):][:F-1-j]
			later := fpos[j+1:]
			// Each term x_i f_i in the scale of the largest: f_i (a rate
			// of a censored chain over a pivot) can be far below 1 too.
			emax := int32(math.MinInt32)
			for t, f := range col {
				if f != 0 && unsure != nil && unsure[later[t]] {
					unsure[fpos[j]] = true
				}
				if f != 0 && x.m[later[t]] != 0 {
					_, fe := math.Frexp(x.m[later[t]] * f)
					emax = max(emax, x.e[later[t]]+int32(fe))
				}
			}
			sum := 0.0
			for t, f := range col {
				if f != 0 && x.m[later[t]] != 0 {
					p := later[t]
					fm, fe := math.Frexp(x.m[p] * f)
					sum += math.Ldexp(fm, int(x.e[p]+int32(fe)-emax))
				}
			}
			if sum == 0 && unsure != nil {
				x.m[fpos[j]], x.e[fpos[j]] = 0, 0
				unsure[fpos[j]] = true
				unknown++
				continue
			}
			if !(sum > 0) || math.IsInf(sum, 0) {
				st := s.g.class[s.o.perm[fpos[j]]]
				return nil, 0, fmt.Errorf("%w: sparse GTH: state %d's probability is %g in the scale of its inflow", errNoProgress, st, sum)
			}
			mant, e := math.Frexp(sum)
			x.m[fpos[j]], x.e[fpos[j]] = mant, emax+int32(e)
		}
	}
	return x, unknown, nil
}

// times is x w entry by entry (x itself when w is nil), normalised.
func (x *xvec) times(w *xvec) *xvec {
	if w == nil {
		return x
	}
	z := &xvec{m: make([]float64, len(x.m)), e: make([]int32, len(x.m))}
	for p, m := range x.m {
		if m == 0 {
			continue
		}
		mm, e := math.Frexp(m * w.m[p])
		z.m[p], z.e[p] = mm, x.e[p]+w.e[p]+int32(e)
	}
	return z
}

// permute is x (by position in order a) by position in order b.
func (x *xvec) permute(a, b *ndOrder) *xvec {
	z := &xvec{m: make([]float64, len(x.m)), e: make([]int32, len(x.m))}
	for p, v := range a.perm {
		q := b.pos[v]
		z.m[q], z.e[q] = x.m[p], x.e[p]
	}
	return z
}

// rowAt and colAt are where the row and the column of node k's j-th
// eliminated state start in fac (F the node's front size): each state
// keeps F-1-j entries of each, row then column.
func (s *sparseGTH) rowAt(k, j, F int) int64 {
	// sum_{t<j} 2 (F-1-t) = 2 j (F-1) - j (j-1)
	jj := int64(j)
	return s.facAt[k] + 2*jj*int64(F-1) - jj*(jj-1)
}

func (s *sparseGTH) colAt(k, j, F int) int64 { return s.rowAt(k, j, F) + int64(F-1-j) }

// reduceResidual is the forward half of the correction's solve: given
// beta = r / x (r_j / x_j for each state: the residual relative to each
// state's own probability, in units of rate), it carries each eliminated
// state's share on to the states after it, in place, as the reduction
// carried its rates: beta_j += beta_k (x_k / x_j) (a_kj / pivot_k).
func (s *sparseGTH) reduceResidual(ctx context.Context, x *xvec, beta []float64) error {
	var fpos []int32
	for k := range s.o.nodes {
		if k&255 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		fpos = s.frontPositions(k, fpos)
		F := len(fpos)
		me := s.eliminated(k)
		for j := 0; j < me; j++ {
			pj := fpos[j]
			bj := beta[pj]
			if bj == 0 {
				continue
			}
			f := bj / s.piv[pj]
			row := s.fac[s.rowAt(k, j, F):][:F-1-j]
			for t, a := range row {
				if a != 0 {
					p := fpos[j+1+t]
					beta[p] += x.scaled(f*a, pj, p)
				}
			}
		}
	}
	return nil
}

// backCorrect is the back half: with the reduced beta, it solves for the
// correction relative to x (d = e x, d Q = -r) from the last state's
// value anchor down: e_k = beta_k / pivot_k + sum_i e_i (x_i / x_k)
// (a_ik / pivot_k), where the (x_i / x_k) (a_ik / pivot_k) over i sum to
// 1 (they are how x_k was formed). d is determined up to a multiple of
// pi, e up to a constant, which the anchor chooses; refine's
// normalisation removes it. Which constant matters in float64 all the
// same: when the last state is rare, the residual of the bulk that the
// reduction carried to it makes its e far from the bulk's (1e12 and more
// on a population chain), and with anchor 0 every e of the bulk would
// carry that offset, its own part lost in the rounding. The caller
// therefore solves again with the anchor that brings the bulk's mean to
// about 0 (sparsePlan.solve).
func (s *sparseGTH) backCorrect(ctx context.Context, x *xvec, beta, e []float64, anchor float64) error {
	var fpos []int32
	n := s.g.n
	e[n-1] = anchor
	for k := len(s.o.nodes) - 1; k >= 0; k-- {
		if k&255 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		fpos = s.frontPositions(k, fpos)
		F := len(fpos)
		me := s.eliminated(k)
		for j := me - 1; j >= 0; j-- {
			pj := fpos[j]
			col := s.fac[s.colAt(k, j, F):][:F-1-j]
			sum := beta[pj] / s.piv[pj]
			for t, f := range col {
				if f != 0 {
					p := fpos[j+1+t]
					sum += e[p] * x.scaled(f, p, pj)
				}
			}
			e[pj] = sum
		}
	}
	return nil
}

// sparsePlan is a closed class prepared for sparse GTH: its graph, and
// its order with the predicted cost (o.work multiply-adds; tooMuch when
// the dissection stopped at the cap it was given, o then incomplete).
type sparsePlan struct {
	g       *classGraph
	o       *ndOrder
	tooMuch bool
	maxWork float64
	// reanchored: the guessed anchor was rare and the class was reduced
	// again (for Reason).
	reanchored bool
	// scaled: the number of passes whose reduction underflowed, each
	// followed by one scaled by its solution (for Reason).
	scaled int
	// rescale: reduce scaled at least once (Options.SparseRescale).
	rescale bool
}

// walkSteps is the length of guessProbable's walk: enough to cross a
// population chain of a thousand levels many times, a few milliseconds.
const walkSteps = 200000

// anchorFloor is how far below the most probable state the anchor's
// probability may be before the class is reduced again with the most
// probable state as anchor: the correction's values at the anchor are
// the bulk's rounding residual relative to the anchor's probability, and
// its offset (sparseGTH.backCorrect) must stay far below 1/u.
const anchorFloor = 1e-6

// planSparse builds the class's graph and orders it, within the budget;
// maxWork caps the dissection (0: none).
func planSparse(ctx context.Context, c *ctmc.Chain, class []int32, budget *membudget.Budget, maxWork float64) (*sparsePlan, error) {
	var T int64
	for _, i := range class {
		T += c.RowPtr[i+1] - c.RowPtr[i]
	}
	if err := budget.Check("steady: sparse GTH's graph of the class", classGraphBytes(c.N, len(class), T), option.Text(steadyHint)); err != nil {
		return nil, err
	}
	g, err := newClassGraph(c, class)
	if err != nil {
		return nil, err
	}
	if err := budget.Check("steady: sparse GTH's nested dissection", ndBytes(g.n), option.Text(steadyHint)); err != nil {
		return nil, err
	}
	anchor := guessProbable(g, walkSteps)
	o, tooMuch, err := dissect(ctx, g, maxWork, anchor)
	if err != nil {
		return nil, err
	}
	return &sparsePlan{g: g, o: o, tooMuch: tooMuch, maxWork: maxWork}, nil
}

// describe says what the order costs, for Reason.
func (pl *sparsePlan) describe() string {
	o := pl.o
	again := ""
	if pl.reanchored {
		again = " (reduced twice: the state guessed most probable was not)"
	}
	if pl.scaled > 0 {
		again += fmt.Sprintf(" (reduced %d more times, scaled by the steady state the one before found: rates underflowed)", pl.scaled)
	}
	return fmt.Sprintf("nested dissection into %d fronts, the largest of %d states (a separator of up to %d), %.3g multiply-adds, %s of factors%s",
		len(o.nodes), o.maxFront, o.maxSep, o.work, membudget.FormatSize(o.factor*8), again)
}

// scalePasses is the most reductions sparsePlan.solve runs, each scaled
// by the steady state the one before found, before it gives up on states
// whose inflow still underflows. Each pass extends the span the
// reduction holds by about float64's range. One more sufficed on every
// chain tried, among them the web shop of 1,000 users thinking at rate
// 0.001 (probabilities down to 1e-1730 of the most probable state's:
// 350,528 of its 501,501 states' inflow underflowed in the first pass).
const scalePasses = 4

// solve reduces the class, back-substitutes its steady state and
// estimates the error of every throughput (estimate). When some states'
// inflow underflows in the reduction, it reduces again scaled by what it
// found (sparseGTH says how), the unknown states estimated from their
// neighbours (fillUnknown), until none is left.
func (pl *sparsePlan) solve(ctx context.Context, c *ctmc.Chain, budget *membudget.Budget) (*classSolution, error) {
	g, o := pl.g, pl.o
	if pl.tooMuch {
		return nil, fmt.Errorf("internal error: sparse GTH on an order that was not completed")
	}
	var w *xvec       // by position in o: the scaling of the next pass
	var piv []float64 // the unscaled reduction's pivots in the order o
	// fac is the last pass's factors, reused by the next in the same
	// order: under an address-space limit the memory a pass frees stays
	// mapped, and a second array would not fit where the first did.
	var fac []float64
	for pass := 1; ; pass++ {
		if fac == nil {
			if err := budget.Check(fmt.Sprintf("steady: sparse GTH's factors (%d fronts, the largest of %d states)", len(o.nodes), o.maxFront), sparseBytes(o, c.N), option.Text(steadyHint)); err != nil {
				return nil, err
			}
		}
		if w != nil && piv == nil {
			// Reordered after a scaled pass: the pivots of the new
			// order, unscaled, first.
			s, err := factorSparse(ctx, g, o, nil, nil, fac)
			if err != nil {
				return nil, err
			}
			piv, fac = s.piv, s.fac
		}
		s, err := factorSparse(ctx, g, o, w, piv, fac)
		if err != nil {
			return nil, err
		}
		fac = s.fac
		if w == nil {
			piv = s.piv
		}
		var unsure []bool
		if pass < scalePasses {
			unsure = make([]bool, g.n)
		}
		y, unknown, err := s.solve(ctx, unsure)
		if err != nil {
			return nil, err
		}
		x := y.times(w)
		if unknown > 0 || pl.rescale && w == nil {
			pl.scaled = pass
			fillUnknown(g, o, x, unsure)
			w = x
			continue
		}
		if top := x.argmax(); !pl.reanchored && x.ratio(int32(g.n-1), top) < anchorFloor {
			// The guessed anchor is rare: reduce again with the most
			// probable state last (scaled as this pass was).
			o2, _, err := dissect(ctx, g, 0, o.perm[top])
			if err != nil {
				return nil, err
			}
			if w != nil {
				w = x.permute(o, o2)
			}
			o, pl.o, pl.reanchored, piv, fac = o2, o2, true, nil, nil
			continue
		}
		return pl.estimate(ctx, c, budget, s, x, y)
	}
}

// fillUnknown estimates the states of x that a pass which underflowed
// left unknown (mantissa 0) or unsure (solved without some of their
// inflow: unsure, by position), for the next pass's scaling. It visits
// them breadth first from the sure states, each first given the most its
// balance allows from the inflow of one state already visited or sure
// (x_v >= x_u q_uv / q_v: an estimate from below, off by the share of
// that inflow in the whole, step after step), then raises them by
// fillSweeps Gauss-Seidel sweeps in that order (x_v = the inflow of all
// its sources over q_v, the sure states fixed): from below, each sweep
// brings them closer to the balance. The next pass needs them within
// about float64's range of the truth, over each front, not more: an
// estimate off by many orders makes that pass's rates large but finite,
// and the pass after corrects it.
func fillUnknown(g *classGraph, o *ndOrder, x *xvec, unsure []bool) {
	n := g.n
	queued := make([]bool, n) // by local state
	order := make([]int32, 0, n)
	for v := 0; v < n; v++ {
		if unsure[o.pos[v]] {
			continue
		}
		for t := g.rowPtr[v]; t < g.rowPtr[v+1]; t++ {
			if u := g.rowCol[t]; unsure[o.pos[u]] && !queued[u] {
				queued[u] = true
				order = append(order, u)
			}
		}
	}
	known := func(u int32) bool { return x.m[o.pos[u]] != 0 }
	for h := 0; h < len(order); h++ {
		v := order[h]
		pv := o.pos[v]
		if in := inflow(g, o, x, v, known, true); in.m != 0 && (x.m[pv] == 0 || in.e > x.e[pv] || in.e == x.e[pv] && in.m > x.m[pv]) {
			x.m[pv], x.e[pv] = in.m, in.e
		}
		for t := g.rowPtr[v]; t < g.rowPtr[v+1]; t++ {
			if u := g.rowCol[t]; unsure[o.pos[u]] && !queued[u] {
				queued[u] = true
				order = append(order, u)
			}
		}
	}
	for sweep := 0; sweep < fillSweeps; sweep++ {
		for _, v := range order {
			pv := o.pos[v]
			in := inflow(g, o, x, v, known, false)
			if in.m != 0 && (in.e > x.e[pv] || in.e == x.e[pv] && in.m > x.m[pv]) {
				x.m[pv], x.e[pv] = in.m, in.e
			}
		}
	}
}

// fillSweeps is the number of Gauss-Seidel sweeps fillUnknown makes over
// the states it estimates.
const fillSweeps = 20

// xnum is one number of an xvec: a mantissa and its binary exponent.
type xnum struct {
	m float64
	e int32
}

// inflow is state v's inflow from the sources use accepts, over its exit
// rate (the largest single term's if largest, else their sum), as an xnum
// (mantissa 0 when no source is accepted).
func inflow(g *classGraph, o *ndOrder, x *xvec, v int32, use func(int32) bool, largest bool) xnum {
	q := 0.0
	for t := g.rowPtr[v]; t < g.rowPtr[v+1]; t++ {
		q += g.rowRate[t]
	}
	emax := int32(math.MinInt32)
	for t := g.colPtr[v]; t < g.colPtr[v+1]; t++ {
		if u := g.colSrc[t]; use(u) {
			_, fe := math.Frexp(x.m[o.pos[u]] * g.colRate[t] / q)
			emax = max(emax, x.e[o.pos[u]]+int32(fe))
		}
	}
	if emax == math.MinInt32 {
		return xnum{}
	}
	sum := 0.0
	for t := g.colPtr[v]; t < g.colPtr[v+1]; t++ {
		if u := g.colSrc[t]; use(u) {
			pu := o.pos[u]
			fm, fe := math.Frexp(x.m[pu] * g.colRate[t] / q)
			term := math.Ldexp(fm, int(x.e[pu]+int32(fe)-emax))
			if largest {
				sum = math.Max(sum, term)
			} else {
				sum += term
			}
		}
	}
	m, e := math.Frexp(sum)
	return xnum{m, emax + int32(e)}
}

// estimate is the error of every throughput of the solution x (y = x / w,
// the reduction's own scale): the correction that one step of iterative
// refinement would apply (refine's estimate), formed relative to each
// state's own probability, floored by each state's relative imbalance.
func (pl *sparsePlan) estimate(ctx context.Context, c *ctmc.Chain, budget *membudget.Budget, s *sparseGTH, x, y *xvec) (*classSolution, error) {
	g, o := pl.g, pl.o
	n := g.n
	// The residual relative to each state's probability: the inflow in
	// units of x_j (each product split exactly, the sum compensated)
	// less the outflow rates.
	beta := make([]float64, n)
	imbalance := make([]float64, n) // by local state
	for v := 0; v < n; v++ {
		p := o.pos[v]
		var sum, comp, q float64
		for t := g.colPtr[v]; t < g.colPtr[v+1]; t++ {
			// The mantissas' ratio times the rate, split exactly, then
			// both parts scaled by the exponents' difference (exact
			// unless subnormal): the ratio alone can overflow where the
			// product (an inflow, at most the state's outflow) cannot.
			src := o.pos[g.colSrc[t]]
			a, b := x.m[src]/x.m[p], g.colRate[t]
			prod := a * b
			de := int(x.e[src] - x.e[p])
			sum, comp = elim.AddCompensated(sum, comp, math.Ldexp(prod, de))
			comp += math.Ldexp(math.FMA(a, b, -prod), de)
		}
		for t := g.rowPtr[v]; t < g.rowPtr[v+1]; t++ {
			sum, comp = elim.AddCompensated(sum, comp, -g.rowRate[t])
			q += g.rowRate[t]
		}
		beta[p] = sum + comp
		if q > 0 {
			imbalance[v] = math.Abs(beta[p]) / q
		}
	}
	if err := s.reduceResidual(ctx, y, beta); err != nil {
		return nil, err
	}
	// The distribution's weights, in the scale of the most probable state.
	E := int32(math.MinInt32)
	for _, v := range x.e {
		E = max(E, v)
	}
	var S, Sc float64
	for p := range x.m {
		S, Sc = elim.AddCompensated(S, Sc, math.Ldexp(x.m[p], int(x.e[p]-E)))
	}
	S += Sc
	// The correction, anchored again until the weighted mean of e is
	// small beside its spread (backCorrect says why); each pass removes
	// all but about a unit roundoff of the offset, so a few suffice even
	// when the first offset is 1e100.
	e := make([]float64, n)
	anchor, ebar := 0.0, 0.0
	for pass := 0; ; pass++ {
		if err := s.backCorrect(ctx, y, beta, e, anchor); err != nil {
			return nil, err
		}
		var D, spread float64
		for p := range x.m {
			w := math.Ldexp(x.m[p], int(x.e[p]-E))
			D += w * e[p]
		}
		ebar = D / S
		for p := range x.m {
			w := math.Ldexp(x.m[p], int(x.e[p]-E))
			spread += w * math.Abs(e[p]-ebar)
		}
		spread /= S
		if math.IsNaN(ebar) || math.IsInf(ebar, 0) || math.IsNaN(spread) {
			return nil, fmt.Errorf("%w: sparse GTH: the error estimate's correction is not finite", errNoProgress)
		}
		if math.Abs(ebar) <= 1e6*spread || math.Abs(ebar) < 1e-300 || pass == 3 {
			break
		}
		anchor -= ebar
	}
	s = nil
	// Every throughput in the scale of the most probable state that
	// enables its action: an action of rare states only is measured
	// relative to itself too.
	na := len(c.S.Actions)
	Ea := make([]int32, na)
	for a := range Ea {
		Ea[a] = math.MinInt32
	}
	for v, i := range g.class {
		xe := x.e[o.pos[v]]
		for t := c.RowPtr[i]; t < c.RowPtr[i+1]; t++ {
			a := c.Act[t]
			Ea[a] = max(Ea[a], xe)
		}
	}
	X, Xc, dX, floor := make([]float64, na), make([]float64, na), make([]float64, na), make([]float64, na)
	for v, i := range g.class {
		p := o.pos[v]
		dev := e[p] - ebar
		for t := c.RowPtr[i]; t < c.RowPtr[i+1]; t++ {
			a := c.Act[t]
			w := math.Ldexp(x.m[p], int(x.e[p]-Ea[a])) * c.RateAt(t)
			X[a], Xc[a] = elim.AddCompensated(X[a], Xc[a], w)
			dX[a] += w * dev
			floor[a] = math.Max(floor[a], imbalance[v])
		}
	}
	sol := &classSolution{method: MethodSparse, est: map[string]float64{}, correction: map[string]float64{}, iterations: 1}
	for a := 0; a < na; a++ {
		if Ea[a] == math.MinInt32 {
			continue
		}
		xa := X[a] + Xc[a]
		if !(xa > 0) {
			return nil, fmt.Errorf("%w: sparse GTH: the throughput of %s is not positive", errNoProgress, c.S.Actions[a])
		}
		// What float64 will hold of it once normalised.
		if lg := math.Log2(xa) + float64(Ea[a]-E) - math.Log2(S); lg < -1000 {
			return nil, fmt.Errorf("%w: the throughput of %s is about 1e%.0f, below what float64 holds (the steady-state probabilities of the states that enable it are that small)", errNoProgress, c.S.Actions[a], lg*math.Log10(2))
		}
		sol.correction[c.S.Actions[a]] = math.Abs(dX[a]) / xa
		sol.est[c.S.Actions[a]] = math.Max(math.Abs(dX[a])/xa, floor[a]) + 2*unitRoundoff
	}
	if err := budget.Check("steady: the distribution", membudget.Bytes(int64(c.N), 8), option.Text(steadyHint)); err != nil {
		return nil, err
	}
	sol.pi = make([]float64, c.N)
	for v, i := range g.class {
		p := o.pos[v]
		sol.pi[i] = math.Ldexp(x.m[p], int(x.e[p]-E)) / S
	}
	sol.residual = pl.normResidual(sol.pi)
	return sol, nil
}

// normResidual is ||pi Q||_inf / (max_i q_i ||pi||_inf) over the class.
func (pl *sparsePlan) normResidual(pi []float64) float64 {
	g := pl.g
	rm, pm, qm := 0.0, 0.0, 0.0
	for v := 0; v < g.n; v++ {
		pv := pi[g.class[v]]
		in, q := 0.0, 0.0
		for t := g.colPtr[v]; t < g.colPtr[v+1]; t++ {
			in += pi[g.class[g.colSrc[t]]] * g.colRate[t]
		}
		for t := g.rowPtr[v]; t < g.rowPtr[v+1]; t++ {
			q += g.rowRate[t]
		}
		rm, pm, qm = math.Max(rm, math.Abs(in-pv*q)), math.Max(pm, pv), math.Max(qm, q)
	}
	return rm / (qm * pm)
}
