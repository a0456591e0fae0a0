package passage

import (
	"context"
	"errors"
	"fmt"
	"math"

	"pepa/ctmc"
)

// ErrMeanUnavailable is returned (wrapped) when a mean passage time cannot
// be computed to its stated accuracy: the distribution is unaffected, and
// callers report the mean as unavailable rather than fail.
var ErrMeanUnavailable = errors.New("the mean passage time is unavailable")

// Mean is the expected passage time: MeanTimes without the largest
// remaining time.
func Mean(ctx context.Context, c *ctmc.Chain, pr Problem) (float64, error) {
	mean, _, err := MeanTimes(ctx, c, pr)
	return mean, err
}

// denseBlock is the largest strongly connected block solved by dense elimination
// (a variable so that tests can send small blocks down the iterative path).
var denseBlock = 600

// MeanTimes is the expected passage time, and also the largest mean
// remaining time over the states the start can reach: from any moment on,
// the passage's expected remaining time is at most that, which bounds
// tails such as integral_T^inf (1 - F(t)) dt <= (1 - F(T)) * maxRemaining.
// Both are +Inf if the passage may never end (some state the start can
// reach cannot reach the target).
//
// Method: the mean remaining times m solve l_i m_i - sum_j r_ij m_j = 1
// over the states the start reaches before the passage ends (l_i the
// total rate out of i, target-labelled self-loops included, r_ij the rates
// that do not end the passage). The system is split into its strongly
// connected blocks, solved successors first: a block of one state
// directly, a block of up to 600 states by dense state reduction without
// subtraction (solveDense: small relative error in every value however
// stiff the rates), a larger one by Gauss-Seidel sweeps on flat
// arrays with a coarse correction until a bound on the error of every value
// is below 1e-12 relative, or rounding stops it (see solveIterative). A large block on which the sweeps do not get there
// gives ErrMeanUnavailable.
func MeanTimes(ctx context.Context, c *ctmc.Chain, pr Problem) (mean, maxRemaining float64, err error) {
	sys, inf := meanSystem(c, pr)
	if inf {
		return math.Inf(1), math.Inf(1), nil
	}
	m, err := sys.solve(ctx)
	if err != nil {
		return 0, 0, err
	}
	for k, i := range sys.global {
		mean += pr.Alpha[i] * m[k]
		maxRemaining = math.Max(maxRemaining, m[k])
	}
	return mean, maxRemaining, nil
}

// meanSys is the mean-time system on the reachable transient states, in
// local numbering: row k is global state global[k], with total leaving
// rate leave[k] and off-diagonal entries (col, rate) of transitions that
// stay among them.
type meanSys struct {
	global []int32
	leave  []float64
	end    []float64 // rate of the transitions that end the passage
	ptr    []int64
	col    []int32
	rate   []float64
}

// meanSystem builds the system, or reports that the mean is infinite.
func meanSystem(c *ctmc.Chain, pr Problem) (*meanSys, bool) {
	n := c.N
	mask := targetMask([]Problem{pr})
	inTarget := func(i int32) bool { return pr.TargetStates != nil && pr.TargetStates[i] }
	ends := func(e int64) bool { return mask.of(c.Act[e]) != 0 || inTarget(c.Col[e]) }
	// Forward from the start, through transitions that do not end the
	// passage: the states whose mean remaining time matters.
	local := make([]int32, n)
	for i := range local {
		local[i] = -1
	}
	var order []int32
	for i, x := range pr.Alpha {
		if x > 0 && !inTarget(int32(i)) && local[i] < 0 {
			local[i] = int32(len(order))
			order = append(order, int32(i))
		}
	}
	for h := 0; h < len(order); h++ {
		i := order[h]
		for e := c.RowPtr[i]; e < c.RowPtr[i+1]; e++ {
			if j := c.Col[e]; !ends(e) && local[j] < 0 {
				local[j] = int32(len(order))
				order = append(order, j)
			}
		}
	}
	sys := &meanSys{global: order, leave: make([]float64, len(order)), end: make([]float64, len(order)), ptr: make([]int64, 1, len(order)+1)}
	canEnd := make([]bool, len(order))
	for k, i := range order {
		for e := c.RowPtr[i]; e < c.RowPtr[i+1]; e++ {
			j := c.Col[e]
			if ends(e) {
				sys.leave[k] += c.RateAt(e)
				sys.end[k] += c.RateAt(e)
				canEnd[k] = true
				continue
			}
			if j == i {
				continue
			}
			sys.leave[k] += c.RateAt(e)
			sys.col = append(sys.col, local[j])
			sys.rate = append(sys.rate, c.RateAt(e))
		}
		sys.ptr = append(sys.ptr, int64(len(sys.col)))
	}
	// Every reachable state must be able to end: backward search from
	// those that can, over the reversed local graph.
	rptr := make([]int64, len(order)+1)
	for _, j := range sys.col {
		rptr[j+1]++
	}
	for k := range order {
		rptr[k+1] += rptr[k]
	}
	rsrc := make([]int32, len(sys.col))
	fill := append([]int64(nil), rptr[:len(order)]...)
	for k := range order {
		for e := sys.ptr[k]; e < sys.ptr[k+1]; e++ {
			j := sys.col[e]
			rsrc[fill[j]] = int32(k)
			fill[j]++
		}
	}
	var stack []int32
	for k, ok := range canEnd {
		if ok {
			stack = append(stack, int32(k))
		}
	}
	for len(stack) > 0 {
		j := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for e := rptr[j]; e < rptr[j+1]; e++ {
			if i := rsrc[e]; !canEnd[i] {
				canEnd[i] = true
				stack = append(stack, i)
			}
		}
	}
	for _, ok := range canEnd {
		if !ok {
			return nil, true
		}
	}
	return sys, false
}

// solve returns the mean remaining times, block by block in the order
// Tarjan's algorithm completes them (every block after the blocks it
// leads to).
func (s *meanSys) solve(ctx context.Context) ([]float64, error) {
	n := len(s.global)
	m := make([]float64, n)
	flat, bptr := s.blocks()
	inBlock := make([]int32, n) // 1 + index of the block being solved, for membership
	for b := 0; b+1 < len(bptr); b++ {
		blk := flat[bptr[b]:bptr[b+1]]
		if b&255 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		switch {
		case len(blk) == 1:
			k := blk[0]
			sum := 1.0
			for e := s.ptr[k]; e < s.ptr[k+1]; e++ {
				if j := s.col[e]; j != k {
					sum += s.rate[e] * m[j]
				}
			}
			m[k] = sum / s.leave[k]
		case len(blk) <= denseBlock:
			if err := s.solveDense(blk, inBlock, int32(b+1), m); err != nil {
				return nil, err
			}
		default:
			if err := s.solveIterative(ctx, blk, inBlock, int32(b+1), m); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// solveDense solves one block by state reduction without subtraction, the
// GTH idea applied to mean times: eliminating state k folds its row into
// every row i that enters it (r_ij += r_ik r_kj / l_k, the constant and the
// rate out of the block likewise), and each remaining state's total rate
// l_i is recomputed as its rate out of the block plus its rates to the
// states not yet eliminated, a sum of positive terms, never l_i minus the
// self-loop the elimination creates. Every operation adds, multiplies or
// divides positive numbers, so every mean has a small relative error
// however stiff the rates (partial-pivoting LU lost 4e-7 on a 6-state chain
// with rates from 2.5e-4 to 5.9e3, found by the differential test). The
// values of the states outside the block are final.
func (s *meanSys) solveDense(blk []int32, inBlock []int32, id int32, m []float64) error {
	size := len(blk)
	pos := make(map[int32]int, size)
	for p, k := range blk {
		pos[k] = p
		inBlock[k] = id
	}
	r := make([]float64, size*size) // r[p*size+q]: rate from p to q inside the block
	out := make([]float64, size)    // rate out of the block (ending the passage or to solved states)
	cst := make([]float64, size)    // 1 + sum over solved states j of r_pj m_j
	for p, k := range blk {
		cst[p], out[p] = 1, s.end[k]
		for e := s.ptr[k]; e < s.ptr[k+1]; e++ {
			j := s.col[e]
			if inBlock[j] == id {
				r[p*size+pos[j]] += s.rate[e]
			} else {
				out[p] += s.rate[e]
				cst[p] += s.rate[e] * m[j]
			}
		}
	}
	l := make([]float64, size) // l[k]: total rate of k when it is eliminated
	for k := size - 1; k >= 0; k-- {
		rk := r[k*size : k*size+k]
		lk := out[k]
		for _, x := range rk {
			lk += x
		}
		if !(lk > 0) {
			return fmt.Errorf("%w: a state of the block cannot leave it", ErrMeanUnavailable)
		}
		l[k] = lk
		for i := 0; i < k; i++ {
			rik := r[i*size+k]
			if rik == 0 {
				continue
			}
			f := rik / lk
			out[i] += f * out[k]
			cst[i] += f * cst[k]
			ri := r[i*size : i*size+k]
			for j, x := range rk {
				if j != i && x != 0 {
					ri[j] += f * x
				}
			}
		}
	}
	local := make([]float64, size)
	for k := 0; k < size; k++ {
		v := cst[k]
		for j, x := range r[k*size : k*size+k] {
			v += x * local[j]
		}
		v /= l[k]
		if !(v >= 0) || math.IsInf(v, 0) {
			return fmt.Errorf("%w: the elimination gave %g for a mean remaining time", ErrMeanUnavailable, v)
		}
		local[k] = v
		m[blk[k]] = v
	}
	return nil
}

// solveIterative solves one large block by Gauss-Seidel sweeps, started
// from the block's coarse solution and each followed by a coarse
// correction: a constant added to every value of the
// block so that the residuals sum to zero. The constant vector is the
// slow mode of a block that is left at a small rate from everywhere (a
// target reached rarely, other machines cycling fast), where plain sweeps
// would take about (rate inside / rate out) sweeps; the correction removes
// it in one step.
//
// Residuals are computed as base + sum_j r_kj (m_j - m_k) - exit_k m_k
// (exit_k the rate out of the block), never as a difference of the large
// l_k m_k and sum_j r_kj m_j, so they stay accurate on stiff blocks.
// Since the block's matrix A is an M-matrix with A^-1 1 at most the
// largest mean remaining time M, the error of every value is at most
// max|residual| * M; the sweeps stop when that is below 1e-12 times the
// smallest value of the block, or when the residuals are down to the
// rounding level of the values themselves (16 ulps of l_k m_k: the
// values are then a fixed point of the sweep in floating point), and give
// ErrMeanUnavailable after 20,000 sweeps or 200 without progress.
func (s *meanSys) solveIterative(ctx context.Context, blk []int32, inBlock []int32, id int32, m []float64) error {
	for _, k := range blk {
		inBlock[k] = id
	}
	// The constant part of each equation, 1 plus the flow to states
	// outside the block (whose values are final), and the rate at which
	// each state leaves the block, summed without cancellation.
	base := make([]float64, len(blk))
	exit := make([]float64, len(blk))
	sumExit := 0.0
	for p, k := range blk {
		base[p] = 1
		exit[p] = s.end[k]
		for e := s.ptr[k]; e < s.ptr[k+1]; e++ {
			if j := s.col[e]; inBlock[j] != id {
				base[p] += s.rate[e] * m[j]
				exit[p] += s.rate[e]
			}
		}
		sumExit += exit[p]
	}
	// Start from the coarse solution, one value for the whole block
	// (total constant flow over total exit rate): exact when every state
	// leaves the block at the same rate towards the same values, as when
	// the block is other machines cycling while this one holds still.
	sumBase := 0.0
	for _, b := range base {
		sumBase += b
	}
	if c := sumBase / sumExit; sumExit > 0 && !math.IsInf(c, 0) {
		for _, k := range blk {
			m[k] = c
		}
	}
	residual := func(p int, k int32) float64 {
		r := base[p] - exit[p]*m[k]
		mk := m[k]
		for e := s.ptr[k]; e < s.ptr[k+1]; e++ {
			if j := s.col[e]; inBlock[j] == id {
				r += s.rate[e] * (m[j] - mk)
			}
		}
		return r
	}
	const tol = 1e-12
	const maxSweeps = 20_000
	best, since := math.Inf(1), 0
	for sweep := 1; sweep <= maxSweeps; sweep++ {
		if sweep&7 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		// Sweep backwards: Tarjan lists a block's states roughly from the
		// target outwards, so the newest values flow towards the start.
		for p := len(blk) - 1; p >= 0; p-- {
			k := blk[p]
			m[k] += residual(p, k) / s.leave[k]
		}
		worst, sumRes, noise := 0.0, 0.0, 0.0
		lo, hi := math.Inf(1), 0.0
		for p, k := range blk {
			r := residual(p, k)
			sumRes += r
			worst = math.Max(worst, math.Abs(r))
			lo, hi = math.Min(lo, m[k]), math.Max(hi, m[k])
			noise = math.Max(noise, s.leave[k]*m[k]+base[p])
		}
		bound := worst * hi
		if bound <= tol*lo {
			return nil
		}
		// Residuals at the rounding level of the values themselves: the
		// values are a fixed point of the sweep in floating point.
		if worst <= 16*0x1p-52*noise {
			return nil
		}
		if c := sumRes / sumExit; sumExit > 0 && !math.IsNaN(c) && !math.IsInf(c, 0) {
			for _, k := range blk {
				m[k] += c
			}
		}
		if bound < best*(1-1e-3) {
			best, since = bound, 0
		} else if since++; since > 200 {
			break
		}
	}
	return fmt.Errorf("%w: the iteration on a block of %d states did not bound the error below %g relative", ErrMeanUnavailable, len(blk), tol)
}

// blocks returns the strongly connected blocks of the system's graph in
// the order Tarjan's algorithm completes them (a block comes after every
// block it has a transition into), as block b = flat[ptr[b]:ptr[b+1]].
// Iterative, so deep chains do not overflow the stack.
func (s *meanSys) blocks() (flat []int32, ptr []int) {
	n := len(s.global)
	index := make([]int32, n)
	low := make([]int32, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i] = -1
	}
	var stack []int32
	type frame struct {
		v int32
		e int64
	}
	var call []frame
	flat = make([]int32, 0, n)
	ptr = []int{0}
	next := int32(0)
	for root := int32(0); int(root) < n; root++ {
		if index[root] >= 0 {
			continue
		}
		call = append(call[:0], frame{root, s.ptr[root]})
		index[root], low[root] = next, next
		next++
		stack = append(stack, root)
		onStack[root] = true
		for len(call) > 0 {
			f := &call[len(call)-1]
			v := f.v
			if f.e < s.ptr[v+1] {
				w := s.col[f.e]
				f.e++
				if index[w] < 0 {
					index[w], low[w] = next, next
					next++
					stack = append(stack, w)
					onStack[w] = true
					call = append(call, frame{w, s.ptr[w]})
				} else if onStack[w] {
					low[v] = min(low[v], index[w])
				}
				continue
			}
			call = call[:len(call)-1]
			if len(call) > 0 {
				u := call[len(call)-1].v
				low[u] = min(low[u], low[v])
			}
			if low[v] == index[v] {
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					onStack[w] = false
					flat = append(flat, w)
					if w == v {
						break
					}
				}
				ptr = append(ptr, len(flat))
			}
		}
	}
	return flat, ptr
}
