package steady

import (
	"context"
	"fmt"
	"math"
	"sync"

	"pepa/ctmc"
	"pepa/ctmc/elim"
)

// sweeper solves one closed class's balance equations pi Q = 0 by
// Gauss-Seidel sweeps over the chain's own rows: no generator is built
// and no rate is copied, so the memory is the chain's and two vectors
// over its states (three when the sweep is split between two goroutines).
//
// The chain is stored by rows (a state's outgoing transitions), where
// Gauss-Seidel reads columns (a state's inflow). The sweeps therefore
// push instead of pulling: acc[j] holds the inflow of state j, sum over
// i != j of pi_i q_ij, with the current values of every pi_i. Updating
// state i sets pi_i = acc[i] / q_i (its balance equation) and pushes the
// change d = pi_i(new) - pi_i(old) along i's transitions, d q_ij into
// acc[j]; so acc stays the inflow of the current vector, states after i
// see the new pi_i in this sweep and states before it in the next, which
// is Gauss-Seidel exactly. Self-loops are left out (they do not move the
// chain).
//
// A large class is cut into two blocks of consecutive states swept at the
// same time, each by its own goroutine: a change pushed into the other
// block's states goes to buf, which that block adds to its inflows after
// the sweep. Within a block this is Gauss-Seidel; across the cut the new
// values arrive one sweep later, which the measured contraction includes.
// The cut does not depend on the number of cores (a single core sweeps the
// two blocks one after the other), so results are bit-for-bit the same
// whatever GOMAXPROCS is.
type sweeper struct {
	c *ctmc.Chain
	// states lists the class's states in increasing order; nil means
	// every state of the chain.
	states []int32
	n      int // class size
	pi     []float64
	acc    []float64
	buf    []float64 // cross-block changes (nil with one block)
	// cut is the position in states where the second block starts
	// (n with one block); lo1 is the chain index of its first state.
	cut int
	lo1 int32
	// exitIdx[i] indexes state i's exit rate q_i in exitTab when the
	// class has at most 65,536 distinct exit rates (2 bytes a state);
	// otherwise exitIdx is nil and q_i is summed from the row each time.
	exitIdx []uint16
	exitTab []float64
	// rateTab is the chain's rate table in an array indexed by the 2-byte
	// rate indices, so that a lookup needs no bounds check (512 KB of
	// address space, of which the pages of the table's entries are used).
	rateTab *[1 << 16]float64
	// sum is the running sum of pi over the class.
	sum float64
	// The state of run: what it measured so far, the last few ratios of
	// successive sweeps' largest relative changes, and the last change.
	out    sweepOutcome
	ratios [rateWindow]float64
	prev   float64
	// At every checkpoint (every aggEvery sweeps) the throughputs are
	// formed: last holds them (normalised) and lastOK whether it does;
	// moves the largest relative change of a throughput between the last
	// three checkpoints ([0] the latest).
	last   []float64
	lastOK bool
	x, xc  []float64 // throughput sums of freshThroughputs
	moves  [3]float64
	checks int
	// agg corrects the vector at every checkpoint (nil: no leaf to
	// aggregate over, or the corrections did not help); correctedAt is
	// the checkpoint after which it last did, strikes the corrections
	// after which the throughputs moved more than before them.
	agg         *aggregator
	gath        *gatherer
	correctedAt int
	strikes     int
	corrections int
	// refreshed says the inflows were formed afresh after a refused
	// update (sweep); refreshes counts those.
	refreshed bool
	refreshes int
}

// sweepParallelStates is the class size from which a sweep is cut in two
// blocks swept by two goroutines, when Options.Goroutines asks for
// two.
const sweepParallelStates = 100_000

// newSweeper prepares the sweeps of a class, starting from the uniform
// vector.
func newSweeper(c *ctmc.Chain, states []int32, twoBlocks bool) *sweeper {
	n := c.N
	if states != nil {
		n = len(states)
	}
	s := &sweeper{c: c, states: states, n: n, pi: make([]float64, c.N), acc: make([]float64, c.N), cut: n, prev: math.Inf(1), correctedAt: -1}
	s.moves = [3]float64{math.Inf(1), math.Inf(1), math.Inf(1)}
	if twoBlocks && n >= 2 {
		s.cut = n / 2
		s.lo1 = s.state(s.cut)
		s.buf = make([]float64, c.N)
	}
	s.exitRates()
	if c.RateIndex != nil {
		s.rateTab = new([1 << 16]float64)
		copy(s.rateTab[:], c.RateTable)
	}
	s.agg = newAggregator(c)
	if s.agg != nil {
		s.gath = newGatherer(s.agg)
	}
	s.x, s.xc = make([]float64, len(c.S.Actions)), make([]float64, len(c.S.Actions))
	v := 1 / float64(n)
	for k := 0; k < n; k++ {
		s.pi[s.state(k)] = v
	}
	s.fresh()
	return s
}

// exitRates tabulates the class's distinct exit rates, as PRISM's sparse
// engine does its diagonal, if there are at most 65,536 of them.
func (s *sweeper) exitRates() {
	idx := make([]uint16, s.c.N)
	at := map[float64]uint16{}
	var tab []float64
	for k := 0; k < s.n; k++ {
		i := s.state(k)
		q := s.exitRate(i)
		x, ok := at[q]
		if !ok {
			if len(tab) == 1<<16 {
				return
			}
			x = uint16(len(tab))
			at[q] = x
			tab = append(tab, q)
		}
		idx[i] = x
	}
	s.exitIdx, s.exitTab = idx, tab
}

func (s *sweeper) state(k int) int32 {
	if s.states == nil {
		return int32(k)
	}
	return s.states[k]
}

// exitRate is q_i, the rate of i's transitions to other states, summed in
// row order.
func (s *sweeper) exitRate(i int32) float64 {
	c := s.c
	q := 0.0
	lo, hi := c.RowPtr[i], c.RowPtr[i+1]
	if c.RateIndex != nil {
		col, idx, tab := c.Col[lo:hi], c.RateIndex[lo:hi], c.RateTable
		idx = idx[:len(col)]
		for t, j := range col {
			if j != i {
				q += tab[idx[t]]
			}
		}
		return q
	}
	col, rates := c.Col[lo:hi], c.Rates[lo:hi]
	rates = rates[:len(col)]
	for t, j := range col {
		if j != i {
			q += rates[t]
		}
	}
	return q
}

// fresh recomputes every inflow from the current vector (the pushed
// changes accumulate rounding over many sweeps), and the sum.
func (s *sweeper) fresh() {
	c := s.c
	for k := 0; k < s.n; k++ {
		s.acc[s.state(k)] = 0
	}
	s.sum = 0
	for k := 0; k < s.n; k++ {
		i := s.state(k)
		p := s.pi[i]
		s.sum += p
		for e := c.RowPtr[i]; e < c.RowPtr[i+1]; e++ {
			if j := c.Col[e]; j != i {
				s.acc[j] += p * c.RateAt(e)
			}
		}
	}
}

// freshThroughputs is fresh, also forming every action's throughput
// (compensated sums, normalised by the vector's sum), in s.x.
func (s *sweeper) freshThroughputs() []float64 {
	c := s.c
	x, xc := s.x, s.xc
	clear(x)
	clear(xc)
	for k := 0; k < s.n; k++ {
		s.acc[s.state(k)] = 0
	}
	var sum, sc float64
	for k := 0; k < s.n; k++ {
		i := s.state(k)
		p := s.pi[i]
		sum, sc = elim.AddCompensated(sum, sc, p)
		for e := c.RowPtr[i]; e < c.RowPtr[i+1]; e++ {
			f := p * c.RateAt(e)
			a := c.Act[e]
			x[a], xc[a] = elim.AddCompensated(x[a], xc[a], f)
			if j := c.Col[e]; j != i {
				s.acc[j] += f
			}
		}
	}
	sum += sc
	s.sum = sum
	for a := range x {
		x[a] = (x[a] + xc[a]) / sum
	}
	return x
}

// blockStats is what one block's sweep measured.
type blockStats struct {
	maxRel float64 // the largest |change| / new value
	sum    float64 // the sum of the changes
	bad    int32   // a state whose new value is not positive and finite, or -1
}

// sweepBlock updates the states at positions lo..hi-1. Changes to states
// of the chain index range [inLo, inHi] go to acc, others to buf.
func (s *sweeper) sweepBlock(lo, hi int, inLo, inHi int32, st *blockStats) {
	if s.states == nil && s.exitIdx != nil && s.c.RateIndex != nil {
		s.sweepRows(lo, hi, inLo, inHi, st)
		return
	}
	c := s.c
	pi, acc, buf := s.pi, s.acc, s.buf
	rowPtr, colAll := c.RowPtr, c.Col
	st.bad = -1
	maxRel, sum := 0.0, 0.0
	indexed := c.RateIndex != nil
	tab := c.RateTable
	for k := lo; k < hi; k++ {
		i := s.state(k)
		r0, r1 := rowPtr[i], rowPtr[i+1]
		col := colAll[r0:r1]
		var q float64
		var idx []uint16
		var rates []float64
		if indexed {
			idx = c.RateIndex[r0:r1]
			idx = idx[:len(col)]
			for t, j := range col {
				if j != i {
					q += tab[idx[t]]
				}
			}
		} else {
			rates = c.Rates[r0:r1]
			rates = rates[:len(col)]
			for t, j := range col {
				if j != i {
					q += rates[t]
				}
			}
		}
		p := acc[i] / q
		if !(p > 0) || math.IsInf(p, 0) {
			if st.bad < 0 {
				st.bad = i
			}
			continue
		}
		d := p - pi[i]
		pi[i] = p
		if d == 0 {
			continue
		}
		sum += d
		if r := math.Abs(d) / p; r > maxRel {
			maxRel = r
		}
		if indexed {
			for t, j := range col {
				if j == i {
					continue
				}
				if j >= inLo && j <= inHi {
					acc[j] += d * tab[idx[t]]
				} else {
					buf[j] += d * tab[idx[t]]
				}
			}
		} else {
			for t, j := range col {
				if j == i {
					continue
				}
				if j >= inLo && j <= inHi {
					acc[j] += d * rates[t]
				} else {
					buf[j] += d * rates[t]
				}
			}
		}
	}
	st.maxRel, st.sum = maxRel, sum
}

// sweepRows is sweepBlock for a class that is the whole chain, with 2-byte
// rate indices and tabulated exit rates: one pass over each row.
func (s *sweeper) sweepRows(lo, hi int, inLo, inHi int32, st *blockStats) {
	c := s.c
	rowPtr := c.RowPtr[lo : hi+1]
	colAll, idxAll, tab := c.Col, c.RateIndex, s.rateTab
	xidx, xtab := s.exitIdx[lo:hi], s.exitTab
	pi, acc, buf := s.pi[lo:hi], s.acc, s.buf
	st.bad = -1
	maxRel, sum := 0.0, 0.0
	cross := buf != nil
	for k := range pi {
		i := int32(lo + k)
		p := acc[i] / xtab[xidx[k]]
		if !(p > 0) || p > math.MaxFloat64 {
			if st.bad < 0 {
				st.bad = i
			}
			continue
		}
		d := p - pi[k]
		pi[k] = p
		if d == 0 {
			continue
		}
		sum += d
		if a := math.Abs(d); a > maxRel*p {
			maxRel = a / p
		}
		r0, r1 := rowPtr[k], rowPtr[k+1]
		col := colAll[r0:r1]
		idx := idxAll[r0:r1]
		idx = idx[:len(col)]
		if !cross {
			pushRow(acc, col, idx, tab, d, i)
			continue
		}
		for t, j := range col {
			if j == i {
				continue
			}
			if j >= inLo && j <= inHi {
				acc[j] += d * tab[idx[t]]
			} else {
				buf[j] += d * tab[idx[t]]
			}
		}
	}
	st.maxRel, st.sum = maxRel, sum
}

// pushRow adds d times each rate of a row to its target's inflow, the
// self-loop (target i) left out. A function of its own, so that its loop
// keeps its values in registers.
//
//go:noinline
func pushRow(acc []float64, col []int32, idx []uint16, tab *[1 << 16]float64, d float64, i int32) {
	idx = idx[:len(col)]
	for t, j := range col {
		if j != i {
			acc[j] += float64(d * tab[idx[t]])
		}
	}
}

// sweep runs one sweep over the class and returns the largest relative
// change of a probability (each relative to its new value). A state whose
// new value is not positive and finite keeps its old one: its inflow,
// kept up to date by pushed changes, can cancel to 0 or below on a stiff
// chain where the true inflow is tiny. Then the inflows are formed afresh
// from the vector (fresh) and the sweep counts as not converged (change
// +Inf); a state still bad in the sweep right after that is an error.
func (s *sweeper) sweep() (float64, error) {
	change, bad := s.sweepOnce()
	if bad < 0 {
		s.refreshed = false
		return change, nil
	}
	if s.refreshed {
		return 0, s.badState(bad)
	}
	s.fresh()
	s.refreshed = true
	s.refreshes++
	return math.Inf(1), nil
}

// sweepOnce is one sweep; bad is a state whose update was refused, or -1.
func (s *sweeper) sweepOnce() (float64, int32) {
	last := s.state(s.n - 1)
	if s.buf == nil {
		var st blockStats
		s.sweepBlock(0, s.n, 0, last, &st)
		s.sum += st.sum
		return st.maxRel, st.bad
	}
	var st [2]blockStats
	hi0 := s.state(s.cut - 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.sweepBlock(s.cut, s.n, s.lo1, last, &st[1])
	}()
	s.sweepBlock(0, s.cut, s.state(0), hi0, &st[0])
	wg.Wait()
	// The changes pushed across the cut join their inflows; the two
	// halves of buf are disjoint, so this too could run in parallel,
	// but it is a pass over one vector.
	for k := 0; k < s.n; k++ {
		j := s.state(k)
		if b := s.buf[j]; b != 0 {
			s.acc[j] += b
			s.buf[j] = 0
		}
	}
	s.sum += st[0].sum + st[1].sum
	bad := st[0].bad
	if bad < 0 {
		bad = st[1].bad
	}
	return math.Max(st[0].maxRel, st[1].maxRel), bad
}

func (s *sweeper) badState(i int32) error {
	return fmt.Errorf("%w: Gauss-Seidel gave state %d (%s) a probability that is not positive and finite (its inflow, kept by pushed changes, cancels to 0 or below although formed afresh: its probability is too small beside its neighbours' for the sweeps)", errNoProgress, i, s.c.StateString(int(i)))
}

// rescale keeps the vector's sum near 1 by a power of two (exact: the
// iteration is unchanged by it).
func (s *sweeper) rescale() {
	if s.sum >= 0.5 && s.sum <= 2 {
		return
	}
	_, e := math.Frexp(s.sum)
	f := math.Ldexp(1, -e+1)
	for k := 0; k < s.n; k++ {
		i := s.state(k)
		s.pi[i] *= f
		s.acc[i] *= f
	}
	s.sum *= f
}

// sweepOutcome says how the sweeps ended.
type sweepOutcome struct {
	Sweeps int
	// Contraction is the measured factor by which the largest relative
	// change shrinks a sweep (the largest of the last few ratios).
	Contraction float64
	// Estimate is the estimated relative error of every probability
	// after the last sweep: the change still to come if it keeps
	// shrinking by Contraction, Change * c / (1 - c).
	Estimate float64
	Change   float64
	// Stalled says why the sweeps were given up ("" if they converged).
	Stalled string
}

// Sweep limits: the ratios of successive sweeps whose largest is plain
// sweeps' contraction, and the shrinkage of a cycle above which the sweeps
// are said to stall.
const (
	rateWindow     = 4
	stallContract  = 0.998 // a cycle of aggEvery sweeps
	sweepCheckMask = 7
)

// run sweeps until the estimated error of every throughput, relative to
// itself, is at most tol, or until the prediction of the sweeps still
// needed passes maxSweeps (or maxSweeps are done): then Stalled says why.
// Called again with a larger maxSweeps, it goes on where it stopped.
//
// Every aggEvery sweeps is a checkpoint: one pass over the chain forms
// the throughputs (and the aggregator's small chains), then the
// aggregator, if there is one, corrects the vector (aggregate.go), or the
// inflows are formed afresh (their pushed changes carry rounding). A
// correction after which the throughputs move more than before it counts
// against it; after two such the corrections stop.
//
// The estimate: if every cycle of sweeps (and correction) shrinks the
// error by c, the error left in a throughput is its last move times
// c / (1 - c). c is the larger of the last two ratios of successive moves
// (the largest relative move of any throughput) and of the contraction
// that plain sweeps showed over the cycle, which is the largest ratio of
// successive sweeps' largest relative change of a probability over the
// last rateWindow sweeps raised to the power aggEvery: a correction can
// make one cycle shrink by far more than the next will.
func (s *sweeper) run(ctx context.Context, tol float64, maxSweeps int) (sweepOutcome, error) {
	out := s.out
	out.Stalled = ""
	for {
		sweep := out.Sweeps + 1
		if sweep&sweepCheckMask == 0 {
			if err := ctx.Err(); err != nil {
				return out, err
			}
		}
		change, err := s.sweep()
		if err != nil {
			return out, err
		}
		s.rescale()
		out.Sweeps, out.Change = sweep, change
		s.ratios[sweep%rateWindow] = change / s.prev
		s.prev = change
		if sweepTrace != nil {
			sweepTrace(sweep, change, s.moves[0])
		}
		s.out = out
		if sweep%aggEvery != 0 {
			if sweep >= maxSweeps {
				out.Stalled = fmt.Sprintf("%d sweeps done", sweep)
				return out, nil
			}
			continue
		}
		// A checkpoint: the correction, then the inflows and the
		// throughputs of the corrected vector.
		corrected := s.agg != nil && s.agg.correct(s)
		if corrected {
			s.correctedAt = s.checks + 1
			s.corrections++
		}
		move := s.check()
		s.checks++
		s.moves[2], s.moves[1], s.moves[0] = s.moves[1], s.moves[0], move
		if s.correctedAt == s.checks-1 && s.agg != nil && move > s.moves[1] {
			// The move since the last correction is larger than the one
			// before it.
			if s.strikes++; s.strikes >= 2 {
				s.agg = nil
			}
		}
		plain := 0.0
		for _, r := range s.ratios {
			plain = math.Max(plain, r)
		}
		rho := math.Pow(plain, aggEvery)
		for _, r := range []float64{s.moves[0] / s.moves[1], s.moves[1] / s.moves[2]} {
			if !math.IsNaN(r) {
				rho = math.Max(rho, r)
			}
		}
		if s.checks < 3 || math.IsNaN(rho) {
			rho = math.Inf(1)
		}
		out.Contraction = rho
		switch {
		case move == 0 && s.checks >= 2:
			// A fixed point of the rounded iteration.
			out.Estimate = 0
		case rho < 1:
			out.Estimate = move * rho / (1 - rho)
		default:
			out.Estimate = math.Inf(1)
		}
		s.out = out
		if out.Estimate <= tol {
			return out, nil
		}
		if sweep >= maxSweeps {
			out.Stalled = fmt.Sprintf("%d sweeps done, estimated error %.3g (the throughputs' moves shrink by %.4g every %d sweeps)", sweep, out.Estimate, rho, aggEvery)
			return out, nil
		}
		if s.checks >= 4 {
			if !(rho < stallContract) {
				out.Stalled = fmt.Sprintf("the throughputs' moves do not shrink (ratio %.6f every %d sweeps, after %d sweeps)", rho, aggEvery, sweep)
				return out, nil
			}
			more := aggEvery * math.Log(tol/out.Estimate) / math.Log(rho)
			if float64(sweep)+more > float64(maxSweeps) {
				out.Stalled = fmt.Sprintf("the throughputs' moves shrink by %.6f every %d sweeps: after %d sweeps, about %.0f more would be needed, above %d", rho, aggEvery, sweep, more, maxSweeps)
				return out, nil
			}
		}
	}
}

// check forms the inflows afresh, with the throughputs of the current
// vector, and returns the largest relative move of a throughput since
// the last checkpoint (+Inf at the first).
func (s *sweeper) check() float64 {
	x := s.freshThroughputs()
	move := math.Inf(1)
	if s.lastOK {
		move = 0
		for a, v := range x {
			if v > 0 {
				move = math.Max(move, math.Abs(v-s.last[a])/v)
			} else if s.last[a] != 0 {
				move = math.Inf(1)
			}
		}
	}
	s.last, s.lastOK = append(s.last[:0], x...), true
	return move
}

// sweepTrace, if set (tests), is told every sweep's largest relative
// change and the last checkpoint's move.
var sweepTrace func(sweep int, change, move float64)

// aggEvery is the number of sweeps between two checkpoints (and
// corrections by aggregation). Measured (sweeps plus corrections, a
// correction costing several sweeps) to a throughput error of 1e-13:
// every sweep 15 + 15, every 2 20 + 10, every 5 25 + 5 on a 100,842-state
// mapping chain; on one with a shared network link 32 + 32, 38 + 19,
// 43 + 9; plain sweeps 95 and 85. On the 705,894-state chain of 28
// applications on 7 machines, one block: every 4 sweeps 24 + 6 (2.0-2.8 s
// on a loaded machine), every 5 30 + 6 (2.4-6 s), every 7 35 + 5, every
// 10 40 + 4 (2.0-2.6 s); plain sweeps stall.
const aggEvery = 4

// finish normalises the vector and returns the estimated error of every
// throughput relative to itself, est plus 4 unit roundoffs (the
// throughputs are sums of nonnegative terms), and the residual
// ||pi Q||_inf / (max q_i ||pi||_inf).
func (s *sweeper) finish(est float64) (map[string]float64, float64) {
	c := s.c
	var sum, comp float64
	for k := 0; k < s.n; k++ {
		sum, comp = elim.AddCompensated(sum, comp, s.pi[s.state(k)])
	}
	sum += comp
	enabled := make([]bool, len(c.S.Actions))
	rmax, pmax, qmax := 0.0, 0.0, 0.0
	for k := 0; k < s.n; k++ {
		i := s.state(k)
		s.pi[i] /= sum
		s.acc[i] /= sum
		p := s.pi[i]
		q := s.exitRate(i)
		rmax, pmax, qmax = math.Max(rmax, math.Abs(s.acc[i]-p*q)), math.Max(pmax, p), math.Max(qmax, q)
		for e := c.RowPtr[i]; e < c.RowPtr[i+1]; e++ {
			enabled[c.Act[e]] = true
		}
	}
	out := make(map[string]float64)
	for a, ok := range enabled {
		if ok {
			out[c.S.Actions[a]] = est + 4*unitRoundoff
		}
	}
	return out, rmax / (qmax * pmax)
}
