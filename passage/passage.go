package passage

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"pepa/ctmc"
	"pepa/internal/membudget"
)

// Problem is one passage: where it starts and what ends it.
type Problem struct {
	// Alpha is the initial distribution over the chain's states (length N,
	// summing to 1).
	Alpha []float64
	// TargetActions end the passage at the first firing of a transition
	// labelled by one of them (semantics.md section 2, "initial").
	TargetActions []int32
	// TargetStates, if not nil (length N), end the passage on entering one
	// of the marked states; a start inside them ends it at t = 0.
	TargetStates []bool
}

// Options controls the uniformization.
type Options struct {
	// Epsilon bounds the truncation error of every CDF value (default 1e-10).
	Epsilon float64
	// Horizon is the largest t that will be asked of the results. The
	// iteration stops at the Poisson right truncation point for q*Horizon,
	// or earlier once every passage's unabsorbed mass is below Epsilon/2.
	Horizon float64
	// Complete asks for iteration until the mass that can still be
	// absorbed is below Epsilon/2 whatever the horizon (needed for
	// quantiles and means).
	Complete bool
	// MaxIterations, if positive, caps the uniformization steps (an error
	// if the series is still needed past it). By default there is no cap
	// but memory: the series of all passages of a Solve holds at most
	// MaxSeriesValues numbers (ErrTooManySteps past that).
	MaxIterations int
	// QFactor multiplies the largest exit rate to give the uniformization
	// rate q (default 1.02).
	QFactor float64
	// Q, if positive, is the uniformization rate to use instead (it must be
	// at least the largest exit rate). Passages on different chains that
	// share q can share Poisson weights (MaxMean).
	Q float64
	// Progress, if not nil, is called about every half second with the
	// steps done and the most that may be needed (0 when not known in
	// advance: a Complete series runs until the absorbable mass is gone).
	Progress func(step, max int)
	// Stage, if not nil, is called at the end of each stage of the
	// computation (the uniformization rate, building the generator, the
	// steps) with its name and a detail, for timing.
	Stage func(name, detail string)
	// ReleaseChain lets Solve drop the chain's transitions (Col, Act and
	// the rates; the states and row pointers stay) once the last block's
	// generator is built, and return the memory to the system before the
	// vectors of the steps are made: on a big chain that is most of the
	// peak. The caller must not use the transitions afterwards.
	ReleaseChain bool
	// ExtraSteps, with a Horizon and without Complete, lets the series of
	// a passage run on past the horizon's truncation point, for up to this
	// many more steps, if it is then predicted to be complete within them
	// (Result.StepsToComplete) and may end (not MayNeverEnd): its mean is
	// then the series' sum (Result.SeriesMean). A passage not run on, or
	// still incomplete after them, is returned as it is (Complete false,
	// every CDF up to the horizon exact), not as an error.
	ExtraSteps int
	// Quantiles, with a Horizon and without Complete, are probabilities
	// whose quantiles will be asked (Result.Quantile): past the horizon
	// a passage's series runs on until its CDF reaches the largest of
	// them, and no further (then ExtraSteps may run it on), instead of
	// to completion. Quantiles above what the passage reaches by the end
	// of its series still need the complete series.
	Quantiles []float64
	// Backward asks for the backward iteration (backward.go) wherever it
	// applies (one passage, a horizon, no Complete, no ExtraSteps), not
	// only on chains of a million transitions or more. The values are
	// the forward path's within Epsilon; tests use it on small chains.
	Backward bool
}

func (o *Options) stage(name, detail string) {
	if o.Stage != nil {
		o.Stage(name, detail)
	}
}

func (o *Options) defaults() {
	if o.Epsilon <= 0 {
		o.Epsilon = 1e-10
	}
	if o.QFactor < 1 {
		o.QFactor = 1.02
	}
}

// Result is the outcome of one passage: the probability mass absorbed in
// the target after k steps of the uniformized chain, from which the CDF,
// density and quantiles at any t follow.
type Result struct {
	Q        float64   // uniformization rate
	Absorbed []float64 // Absorbed[k]: mass in the target after k jumps
	// Rest is the mass, after the last step, in states from which the
	// target can still be reached: later Absorbed values are within Rest
	// of the last one (mass in states that cannot reach the target is
	// known never to be absorbed).
	Rest float64
	// Complete: Rest <= Epsilon/2, so the series is known for every k.
	Complete bool
	Epsilon  float64
	// Reachable is false when no state of the start can reach the target
	// (then every CDF value is exactly 0).
	Reachable bool
	// MayNeverEnd is true when the start can reach, before the passage
	// ends, a state from which its target cannot be reached: the mean
	// passage time is then infinite, however small that probability.
	MayNeverEnd bool
	// total is the mass of the start distribution (1 up to rounding).
	total float64
	// Method is "uniformization", or "dense matrix exponential" for a
	// small chain whose series would be too long (DenseMaxStates).
	Method string
	dense  *denseDist
	// backward: the series was computed by backward iteration (it has
	// no forward vectors, so no mean).
	backward bool
	// lanes is the kernel's lanes per state: 1 for a passage solved
	// alone, a multiple of 8 for a block of passages sharing the sweep.
	lanes int
}

// Path says how the result was computed: "dense" (matrix exponential),
// "backward" (backward iteration), "forward" (one passage), or
// "forward-lanes" (passages sharing one sweep, in groups of 8 lanes).
func (r *Result) Path() string {
	switch {
	case r.dense != nil:
		return "dense"
	case r.backward:
		return "backward"
	case r.lanes > 1:
		return "forward-lanes"
	}
	return "forward"
}

// Iterations is the number of uniformization steps taken.
func (r *Result) Iterations() int { return len(r.Absorbed) - 1 }

// absorbedAt is a_k, extended past the series by its last value (exact to
// Rest when Complete).
func (r *Result) absorbedAt(k int) float64 {
	if k < len(r.Absorbed) {
		return r.Absorbed[k]
	}
	return r.Absorbed[len(r.Absorbed)-1]
}

// ErrBeyondHorizon is returned for a time past the computed horizon.
var ErrBeyondHorizon = errors.New("time beyond the horizon the passage was computed for")

// ErrTooManySteps is returned when the series would need more values than
// MaxSeriesValues (or Options.MaxIterations steps).
var ErrTooManySteps = errors.New("the passage needs more uniformization steps than can be held")

// MaxSeriesValues bounds the absorbed-mass values that one Solve keeps over
// all its passages (1 GiB of float64): the cost of a series grows with
// q*t, and this is where memory, not time, stops it.
const MaxSeriesValues = 1 << 27

// CDF is P(passage time <= t), within Epsilon of the exact value.
func (r *Result) CDF(t float64) (float64, error) {
	if t < 0 {
		return 0, nil
	}
	if math.IsNaN(t) || math.IsInf(t, 0) {
		return 0, fmt.Errorf("time %g is not a finite number", t)
	}
	if r.dense != nil {
		return r.dense.cdf(t), nil
	}
	if r.longAfter(t) {
		return clamp01(r.Absorbed[len(r.Absorbed)-1]), nil
	}
	w, err := r.weights(t)
	if err != nil {
		return 0, err
	}
	return r.CDFWith(w), nil
}

// CDFWith is the CDF at the t whose Poisson weights (for rate r.Q * t and
// epsilon r.Epsilon/2) are w: results that share Q can share weights.
func (r *Result) CDFWith(w *PoissonWeights) float64 {
	if r.dense != nil {
		return r.dense.cdf(w.Lambda / r.Q)
	}
	// F = sum_k w_k a_k, written as a_R - sum_k w_k (a_R - a_k): the same
	// with weights summing to 1, but the small complement is summed
	// directly, so F is exactly 1 once all mass is absorbed, and exactly
	// a_0 at t = 0.
	top := r.absorbedAt(w.Right())
	// Past the series a_k is its last value, which is top: those terms are 0.
	n := min(len(w.W), len(r.Absorbed)-w.Left)
	gap := 0.0
	if n > 0 {
		a := r.Absorbed[w.Left : w.Left+n]
		for i, x := range w.W[:n] {
			gap += x * (top - a[i])
		}
	}
	return clamp01(top - gap)
}

// PDF is the density of the passage time at t: the derivative of the CDF,
// q * sum_k Poisson(k; q t) (a_{k+1} - a_k), within q*Epsilon.
func (r *Result) PDF(t float64) (float64, error) {
	if t < 0 {
		return 0, nil
	}
	if math.IsNaN(t) || math.IsInf(t, 0) {
		return 0, fmt.Errorf("time %g is not a finite number", t)
	}
	if r.dense != nil {
		return r.dense.pdf(t), nil
	}
	w, err := r.weights(t)
	if err != nil {
		return 0, err
	}
	if w.Right()+1 >= len(r.Absorbed) && !r.Complete {
		return 0, ErrBeyondHorizon
	}
	return r.pdfWith(w), nil
}

func (r *Result) pdfWith(w *PoissonWeights) float64 {
	if r.dense != nil {
		return r.dense.pdf(w.Lambda / r.Q)
	}
	sum := 0.0
	for i, x := range w.W {
		k := w.Left + i
		sum += x * (r.absorbedAt(k+1) - r.absorbedAt(k))
	}
	return math.Max(0, r.Q*sum)
}

// longAfter reports whether t is so late that the Poisson weights of q*t
// put less than 1e-20 on the computed series: for a complete series the CDF
// is then its last value, with no weights to compute.
func (r *Result) longAfter(t float64) bool {
	l := r.Q * t
	return r.Complete && l > 1e4 && l-12*math.Sqrt(l) > float64(len(r.Absorbed))
}

func (r *Result) weights(t float64) (*PoissonWeights, error) {
	w, err := FoxGlynn(r.Q*t, r.Epsilon/2)
	if err != nil {
		return nil, err
	}
	if w.Right() >= len(r.Absorbed) && !r.Complete {
		return nil, fmt.Errorf("%w (t = %g needs %d steps, %d computed)", ErrBeyondHorizon, t, w.Right(), len(r.Absorbed)-1)
	}
	return w, nil
}

func clamp01(x float64) float64 { return math.Min(1, math.Max(0, x)) }

// Quantile returns the smallest t with CDF(t) >= p, to within a relative
// 1e-9 (and the CDF's own Epsilon): safeguarded Newton steps with the
// density inside a bisection bracket. The result must be Complete, or its
// CDF must reach p within the series (Options.Quantiles); else the error
// is ErrBeyondHorizon. It returns +Inf if the passage reaches its target
// with probability below p.
func (r *Result) Quantile(p float64) (float64, error) {
	if !(p > 0 && p < 1) {
		return 0, fmt.Errorf("quantile %g must be in (0, 1)", p)
	}
	if r.dense != nil {
		return r.dense.quantile(p, r.Absorbed[len(r.Absorbed)-1], r.Epsilon), nil
	}
	limit := math.Inf(1) // the largest t whose CDF and density the series gives
	if !r.Complete {
		limit = r.knownUntil()
	} else if r.absorbedAt(len(r.Absorbed)) < p-r.Epsilon {
		return math.Inf(1), nil
	}
	cdf := func(t float64) float64 { v, _ := r.CDF(t); return v }
	if cdf(0) >= p {
		return 0, nil
	}
	hi := math.Min(1/r.Q, limit)
	for cdf(hi) < p {
		if hi >= limit {
			return 0, fmt.Errorf("%w: the %g-quantile is past t = %g, where the series ends (%d steps)", ErrBeyondHorizon, p, limit, r.Iterations())
		}
		hi = math.Min(2*hi, limit)
		if hi > 1e15/r.Q {
			return math.Inf(1), nil
		}
	}
	// Newton steps on F(t) = p with the density, kept inside the bracket
	// [lo, hi] (F(lo) < p <= F(hi)); a step that leaves it bisects instead.
	lo, t := 0.0, hi/2
	for i := 0; i < 200 && hi-lo > 1e-10*hi; i++ {
		if !(t > lo && t < hi) {
			t = (lo + hi) / 2
		}
		w, err := FoxGlynn(r.Q*t, r.Epsilon/2)
		if err != nil {
			return 0, err
		}
		f := r.CDFWith(w)
		if f >= p {
			hi = t
		} else {
			lo = t
		}
		d := r.pdfWith(w)
		next := t - (f-p)/d
		if d > 0 && next > lo && next < hi && math.Abs(next-t) < (hi-lo)/2 {
			if math.Abs(next-t) <= 1e-11*t {
				return next, nil // Newton has converged
			}
			t = next
		} else {
			t = (lo + hi) / 2
		}
	}
	return hi, nil
}

// knownUntil is the largest t (to a relative 1e-12) whose CDF and
// density an incomplete series gives: the Poisson right truncation point
// of q*t, plus one for the density, within the steps taken.
func (r *Result) knownUntil() float64 {
	have := len(r.Absorbed) - 2 // the truncation point may be at most this
	fits := func(l float64) bool {
		right, err := PoissonRight(l, r.Epsilon/2)
		return err == nil && right <= have
	}
	if have < 0 || !fits(0) {
		return 0
	}
	lo, hi := 0.0, float64(have)+1 // the right point is at least the mode
	for hi-lo > 1e-12*hi {
		mid := (lo + hi) / 2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo / r.Q
}

// reaches reports whether the CDF, at the latest time the series gives
// (knownUntil), is at least p: the p-quantile is then within the series.
func (r *Result) reaches(p float64) bool {
	if r.Complete {
		return true
	}
	v, err := r.CDF(r.knownUntil())
	return err == nil && v >= p
}

// quantileCheck is how many steps apart a passage's series checks
// whether its CDF has reached the largest quantile asked
// (Options.Quantiles): a check costs a few hundred operations, against
// a sweep of the whole chain for a step.
const quantileCheck = 8

// Solve computes several passages over one chain in a single sweep of the
// matrix per step: the passages' vectors are stored interleaved, so each
// matrix entry is read once for all of them.
func Solve(ctx context.Context, c *ctmc.Chain, probs []Problem, opt Options) ([]*Result, error) {
	opt.defaults()
	if len(probs) == 0 {
		return nil, nil
	}
	for i, pr := range probs {
		if len(pr.Alpha) != c.N || (pr.TargetStates != nil && len(pr.TargetStates) != c.N) {
			return nil, fmt.Errorf("passage %d: vectors do not match the chain's %d states", i, c.N)
		}
	}
	// One rate for every block, right by construction: target-labelled
	// self-loops count (MaxLeaveRate).
	leave := MaxLeaveRate(c, probs)
	q := scaleRate(leave, opt.QFactor)
	if opt.Q > 0 {
		if opt.Q < leave {
			return nil, fmt.Errorf("uniformization rate %g is below %g, the largest rate at which a state is left once the target is absorbing", opt.Q, leave)
		}
		q = opt.Q
	}
	opt.stage("uniformization rate", "")
	// Epsilon bounds the error of every CDF value, rounding included: the
	// series is truncated at 0.9 epsilon (never below minTruncation), and
	// a result whose rounding (RoundingFloor of its steps) does not fit in
	// the other tenth reports the larger bound it can keep instead.
	requested := opt.Epsilon
	opt.Epsilon = math.Max(0.9*requested, minTruncation)
	rs, err := solveAll(ctx, c, probs, q, opt)
	if err != nil {
		return nil, err
	}
	for _, r := range rs {
		steps := r.Iterations()
		if r.dense != nil {
			steps = 0 // see denseDist
		}
		r.Epsilon = math.Max(requested, opt.Epsilon+RoundingFloor(steps))
	}
	return rs, nil
}

// minTruncation is the smallest truncation error Solve aims for: float64
// sums of probabilities cannot be trusted below it anyway.
const minTruncation = 1e-16

// RoundingFloor bounds the rounding error of a CDF value computed from a
// series of the given number of steps: 1e-16 plus four unit roundoffs
// (2^-53) a step. A step moves every unabsorbed probability by additions
// and products of nonnegative numbers, each with a relative rounding error
// of about one unit roundoff, and the errors of the steps add up; the
// differential test (internal/testing/reference) checks passages asked for an
// epsilon of 1e-18 against the bound this gives.
func RoundingFloor(steps int) float64 {
	return 1e-16 + 4*0x1p-53*float64(steps)
}

// solveAll is Solve once the uniformization rate and epsilon are set.
func solveAll(ctx context.Context, c *ctmc.Chain, probs []Problem, q float64, opt Options) ([]*Result, error) {
	// A small chain whose series would be very long (rates orders of
	// magnitude apart) is solved densely instead.
	small := c.N <= DenseMaxStates && opt.MaxIterations <= 0
	if small {
		opt.MaxIterations = DenseSwitchSteps
		// A horizon that alone needs more steps goes there at once,
		// rather than after DenseSwitchSteps steps of a series.
		if opt.Horizon > 0 && !math.IsInf(opt.Horizon, 1) {
			if right, err := PoissonRight(q*opt.Horizon, opt.Epsilon/2); err == nil && right > DenseSwitchSteps {
				return solveDense(c, probs, q, opt)
			}
		}
	}
	// One passage up to a horizon on a big chain: backward iteration over
	// the chain's own rows, with no generator to build (backward.go); and
	// on any chain where the forward iteration does not fit the memory
	// budget (planBlocks). Options.Backward asks for it on any chain.
	backward := func() ([]*Result, bool, error) {
		right, err := PoissonRight(q*math.Max(opt.Horizon, 0), opt.Epsilon/2)
		if err != nil {
			return nil, false, err
		}
		kmax := right + 1
		// (A tiny chain with a very long series is solved densely below.)
		fits := kmax < MaxSeriesValues && (opt.MaxIterations <= 0 || kmax <= opt.MaxIterations) &&
			(c.N > DenseMaxStates || kmax <= DenseSwitchSteps)
		if !fits {
			return nil, false, nil
		}
		r, err := solveBackward(ctx, c, probs[0], q, kmax, opt)
		if errors.Is(err, errNoBackward) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		return []*Result{r}, true, nil
	}
	// (Quantiles past the horizon need the forward series, which can run on.)
	single := len(probs) == 1 && !opt.Complete && len(opt.Quantiles) == 0
	if single && opt.ExtraSteps == 0 && (opt.Backward || len(c.Col) >= backwardMinTransitions) {
		if rs, ok, err := backward(); ok || err != nil {
			return rs, err
		}
	}
	plan, err := planBlocks(ctx, c, probs, opt, single && c.RateIndex != nil && len(c.RateTable) < 1<<16)
	if err != nil {
		return nil, err
	}
	if plan.backward {
		if rs, ok, err := backward(); ok || err != nil {
			return rs, err
		}
		plan.size = 1 // not backward after all: the forward block's own checks decide
	}
	var results []*Result
	for start := 0; start < len(probs); start += plan.size {
		end := min(start+plan.size, len(probs))
		blockOpt := opt
		// Only the last block may release the chain, and not a small one
		// (the dense fallback needs it; there is nothing to gain).
		blockOpt.ReleaseChain = opt.ReleaseChain && end == len(probs) && !small
		rs, err := solveBlock(ctx, c, probs[start:end], q, len(probs), blockOpt)
		if small && errors.Is(err, ErrTooManySteps) {
			rs, err = solveDense(c, probs[start:end], q, opt)
		}
		if err != nil {
			return nil, err
		}
		results = append(results, rs...)
	}
	return results, nil
}

// solveDense is Solve by the matrix exponential (denseDist).
func solveDense(c *ctmc.Chain, probs []Problem, q float64, opt Options) ([]*Result, error) {
	out := make([]*Result, len(probs))
	for p, pr := range probs {
		d := newDenseDist(c, pr)
		total, err := d.total()
		if err != nil {
			return nil, err
		}
		out[p] = &Result{Q: q, Absorbed: []float64{clamp01(d.a0), total}, Complete: true, Epsilon: opt.Epsilon,
			Reachable: total > 0, Method: "dense matrix exponential", dense: d}
	}
	return out, nil
}

// maxBlock is the most passages that share a sweep: the vectors of a block
// are interleaved in rows of 8 lanes, which the kernel handles without
// loops or bounds checks.
const maxBlock = 64

// rowBlock is the number of rows one worker takes at a time. It does not
// depend on the number of cores, and sums over rows are reduced block by
// block in order, so results are bit-for-bit the same whatever GOMAXPROCS.
const rowBlock = 4096

type kernel struct {
	n, p  int
	lanes int // 1 for a single passage, else 8 per group (unused lanes stay zero)
	// groups of 8 lanes: a state's lane masks (zero, live) and a special
	// entry's are one byte per group.
	groups int
	// Transposed, uniformized matrix, split into entries whose action ends
	// no passage of the block (common: every transition to another state
	// with such an action) and the others (special: every transition whose
	// action ends some passage of the block, self-loops included). A
	// special entry carries its value once and a mask of the lanes whose
	// passage it ends: for those its mass goes to the passage's target
	// (the sink), for the others it moves as a common entry would.
	cPtr  []uint32 // 4-byte offsets: buildKernel refuses more entries
	cSrc  []int32
	sPtr  []uint32
	sSrc  []int32
	sMask []uint8
	// An entry's value r/q is val[idx] with idx its index into the chain's
	// distinct rates: 2 bytes an entry (cIdx16, sIdx16) when there are at
	// most 65,536 of them, else 4 (cIdx32, sIdx32), where the value itself
	// would take 8.
	val            []float64
	cIdx16, sIdx16 []uint16
	cIdx32, sIdx32 []uint32

	// diag[j] is 1 - l_j/q with l_j the rate of j's transitions to other
	// states plus that of its special self-loops: the probability of
	// staying in j for a passage that every special self-loop ends. For
	// the other lanes the special self-loop entries put the rest back.
	// One number per state, not per lane: most of the kernel's memory is
	// per state.
	diag []float64
	zero []uint8 // lane mask: j is a target state of the lane's passage (nil if none has target states)
	live []uint8 // lane mask: j is not a target of the lane's passage and can reach it
	anyZ bool
	// liveCount[p], zeroCount[p]: the states live for passage p, and in
	// its target.
	liveCount, zeroCount []int
	// pos[i] is chain state i's row in the kernel (localityOrder), nil
	// when rows are the chain's own states. Every index of the kernel's
	// arrays and of the vectors is a kernel row.
	pos []int32
}

// at is chain state i's row in the kernel.
func (k *kernel) at(i int) int {
	if k.pos == nil {
		return i
	}
	return int(k.pos[i])
}

// isLive reports whether state j is live for passage p.
func (k *kernel) isLive(j, p int) bool { return hasLane(k.live, k.groups, j, p) }

// hasLane reports whether lane p is set in the masks of item j.
func hasLane(mask []uint8, groups, j, p int) bool {
	return mask[j*groups+p/8]>>uint(p%8)&1 != 0
}

// setLane sets lane p in the masks of item j.
func setLane(mask []uint8, groups, j, p int) { mask[j*groups+p/8] |= 1 << uint(p%8) }

// keepLane[m][p] is 0 if mask m has lane p, else 1: a special entry's
// share that stays in the chain, lane by lane.
var keepLane = func() (t [256][8]float64) {
	for m := range t {
		for p := range t[m] {
			if m>>p&1 == 0 {
				t[m][p] = 1
			}
		}
	}
	return t
}()

// solveBlock solves a block of passages (solveAll's) on one kernel at
// uniformization rate q, their series in lanes of one iteration;
// totalPassages is the number of passages of all the blocks, among which
// the series' memory is shared.
func solveBlock(ctx context.Context, c *ctmc.Chain, probs []Problem, q float64, totalPassages int, opt Options) ([]*Result, error) {
	n, P := c.N, len(probs)
	budget := membudget.FromContext(ctx)
	if budget != nil {
		if err := budget.Check(fmt.Sprintf("passage: the generator of %d passage(s) over %d states", P, n), kernelBytes(c, P, specialEntries(c, probs)), solveHint()); err != nil {
			return nil, err
		}
	}
	k, err := buildKernel(c, probs, q)
	if err != nil {
		return nil, err
	}
	opt.stage("generator", fmt.Sprintf("%d entries, %d distinct values", len(k.cSrc)+len(k.sSrc), len(k.val)))
	results := k.startResults(c, probs, q, opt)
	if opt.ReleaseChain {
		// Everything below reads the kernel only; the vectors are made
		// after the memory is returned.
		c.Col, c.Act, c.RateIndex, c.Rates = nil, nil, nil, nil
		debug.FreeOSMemory()
	}
	if err := budget.Check(fmt.Sprintf("passage: the vectors of %d passage(s) over %d states", P, n), vectorBytes(n, k.lanes), solveHint()); err != nil {
		return nil, err
	}
	v := k.startVector(probs)
	sp, err := planSeries(budget, P, q, totalPassages, opt)
	if err != nil {
		return nil, err
	}
	if err := k.runSeries(ctx, v, results, sp, opt); err != nil {
		return nil, err
	}
	reportSteps(results, opt)
	if err := sp.checkEnded(budget, results, q, opt); err != nil {
		return nil, err
	}
	return results, nil
}

// startResults are the block's results before the first step: the mass
// that starts in a target, whether the target is reachable, and whether
// the passage may never end.
func (k *kernel) startResults(c *ctmc.Chain, probs []Problem, q float64, opt Options) []*Result {
	results := make([]*Result, len(probs))
	seen := make([]bool, c.N)
	for p, pr := range probs {
		r := &Result{Q: q, Epsilon: opt.Epsilon, Method: "uniformization", lanes: k.lanes}
		a0 := 0.0
		for i, x := range pr.Alpha {
			if pr.TargetStates != nil && pr.TargetStates[i] {
				a0 += x
				r.Reachable = r.Reachable || x > 0
			} else {
				r.Reachable = r.Reachable || (x > 0 && k.isLive(k.at(i), p))
			}
			r.total += x
		}
		r.Absorbed = append(r.Absorbed, a0)
		clear(seen)
		// When every state outside the target is live the passage always
		// ends, with no search.
		if k.liveCount[p]+k.zeroCount[p] < c.N {
			r.MayNeverEnd = k.mayNeverEnd(c, pr, p, seen)
		}
		results[p] = r
	}
	return results
}

// startVector is the start distributions outside the targets, lane by
// lane, in kernel rows.
func (k *kernel) startVector(probs []Problem) []float64 {
	L := k.lanes
	v := alignedFloats(k.n * L)
	for p, pr := range probs {
		for i, x := range pr.Alpha {
			if pr.TargetStates == nil || !pr.TargetStates[i] {
				v[k.at(i)*L+p] = x
			}
		}
	}
	return v
}

// seriesPlan says how far a block's series may run and when each passage
// has what it needs.
type seriesPlan struct {
	// stepCap bounds the steps: the series' memory (MaxSeriesValues over
	// all passages, Options.MaxIterations, or, memCapped, a quarter of
	// what the memory budget leaves).
	stepCap   int
	memCapped bool
	// hEnd is the step at the horizon's end (-1 with Complete: every
	// passage runs until its absorbable mass is below Epsilon/2); pmax
	// the largest quantile to find past the horizon (0: none).
	hEnd int
	pmax float64
	// kmax is the last step; known when it is decided beforehand (then
	// the progress reports it).
	kmax  int
	known bool
	// until[p] is the last step passage p needs, once decided
	// (math.MaxInt before).
	until []int
}

// planSeries plans the series of a block of P passages. It stops at the
// budget, or for a horizon at the right truncation point of q*Horizon (+1:
// the density needs one more), or as soon as every passage's absorbable
// mass is below Epsilon/2.
func planSeries(budget *membudget.Budget, P int, q float64, totalPassages int, opt Options) (*seriesPlan, error) {
	sp := &seriesPlan{stepCap: MaxSeriesValues / totalPassages, hEnd: -1}
	if opt.MaxIterations > 0 {
		sp.stepCap = min(sp.stepCap, opt.MaxIterations)
	}
	// The series grows by doubling: at most a quarter of what the memory
	// budget leaves goes to it.
	if memSteps := int(min(budget.Left()/int64(32*P), math.MaxInt32)); memSteps < sp.stepCap {
		sp.stepCap, sp.memCapped = max(memSteps, 1), true
	}
	// Without Complete a passage needs its series up to the horizon's
	// end (hEnd), then, if Quantiles are asked, until its CDF reaches the
	// largest of them (checked every quantileCheck steps: Quantile finds
	// them without the rest of the series), and then may run on for
	// ExtraSteps more steps for its mean.
	if !opt.Complete {
		right, err := PoissonRight(q*math.Max(opt.Horizon, 0), opt.Epsilon/2)
		if err != nil {
			return nil, err
		}
		sp.hEnd = right + 1
	}
	if sp.hEnd >= 0 {
		for _, x := range opt.Quantiles {
			sp.pmax = math.Max(sp.pmax, x)
		}
	}
	sp.kmax = sp.stepCap
	if sp.hEnd >= 0 && sp.pmax == 0 && sp.hEnd <= sp.stepCap {
		sp.kmax, sp.known = min(sp.stepCap, sp.hEnd+opt.ExtraSteps), true
	}
	sp.until = make([]int, P)
	for p := range sp.until {
		sp.until[p] = math.MaxInt
	}
	return sp, nil
}

// runSeries iterates v over the kernel, a block of rows per task on the
// pool, and records each passage's absorbed mass until it has what it
// needs or the plan's last step.
func (k *kernel) runSeries(ctx context.Context, v []float64, results []*Result, sp *seriesPlan, opt Options) error {
	n, L := k.n, k.lanes
	progressMax := 0
	if sp.known {
		progressMax = sp.kmax
	}
	done := make([]bool, len(results))
	for p, r := range results {
		r.Rest = k.restMass(v, p)
		if !r.Reachable || r.Rest <= opt.Epsilon/2 {
			done[p], r.Complete = true, true
		}
	}
	y := alignedFloats(n * L)
	nblocks := (n + rowBlock - 1) / rowBlock
	sinkPart := make([]float64, nblocks*L)
	restPart := make([]float64, nblocks*L)
	pool := newPool(nblocks)
	defer pool.close()
	last := time.Now()
	for step := 1; step <= sp.kmax; step++ {
		if allTrue(done) {
			break
		}
		if step&63 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if opt.Progress != nil && step&15 == 0 && time.Since(last) > 500*time.Millisecond {
			opt.Progress(step, progressMax)
			last = time.Now()
		}
		clear(sinkPart)
		clear(restPart)
		pool.run(func(b int) {
			lo, hi := b*rowBlock, min((b+1)*rowBlock, n)
			k.step(v, y, lo, hi, sinkPart[b*L:(b+1)*L], restPart[b*L:(b+1)*L])
		})
		v, y = y, v
		for p, r := range results {
			if done[p] {
				continue
			}
			sink, rs := 0.0, 0.0
			for b := 0; b < nblocks; b++ {
				sink += sinkPart[b*L+p]
				rs += restPart[b*L+p]
			}
			done[p] = sp.record(r, p, step, sink, rs, opt)
		}
	}
	return nil
}

// record adds step's absorbed mass sink to passage p's series, with rest
// the mass that can still reach the target, and reports whether the
// passage has what it needs: its series is complete, or its last step
// (the horizon's end, the quantiles found, and the steps for its mean if
// worth it) is reached.
func (sp *seriesPlan) record(r *Result, p, step int, sink, rest float64, opt Options) bool {
	r.Absorbed = append(r.Absorbed, r.Absorbed[len(r.Absorbed)-1]+sink)
	r.Rest = rest
	if rest <= opt.Epsilon/2 {
		r.Complete = true
		return true
	}
	if sp.hEnd < 0 || step < sp.hEnd {
		return false
	}
	if sp.until[p] == math.MaxInt {
		if sp.pmax > 0 && (step-sp.hEnd)%quantileCheck != 0 {
			return false
		}
		if sp.pmax > 0 && !r.reaches(sp.pmax) {
			return false
		}
		sp.until[p] = step
		if opt.ExtraSteps > 0 && r.worthRunningOn(opt.ExtraSteps) {
			sp.until[p] = step + opt.ExtraSteps
		}
	}
	return step >= sp.until[p]
}

// reportSteps reports the steps the series took (per passage, for a
// block).
func reportSteps(results []*Result, opt Options) {
	steps := 0
	each := make([]string, len(results))
	for p, r := range results {
		steps = max(steps, r.Iterations())
		each[p] = strconv.Itoa(r.Iterations())
	}
	detail := fmt.Sprintf("%d steps, %d passages", steps, len(results))
	if len(results) > 1 {
		detail += " (" + strings.Join(each, ", ") + ")"
	}
	opt.stage("CDF steps", detail)
}

// checkEnded fails unless every passage has what it needs: its series is
// complete or its last step was decided (the horizon reached, the
// quantiles found); else the step cap stopped it.
func (sp *seriesPlan) checkEnded(budget *membudget.Budget, results []*Result, q float64, opt Options) error {
	P := len(results)
	for p, r := range results {
		if !r.Complete && sp.until[p] == math.MaxInt {
			if sp.memCapped {
				if err := budget.Check(fmt.Sprintf("passage: the series of %d passage(s) past step %d", P, sp.kmax), membudget.Bytes(int64(sp.kmax), int64(32*P)), solveHint()); err != nil {
					return err
				}
			}
			return fmt.Errorf("%w: passage %d still has %.3g of its probability in states that can reach the target after %d steps (q = %.6g, so t = %.6g; epsilon/2 = %.3g)",
				ErrTooManySteps, p, r.Rest, r.Iterations(), q, float64(r.Iterations())/q, opt.Epsilon/2)
		}
	}
	return nil
}

// specialAhead is how many special entries ahead the one-pass kernel
// fetches a source's row (fusedRows8AVX2); sSrc has room for that many
// more entries past its end, zeros.
const specialAhead = 32

// alignedFloats makes n float64s whose first is 64-byte aligned (a row of
// 8 lanes is then one cache line, and the one-pass kernel can stream its
// rows out: alignedForStreaming).
func alignedFloats(n int) []float64 {
	s := make([]float64, n+8)
	skip := 0
	for skip < 8 && uintptr(unsafe.Pointer(&s[skip]))%64 != 0 {
		skip++
	}
	return s[skip : skip+n : skip+n]
}

func allTrue(b []bool) bool {
	for _, x := range b {
		if !x {
			return false
		}
	}
	return true
}

// buildKernel builds the uniformized matrix of the block's passages. It
// fails if some state outside a target is left at a total rate above q:
// its diagonal entry would be negative and the series meaningless.
func buildKernel(c *ctmc.Chain, probs []Problem, q float64) (*kernel, error) {
	k, err := newKernel(c, probs)
	if err != nil {
		return nil, err
	}
	mask := targetMask(probs)
	// The transposition is split by source states among the cores: each
	// worker counts its entries per target row, the counts give every
	// worker its own stretch of each row (in worker order, so a row lists
	// its sources in increasing order, as one worker would), and each
	// fills its stretches.
	T := max(1, min(runtime.GOMAXPROCS(0), k.n/4096))
	cCur, sCur := k.countEntries(c, mask, T)
	idx16, idx32, table := rateIndices(c)
	k.allocate(table, q)
	ends, err := k.fill(c, probs, mask, q, T, cCur, sCur, idx16, idx32, table)
	if err != nil {
		return nil, err
	}
	k.markLive(ends)
	return k, nil
}

// newKernel is the kernel's shape for the block's passages: its lanes,
// and its row order.
func newKernel(c *ctmc.Chain, probs []Problem) (*kernel, error) {
	n, P := c.N, len(probs)
	L := 1
	if P > 1 {
		L = 8
	}
	G := (P + 7) / 8
	if P > 1 {
		L = 8 * G
	}
	k := &kernel{n: n, p: P, lanes: L, groups: G}
	if P > 1 {
		// Renumbered for blocks of passages, where each gather is 64
		// bytes and the order was measured to pay for itself; a single
		// passage's step gathers 8 bytes, with few special entries.
		k.pos = localityOrder(c)
	}
	for _, pr := range probs {
		if pr.TargetStates != nil {
			k.anyZ = true
		}
	}
	if int64(len(c.Col)) > math.MaxUint32 {
		return nil, fmt.Errorf("the chain has %d transitions, more than the %d the passage kernel indexes", len(c.Col), uint32(math.MaxUint32))
	}
	return k, nil
}

// workerStart is where worker t of T starts among n source states.
func workerStart(n, t, T int) int { return int(int64(n) * int64(t) / int64(T)) }

// countEntries counts, on T workers, the common and special entries of
// every kernel row, and sets the rows' offsets (cPtr, sPtr). It returns
// each worker's fill cursors: where its stretch of each row starts.
func (k *kernel) countEntries(c *ctmc.Chain, mask actionMask, T int) (cCur, sCur [][]uint32) {
	n, at := k.n, k.at
	cCur, sCur = make([][]uint32, T), make([][]uint32, T)
	runWorkers(T, func(t int) {
		cc, sc := make([]uint32, n), make([]uint32, n)
		for i := workerStart(n, t, T); i < workerStart(n, t+1, T); i++ {
			for e := c.RowPtr[i]; e < c.RowPtr[i+1]; e++ {
				j := c.Col[e]
				switch {
				case mask.of(c.Act[e]) != 0:
					sc[at(int(j))]++
				case int(j) != i:
					cc[at(int(j))]++
				}
			}
		}
		cCur[t], sCur[t] = cc, sc
	})
	k.cPtr = make([]uint32, n+1)
	k.sPtr = make([]uint32, n+1)
	cRun, sRun := uint32(0), uint32(0)
	for j := 0; j < n; j++ {
		k.cPtr[j], k.sPtr[j] = cRun, sRun
		for t := 0; t < T; t++ {
			x, y := cCur[t][j], sCur[t][j]
			cCur[t][j], sCur[t][j] = cRun, sRun
			cRun += x
			sRun += y
		}
	}
	k.cPtr[n], k.sPtr[n] = cRun, sRun
	return cCur, sCur
}

// allocate makes the kernel's entry arrays for the counted entries, and
// its values r/q for the chain's distinct rates table.
func (k *kernel) allocate(table []float64, q float64) {
	n, G := k.n, k.groups
	k.cSrc = make([]int32, k.cPtr[n])
	k.sSrc, k.sMask = make([]int32, int(k.sPtr[n])+specialAhead)[:k.sPtr[n]], make([]uint8, int(k.sPtr[n])*G)
	k.val = make([]float64, len(table))
	for i, r := range table {
		k.val[i] = r / q
	}
	if len(table) <= 1<<16 {
		k.cIdx16, k.sIdx16 = make([]uint16, k.cPtr[n]), make([]uint16, k.sPtr[n])
	} else {
		k.cIdx32, k.sIdx32 = make([]uint32, k.cPtr[n]), make([]uint32, k.sPtr[n])
	}
	k.diag = make([]float64, n)
	k.live = make([]uint8, n*G)
	if k.anyZ {
		k.zero = make([]uint8, n*G)
	}
}

// fill writes the kernel's entries, diagonal and target lanes on T
// workers (each its own source states, into its stretches of the rows),
// and returns, per kernel row, the lanes whose passage a transition of
// the row ends. It fails if some state outside a target is left at a
// total rate above q.
//
// The per-transition loop is the kernel's construction proper (tens of
// millions of transitions): it stays whole in one closure.
func (k *kernel) fill(c *ctmc.Chain, probs []Problem, mask actionMask, q float64, T int, cCur, sCur [][]uint32, idx16 []uint16, idx32 []uint32, table []float64) ([]uint8, error) {
	n, G, at := k.n, k.groups, k.at
	small := len(table) <= 1<<16
	ends := make([]uint8, n*G) // lane masks: j has a transition that ends the lane's passage
	var withStates []int       // the passages with target states
	for p, pr := range probs {
		if pr.TargetStates != nil {
			withStates = append(withStates, p)
		}
	}
	errs := make([]error, T)
	// rateOf is the index of transition e's rate in table.
	rateOf := func(e int64) uint32 {
		if idx16 != nil {
			return uint32(idx16[e])
		}
		return idx32[e]
	}
	runWorkers(T, func(t int) {
		cFill, sFill := cCur[t], sCur[t]
		for i := workerStart(n, t, T); i < workerStart(n, t+1, T); i++ {
			all := 0.0
			ki := at(i) // i's row in the kernel
			for e := c.RowPtr[i]; e < c.RowPtr[i+1]; e++ {
				j, ri := c.Col[e], rateOf(e)
				r := table[ri]
				m := mask.of(c.Act[e])
				for _, p := range withStates {
					if probs[p].TargetStates[j] {
						setLane(ends, G, ki, p)
					}
				}
				kj := at(int(j))
				if m != 0 {
					f := sFill[kj]
					k.sSrc[f] = int32(ki)
					for g := 0; g < G; g++ {
						ends[ki*G+g] |= uint8(m >> uint(8*g))
						k.sMask[int(f)*G+g] = uint8(m >> uint(8*g))
					}
					if small {
						k.sIdx16[f] = uint16(ri)
					} else {
						k.sIdx32[f] = ri
					}
					sFill[kj]++
					all += r
				} else if int(j) != i {
					f := cFill[kj]
					k.cSrc[f] = int32(ki)
					if small {
						k.cIdx16[f] = uint16(ri)
					} else {
						k.cIdx32[f] = ri
					}
					cFill[kj]++
					all += r
				}
			}
			k.diag[ki] = 1 - all/q
			for _, p := range withStates {
				if probs[p].TargetStates[i] {
					setLane(k.zero, G, ki, p)
				}
			}
			// Each passage leaves i at a rate of at most all (its share of
			// the special self-loops is at most all of them), so only a
			// negative diag needs the passages one by one.
			if !(k.diag[ki] >= 0) {
				if err := checkLeave(c, probs, mask, i, q); err != nil {
					errs[t] = err // the worker's first: the lowest state of its range
					return
				}
			}
		}
	})
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return ends, nil
}

// runWorkers runs f(0), ..., f(T-1) at once and waits for them.
func runWorkers(T int, f func(t int)) {
	var wg sync.WaitGroup
	for t := 1; t < T; t++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(t)
		}()
	}
	f(0)
	wg.Wait()
}

// checkLeave fails if a passage outside whose target state i is leaves i
// at a rate above q (its diagonal entry would be negative).
func checkLeave(c *ctmc.Chain, probs []Problem, mask actionMask, i int, q float64) error {
	for p, pr := range probs {
		if pr.TargetStates != nil && pr.TargetStates[i] {
			continue
		}
		leave := 0.0
		for e := c.RowPtr[i]; e < c.RowPtr[i+1]; e++ {
			j := c.Col[e]
			toTarget := mask.of(c.Act[e])&(1<<uint(p)) != 0 || (pr.TargetStates != nil && pr.TargetStates[j])
			if int(j) != i || toTarget {
				leave += c.RateAt(e)
			}
		}
		if !(1-leave/q >= 0) {
			return fmt.Errorf("uniformization rate %g is below the rate %g at which state %d is left once passage %d's target is absorbing (negative diagonal)", q, leave, i, p)
		}
	}
	return nil
}

// rateIndices numbers the chain's distinct rates: the chain's own table
// and 2-byte indices when it has them, else a table and 4-byte indices
// built here.
func rateIndices(c *ctmc.Chain) ([]uint16, []uint32, []float64) {
	if c.RateIndex != nil {
		return c.RateIndex, nil, c.RateTable
	}
	index := map[float64]uint32{}
	var table []float64
	idx := make([]uint32, len(c.Rates))
	for e, r := range c.Rates {
		i, ok := index[r]
		if !ok {
			i = uint32(len(table))
			index[r] = i
			table = append(table, r)
		}
		idx[e] = i
	}
	return nil, idx, table
}

// markLive sets live: the states outside a passage's target from which it
// can be reached. Mass elsewhere can never be absorbed, so it does not
// count as rest. The lanes of a group travel together: the search starts
// from the states with a transition that ends a passage (ends), and
// carries to each predecessor the lanes it does not have yet (a
// predecessor in a lane's target does not take that lane).
//
// It first sweeps the transposed matrix from the last row to the first,
// a few times: states are numbered breadth-first, so most predecessors
// come before their successors and one sweep carries most of the marks,
// reading the matrix in order. If marks still move after the sweeps
// (long paths against the numbering), a worklist search from every
// marked state finishes the closure, pushing a state again only when it
// gains lanes (at most 8 times a group).
func (k *kernel) markLive(ends []uint8) {
	sweeps := liveSweeps
	G := k.groups
	k.liveCount, k.zeroCount = make([]int, k.p), make([]int, k.p)
	zeroAt := func(at int) uint8 {
		if k.zero == nil {
			return 0
		}
		return k.zero[at]
	}
	for at := range k.live {
		k.live[at] = ends[at] &^ zeroAt(at)
	}
	var stack []int32
	for g := 0; g < G; g++ {
		settled := false
		for sweep := 0; sweep < sweeps && !settled; sweep++ {
			settled = true
			for j := k.n - 1; j >= 0; j-- {
				m := k.live[j*G+g]
				if m == 0 {
					continue
				}
				for e := k.cPtr[j]; e < k.cPtr[j+1]; e++ {
					at := int(k.cSrc[e])*G + g
					if add := m &^ k.live[at] &^ zeroAt(at); add != 0 {
						k.live[at] |= add
						settled = false
					}
				}
				for e := k.sPtr[j]; e < k.sPtr[j+1]; e++ {
					at := int(k.sSrc[e])*G + g
					if add := m &^ k.live[at] &^ zeroAt(at); add != 0 {
						k.live[at] |= add
						settled = false
					}
				}
			}
		}
		if settled {
			continue
		}
		for j := 0; j < k.n; j++ {
			if k.live[j*G+g] != 0 {
				stack = append(stack, int32(j))
			}
		}
		for len(stack) > 0 {
			j := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			m := k.live[int(j)*G+g]
			visit := func(i int32) {
				at := int(i)*G + g
				if add := m &^ k.live[at] &^ zeroAt(at); add != 0 {
					k.live[at] |= add
					stack = append(stack, i)
				}
			}
			for e := k.cPtr[j]; e < k.cPtr[j+1]; e++ {
				visit(k.cSrc[e])
			}
			for e := k.sPtr[j]; e < k.sPtr[j+1]; e++ {
				visit(k.sSrc[e])
			}
		}
	}
	for j := 0; j < k.n; j++ {
		for p := 0; p < k.p; p++ {
			at := j*G + p/8
			bit := uint8(1) << uint(p%8)
			if k.live[at]&bit != 0 {
				k.liveCount[p]++
			}
			if k.zero != nil && k.zero[at]&bit != 0 {
				k.zeroCount[p]++
			}
		}
	}
}

// liveSweeps is the number of sweeps markLive makes before its worklist
// (a variable for the tests, which try both ways).
var liveSweeps = 3

// restMass is the mass of passage p in states that can still reach its
// target.
func (k *kernel) restMass(v []float64, p int) float64 {
	s := 0.0
	for j := 0; j < k.n; j++ {
		if k.isLive(j, p) {
			s += v[j*k.lanes+p]
		}
	}
	return s
}

// step computes rows lo..hi of y = v P for every passage, and adds to sink
// the mass that jumps into each passage's target and to rest the new mass
// in states that can still reach it.
func (k *kernel) step(v, y []float64, lo, hi int, sink, rest []float64) {
	switch {
	case k.lanes == 1 && k.cIdx16 != nil:
		step1(k, k.cIdx16, k.sIdx16, v, y, lo, hi, sink, rest)
	case k.lanes == 1:
		step1(k, k.cIdx32, k.sIdx32, v, y, lo, hi, sink, rest)
	case k.cIdx16 != nil:
		step8(k, k.cIdx16, k.sIdx16, v, y, lo, hi, sink, rest)
	default:
		step8(k, k.cIdx32, k.sIdx32, v, y, lo, hi, sink, rest)
	}
}

// step1 is step for a single passage: a plain CSR gather, and every
// special entry goes to the sink. With 2-byte rate indices it runs in
// assembly where the processor allows (step1Asm).
func step1[I uint16 | uint32](k *kernel, cIdx, sIdx []I, v, y []float64, lo, hi int, sink, rest []float64) {
	if cIdx16, ok := any(cIdx).([]uint16); ok && commonRowsAsm && lo < hi {
		sIdx16 := any(sIdx).([]uint16)
		a := step1Args{lo: lo, hi: hi, sink: sink[0], rest: rest[0]}
		step1Asm(&a, k, cIdx16, sIdx16, v, y)
		sink[0], rest[0] = a.sink, a.rest
		return
	}
	step1Go(k, cIdx, sIdx, v, y, lo, hi, sink, rest)
}

// step1Args carries step1AVX's arguments (its field offsets are read
// from go_asm.h).
type step1Args struct {
	y, v, diag *float64
	cPtr       *uint32
	cSrc       *int32
	cIdx       *uint16
	sPtr       *uint32
	sSrc       *int32
	sIdx       *uint16
	val        *float64
	zero       *uint8 // nil when the passage has no target states
	live       *uint8
	lo, hi     int
	sink, rest float64
}

// step1Go is step1 in Go; step1AVX performs the same operations in the
// same order (the conversions forbid fused multiply-adds).
func step1Go[I uint16 | uint32](k *kernel, cIdx, sIdx []I, v, y []float64, lo, hi int, sink, rest []float64) {
	cPtr, cSrc, val := k.cPtr, k.cSrc, k.val
	sumSink, sumRest := sink[0], rest[0]
	for j := lo; j < hi; j++ {
		acc := float64(k.diag[j] * v[j])
		// Sub-slices of one length: the loop needs no bounds checks on
		// them, only on val and v.
		src := cSrc[cPtr[j]:cPtr[j+1]]
		idx := cIdx[cPtr[j]:cPtr[j+1]]
		idx = idx[:len(src)]
		for t, i := range src {
			acc += float64(val[idx[t]] * v[i])
		}
		for e := k.sPtr[j]; e < k.sPtr[j+1]; e++ {
			sumSink += float64(val[sIdx[e]] * v[k.sSrc[e]])
		}
		if k.anyZ && k.zero[j] != 0 {
			sumSink += acc
			acc = 0
		}
		y[j] = acc
		if k.live[j] != 0 {
			sumRest += acc
		}
	}
	sink[0] = sumSink
	rest[0] = sumRest
}

// rowChunk is the number of rows whose common part is computed before
// their special entries are added: their rows of y are still in the
// first-level cache then (32 rows of 8 lanes: 2 KB a group).
const rowChunk = 32

// step8 is step for a block of passages in groups of 8 interleaved lanes.
// Rows are taken rowChunk at a time: first the common part of every group
// (commonRows8), then each group's special entries, target states and rest
// mass (specialRows8); both run in assembly where the processor allows.
func step8[I uint16 | uint32](k *kernel, cIdx, sIdx []I, v, y []float64, lo, hi int, sink, rest []float64) {
	var sk, rs [maxBlock]float64
	G := k.groups
	L := k.lanes
	cIdx16, short := any(cIdx).([]uint16)
	sIdx16, _ := any(sIdx).([]uint16)
	// In one pass a row is stored once, from the registers: no need to
	// keep rows in the cache between the two parts, so one group takes
	// its whole range at a time; several groups still go a chunk at a
	// time, so that the chunk's entries, read once a group, stay cached.
	fused := short && commonRowsAsm && fusedRowsAsm && alignedForStreaming(y)
	chunk := rowChunk
	if fused && G == 1 {
		chunk = hi - lo
	}
	for c0 := lo; c0 < hi; c0 += chunk {
		c1 := min(c0+chunk, hi)
		for g := 0; g < G; g++ {
			off := 8 * g
			a := rowArgs{
				lo: c0, hi: c1, rowBytes: 8 * L, groups: G,
				sink: (*[8]float64)(sk[off : off+8]), rest: (*[8]float64)(rs[off : off+8]),
			}
			if fused {
				fusedRows8(&a, k, g, y[off:], v[off:], cIdx16, sIdx16)
			} else if short {
				commonRows8(y[off:], v[off:], k.diag, k.cPtr, k.cSrc, cIdx16, k.val, c0, c1, L)
				specialRows8(&a, k, g, y[off:], v[off:], sIdx16)
			} else {
				commonRows8Go(y[off:], v[off:], k.diag, k.cPtr, k.cSrc, cIdx, k.val, c0, c1, L)
				specialRows8Go(&a, k, g, y[off:], v[off:], sIdx)
			}
		}
	}
	for p := 0; p < L; p++ {
		sink[p] += sk[p]
		rest[p] += rs[p]
	}
}

// rowArgs carries specialRows8AVX2's arguments (its field offsets are
// read from go_asm.h). The mask pointers are offset by the group.
type rowArgs struct {
	y, v     *float64
	diag     *float64 // the common part's arrays: fusedRows8 only
	cPtr     *uint32
	cSrc     *int32
	cIdx     *uint16
	sPtr     *uint32
	sSrc     *int32
	sIdx     *uint16
	sMask    *uint8
	val      *float64
	zero     *uint8 // nil when no passage has target states
	live     *uint8
	lo, hi   int
	rowBytes int
	groups   int
	sink     *[8]float64
	rest     *[8]float64
}

// takeLane[m][p] is 1 if mask m has lane p, else 0 (1 - keepLane).
var takeLane = func() (t [256][8]float64) {
	for m := range t {
		for p := range t[m] {
			t[m][p] = 1 - keepLane[m][p]
		}
	}
	return t
}()

// specialRows8Go adds to rows a.lo..a.hi-1 of group g of y (their common
// part, already there) the special entries, moves the mass of the lanes
// whose target a row is into a.sink, and adds the live lanes to a.rest.
// Masks act by multiplication with 0 or 1, exact on the finite,
// non-negative values of a probability vector; specialRows8AVX2 performs
// the same operations in the same order.
func specialRows8Go[I uint16 | uint32](a *rowArgs, k *kernel, g int, y, v []float64, sIdx []I) {
	G, L := k.groups, k.lanes
	sk, rs := a.sink, a.rest
	for j := a.lo; j < a.hi; j++ {
		acc := (*[8]float64)(y[j*L : j*L+8])
		for e := k.sPtr[j]; e < k.sPtr[j+1]; e++ {
			x := k.val[sIdx[e]]
			s := (*[8]float64)(v[int(k.sSrc[e])*L:][:8])
			keep := &keepLane[k.sMask[int(e)*G+g]]
			for p := range acc {
				t := float64(x * s[p])
				kp := float64(t * keep[p])
				acc[p] += kp
				sk[p] += t - kp
			}
		}
		if k.zero != nil {
			z := k.zero[j*G+g]
			take, keep := &takeLane[z], &keepLane[z]
			for p := range acc {
				sk[p] += float64(acc[p] * take[p])
				acc[p] = acc[p] * keep[p]
			}
		}
		take := &takeLane[k.live[j*G+g]]
		for p := range acc {
			rs[p] += float64(acc[p] * take[p])
		}
	}
}

// commonRows8Go sets, for rows j = lo..hi-1 of one group of 8 lanes (y and
// v start at the group's first lane; rows are L apart),
//
//	y[j] = diag[j]*v[j] + sum over common entries e of row j of val[cIdx[e]]*v[cSrc[e]]
//
// in entry order, every product rounded before it is added (the
// conversions forbid fused multiply-adds): commonRows8AVX2 does exactly
// this, and must give the same bits.
func commonRows8Go[I uint16 | uint32](y, v, diag []float64, cPtr []uint32, cSrc []int32, cIdx []I, val []float64, lo, hi, L int) {
	for j := lo; j < hi; j++ {
		d := diag[j]
		c0, c1 := cPtr[j], cPtr[j+1]
		// Sub-slices of one length: no bounds checks on them in the loop.
		src := cSrc[c0:c1]
		idx := cIdx[c0:c1]
		idx = idx[:len(src)]
		b := j * L
		vj := (*[8]float64)(v[b : b+8])
		a0, a1, a2, a3 := float64(d*vj[0]), float64(d*vj[1]), float64(d*vj[2]), float64(d*vj[3])
		a4, a5, a6, a7 := float64(d*vj[4]), float64(d*vj[5]), float64(d*vj[6]), float64(d*vj[7])
		for t, i := range src {
			x := val[idx[t]]
			s := (*[8]float64)(v[int(i)*L:][:8])
			a0 += float64(x * s[0])
			a1 += float64(x * s[1])
			a2 += float64(x * s[2])
			a3 += float64(x * s[3])
			a4 += float64(x * s[4])
			a5 += float64(x * s[5])
			a6 += float64(x * s[6])
			a7 += float64(x * s[7])
		}
		*(*[8]float64)(y[b : b+8]) = [8]float64{a0, a1, a2, a3, a4, a5, a6, a7}
	}
}

// pool runs a function over row blocks on all cores, reusing goroutines
// across steps.
type pool struct {
	nblocks int
	workers int
	next    atomic.Int64
	fn      func(int)
	start   []chan struct{}
	wg      sync.WaitGroup
}

func newPool(nblocks int) *pool {
	w := min(runtime.GOMAXPROCS(0), nblocks)
	p := &pool{nblocks: nblocks, workers: w}
	if w <= 1 {
		return p
	}
	p.start = make([]chan struct{}, w)
	for i := range p.start {
		p.start[i] = make(chan struct{})
		go func(ch chan struct{}) {
			for range ch {
				p.work()
				p.wg.Done()
			}
		}(p.start[i])
	}
	return p
}

func (p *pool) work() {
	for {
		b := int(p.next.Add(1)) - 1
		if b >= p.nblocks {
			return
		}
		p.fn(b)
	}
}

func (p *pool) run(fn func(int)) {
	p.fn = fn
	p.next.Store(0)
	if p.workers <= 1 {
		p.work()
		return
	}
	p.wg.Add(p.workers)
	for _, ch := range p.start {
		ch <- struct{}{}
	}
	p.wg.Wait()
}

func (p *pool) close() {
	// The workers may exit after the caller goes on: they must not keep
	// the last step's vectors and kernel reachable (a memory budget check
	// right after would count them).
	p.fn = nil
	for _, ch := range p.start {
		close(ch)
	}
}
