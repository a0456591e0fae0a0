package passage

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"pepa/ctmc"
	"pepa/ctmc/elim"
	"pepa/internal/membudget"
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

// MeanOptions controls MeanTimesWith.
type MeanOptions struct {
	// DenseBlock, when positive, replaces the largest strongly connected
	// block solved by dense elimination (600): smaller values send small
	// blocks down the iterative path (tests).
	DenseBlock int
}

// MeanStats says how a mean was solved: the strongly connected blocks of
// the system, by method.
type MeanStats struct {
	Single, Dense, Iterative int
	// Fallback counts the blocks the sweeps could not vouch for, solved
	// by elimination instead (counted in Dense too).
	Fallback int
}

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
//
// Memory: the system reads the transitions and their rates from the chain
// itself (Chain.RateAt: the rate table where Derive made one), and adds a
// bit a transition (whether it ends the passage) and about 70 bytes a
// state; it never copies the transitions or their rates.
func MeanTimes(ctx context.Context, c *ctmc.Chain, pr Problem) (mean, maxRemaining float64, err error) {
	mean, maxRemaining, _, err = MeanTimesWith(ctx, c, pr, MeanOptions{})
	return mean, maxRemaining, err
}

// MeanTimesWith is MeanTimes with options, and says how the system was
// solved.
func MeanTimesWith(ctx context.Context, c *ctmc.Chain, pr Problem, opt MeanOptions) (mean, maxRemaining float64, stats MeanStats, err error) {
	if c.Col == nil && c.N > 0 {
		return 0, 0, stats, fmt.Errorf("%w: the chain's transitions were released", ErrMeanUnavailable)
	}
	if err := membudget.Check(ctx, fmt.Sprintf("passage: the mean's linear system over %d states", c.N), meanBytes(c), ""); err != nil {
		return 0, 0, stats, fmt.Errorf("%w: %w", ErrMeanUnavailable, err)
	}
	sys := meanSystem(c, pr)
	sys.denseBlock = denseBlock
	if opt.DenseBlock > 0 {
		sys.denseBlock = opt.DenseBlock
	}
	m, err := sys.solve(ctx)
	stats = sys.stats
	if errors.Is(err, errNeverEnds) {
		return math.Inf(1), math.Inf(1), stats, nil
	}
	if err != nil {
		return 0, 0, stats, err
	}
	for _, i := range sys.states {
		mean += pr.Alpha[i] * m[i]
		maxRemaining = math.Max(maxRemaining, m[i])
	}
	return mean, maxRemaining, stats, nil
}

// errNeverEnds: some state the start reaches cannot end the passage.
var errNeverEnds = errors.New("the passage may never end")

// meanSys is the mean-time system on the states the start reaches before
// the passage ends (states, in breadth-first order), numbered as in the
// chain: state k has total leaving rate leave[k] (end[k] of it ending the
// passage), and its off-diagonal entries are the chain's own transitions
// e of row k whose target next(e, k) is not -1, at rate c.RateAt(e).
// Nothing per transition is copied but one bit: whether it ends the
// passage.
type meanSys struct {
	c       *ctmc.Chain
	states  []int32
	leave   []float64 // indexed by the chain's states, like every per-state array below
	end     []float64 // rate of the transitions that end the passage
	endBits []uint64  // bit e: transition e ends the passage (set on the system's rows)
	// denseBlock is the largest block solved by dense elimination.
	denseBlock int
	stats      MeanStats
}

// row is the range of the chain's transitions of state k.
func (s *meanSys) row(k int32) (lo, hi int64) { return s.c.RowPtr[k], s.c.RowPtr[k+1] }

// next is the target of transition e of state k, or -1 if e ends the
// passage or is a self-loop (not an entry of the system).
func (s *meanSys) next(e int64, k int32) int32 {
	if s.endBits[e>>6]>>(uint64(e)&63)&1 != 0 {
		return -1
	}
	if j := s.c.Col[e]; j != k {
		return j
	}
	return -1
}

// meanSystem builds the system on the states the start reaches.
func meanSystem(c *ctmc.Chain, pr Problem) *meanSys {
	n := c.N
	mask := targetMask([]Problem{pr})
	inTarget := func(i int32) bool { return pr.TargetStates != nil && pr.TargetStates[i] }
	ends := func(e int64) bool { return mask.of(c.Act[e]) != 0 || inTarget(c.Col[e]) }
	// states has room for every state from the start: growing it copied
	// it again and again (0.45 s of a 5.8M-state chain's solve).
	sys := &meanSys{c: c, states: make([]int32, 0, n), leave: make([]float64, n), end: make([]float64, n), endBits: make([]uint64, (len(c.Col)+63)/64)}
	// Forward from the start, through transitions that do not end the
	// passage: the states whose mean remaining time matters.
	seen := make([]bool, n)
	for i, x := range pr.Alpha {
		if x > 0 && !inTarget(int32(i)) && !seen[i] {
			seen[i] = true
			sys.states = append(sys.states, int32(i))
		}
	}
	for h := 0; h < len(sys.states); h++ {
		i := sys.states[h]
		for e := c.RowPtr[i]; e < c.RowPtr[i+1]; e++ {
			x := c.RateAt(e)
			if ends(e) {
				sys.endBits[e>>6] |= 1 << (uint64(e) & 63)
				sys.leave[i] += x
				sys.end[i] += x
				continue
			}
			j := c.Col[e]
			if j == i {
				continue
			}
			sys.leave[i] += x
			if !seen[j] {
				seen[j] = true
				sys.states = append(sys.states, j)
			}
		}
	}
	return sys
}

// solve returns the mean remaining times, block by block in the order
// Tarjan's algorithm completes them (every block after the blocks it
// leads to), or errNeverEnds if some block can neither end the passage
// nor lead to a block that can.
func (s *meanSys) solve(ctx context.Context) ([]float64, error) {
	n := s.c.N
	m := make([]float64, n)
	flat, bptr := s.blocks()
	inBlock := make([]int32, n) // 1 + index of the block being solved, for membership
	canEnd := make([]bool, n)
	for b := 0; b+1 < len(bptr); b++ {
		blk := flat[bptr[b]:bptr[b+1]]
		if b&255 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		// The blocks it leads to are done: it can end if one of its states
		// ends the passage or enters one of them that can.
		id := int32(b + 1)
		for _, k := range blk {
			inBlock[k] = id
		}
		ok := false
		for _, k := range blk {
			if s.end[k] > 0 {
				ok = true
				break
			}
			lo, hi := s.row(k)
			for e := lo; e < hi; e++ {
				if j := s.next(e, k); j >= 0 && inBlock[j] != id && canEnd[j] {
					ok = true
					break
				}
			}
			if ok {
				break
			}
		}
		if !ok {
			return nil, errNeverEnds
		}
		for _, k := range blk {
			canEnd[k] = true
		}
		switch {
		case len(blk) == 1:
			s.stats.Single++
			k := blk[0]
			sum := 1.0
			lo, hi := s.row(k)
			for e := lo; e < hi; e++ {
				if j := s.next(e, k); j >= 0 {
					sum += s.c.RateAt(e) * m[j]
				}
			}
			m[k] = sum / s.leave[k]
		case len(blk) <= s.denseBlock:
			s.stats.Dense++
			if err := s.solveDense(ctx, blk, inBlock, id, m); err != nil {
				return nil, err
			}
		default:
			err := s.solveIterative(ctx, blk, inBlock, id, m)
			if errors.Is(err, ErrMeanUnavailable) && len(blk) <= denseFallback &&
				membudget.Check(ctx, fmt.Sprintf("passage: the mean's elimination of a block of %d states", len(blk)), int64(len(blk))*int64(len(blk))*8, "") == nil {
				// The sweeps cannot vouch for their values (rounding on
				// stiff rates); elimination keeps every value accurate.
				s.stats.Dense++
				s.stats.Fallback++
				err = s.solveDense(ctx, blk, inBlock, id, m)
			} else if err == nil {
				s.stats.Iterative++
			}
			if err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// solveDense solves one block by state reduction without subtraction
// (package ctmc/elim: the GTH idea applied to mean times): the block's
// rates between its states, its rate out of the block (ending the passage
// or to solved states) as Out, and 1 plus the flow to solved states times
// their means as the right-hand side. Every mean has a small relative
// error however stiff the rates (partial-pivoting LU lost 4e-7 on a
// 6-state chain with rates from 2.5e-4 to 5.9e3, found by the
// differential test). The values of the states outside the block are
// final.
func (s *meanSys) solveDense(ctx context.Context, blk []int32, inBlock []int32, id int32, m []float64) error {
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
		lo, hi := s.row(k)
		for e := lo; e < hi; e++ {
			j := s.next(e, k)
			if j < 0 {
				continue
			}
			if x := s.c.RateAt(e); inBlock[j] == id {
				r[p*size+pos[j]] += x
			} else {
				out[p] += x
				cst[p] += x * m[j]
			}
		}
	}
	block := elim.Block{N: size, Rates: r, Out: [][]float64{out}, Cols: [][]float64{cst}}
	if err := block.Reduce(ctx); err != nil {
		if errors.As(err, new(*elim.PivotError)) {
			return fmt.Errorf("%w: a state of the block cannot leave it (%w)", ErrMeanUnavailable, err)
		}
		return err
	}
	local := make([]float64, size)
	block.SolveRight(cst, local)
	for k, v := range local {
		if !(v >= 0) || math.IsInf(v, 0) {
			return fmt.Errorf("%w: the elimination gave %g for a mean remaining time", ErrMeanUnavailable, v)
		}
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
// Stopping: the block's equations are A m = b, A an M-matrix (A^-1 >= 0)
// and b >= 1 (1 plus the flow to solved states), so m* = A^-1 b. With the
// residual r = b - A m, |m* - m| = |A^-1 r| <= A^-1 |r|, and if |r_k| <=
// rho b_k for every k then A^-1 |r| <= rho A^-1 b = rho m*: every value has
// a relative error of at most rho = max_k |r_k| / b_k. The residuals are
// computed as b_k + sum_j r_kj (m_j - m_k) - exit_k m_k (exit_k the rate out
// of the block) and the rounding of that sum (8 unit roundoffs of the sum
// of its terms' magnitudes) is added to |r_k| before dividing, so rho is a
// bound on the error, not an estimate. The sweeps stop when rho is below
// 1e-12 with every value positive and finite; otherwise, after 20,000
// sweeps or 200 without progress, ErrMeanUnavailable. (Residuals at the
// rounding level of stiff rates can keep rho far above 1e-12 however close
// the values are; solve then falls back to dense elimination on blocks
// small enough for it.)
//
// A block of at least orderedBlock states is swept in the chain's order
// first, so that rows are read as they are stored: in Tarjan's order,
// scattered through memory, the same sweeps took four times as long (a
// block of 240,100 states of 1.2M, 11.3M transitions). The order changes
// how fast the sweeps converge (a 24-state block of the Active Badge model
// that converges in Tarjan's order stalls in the chain's), so a block on
// which they do not get there in the chain's order is solved again in
// Tarjan's.
func (s *meanSys) solveIterative(ctx context.Context, blk []int32, inBlock []int32, id int32, m []float64) error {
	for _, k := range blk {
		inBlock[k] = id
	}
	if len(blk) >= orderedBlock {
		sorted := slices.Clone(blk)
		slices.Sort(sorted)
		if err := s.sweeps(ctx, sorted, inBlock, id, m); !errors.Is(err, ErrMeanUnavailable) {
			return err
		}
	}
	return s.sweeps(ctx, blk, inBlock, id, m)
}

// orderedBlock is the smallest block swept in the chain's order first (a
// variable so that tests can send small blocks this way).
var orderedBlock = 1 << 16

// denseFallback is the largest block that solve eliminates densely when
// the sweeps cannot bound its error (at most 2,000^2 * 8 bytes = 32 MB and
// a few seconds).
const denseFallback = 2000

// sweeps runs the Gauss-Seidel sweeps of solveIterative on the block's
// states in the order given.
func (s *meanSys) sweeps(ctx context.Context, blk []int32, inBlock []int32, id int32, m []float64) error {
	// The constant part of each equation, 1 plus the flow to states
	// outside the block (whose values are final), and the rate at which
	// each state leaves the block, summed without cancellation.
	base := make([]float64, len(blk))
	exit := make([]float64, len(blk))
	sumExit := 0.0
	for p, k := range blk {
		base[p] = 1
		exit[p] = s.end[k]
		lo, hi := s.row(k)
		for e := lo; e < hi; e++ {
			if j := s.next(e, k); j >= 0 && inBlock[j] != id {
				base[p] += s.c.RateAt(e) * m[j]
				exit[p] += s.c.RateAt(e)
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
	// residual returns r_k and the sum of the magnitudes of its terms.
	residual := func(p int, k int32) (float64, float64) {
		mk := m[k]
		r := base[p] - exit[p]*mk
		mag := base[p] + exit[p]*math.Abs(mk)
		lo, hi := s.row(k)
		for e := lo; e < hi; e++ {
			if j := s.next(e, k); j >= 0 && inBlock[j] == id {
				d := s.c.RateAt(e) * (m[j] - mk)
				r += d
				mag += math.Abs(d)
			}
		}
		return r, mag
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
			r, _ := residual(p, k)
			m[k] += r / s.leave[k]
		}
		rho, sumRes := 0.0, 0.0
		valid := true
		for p, k := range blk {
			r, mag := residual(p, k)
			sumRes += r
			rho = math.Max(rho, (math.Abs(r)+8*0x1p-53*mag)/base[p])
			valid = valid && m[k] > 0 && !math.IsInf(m[k], 0)
		}
		if !valid || math.IsNaN(rho) {
			break // diverged: no value to vouch for
		}
		if rho <= tol {
			return nil
		}
		if c := sumRes / sumExit; sumExit > 0 && !math.IsNaN(c) && !math.IsInf(c, 0) {
			for _, k := range blk {
				m[k] += c
			}
		}
		if rho < best*(1-1e-3) {
			best, since = rho, 0
		} else if since++; since > 200 {
			break
		}
	}
	return fmt.Errorf("%w: the iteration on a block of %d states did not bound the error below %g relative", ErrMeanUnavailable, len(blk), tol)
}

// blocks returns the strongly connected blocks of the system's graph in
// the order Tarjan's algorithm completes them (a block comes after every
// block it has a transition into), as block b = flat[ptr[b]:ptr[b+1]]
// (ctmc.StrongComponents, from the system's states).
func (s *meanSys) blocks() (flat []int32, ptr []int) {
	g := ctmc.Graph{N: s.c.N, Edges: func(v int32) (int64, int64) { return s.row(v) }, Target: func(v int32, e int64) int32 { return s.next(e, v) }}
	return ctmc.StrongComponents(g, s.states, len(s.states))
}
