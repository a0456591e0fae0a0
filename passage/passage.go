package passage

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"pepa/ctmc"
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
	// Method is "uniformization", or "dense matrix exponential" for a
	// small chain whose series would be too long (DenseMaxStates).
	Method string
	dense  *denseDist
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
// density inside a bisection bracket. The result must be Complete. It returns
// +Inf if the passage reaches its target with probability below p.
func (r *Result) Quantile(p float64) (float64, error) {
	if !(p > 0 && p < 1) {
		return 0, fmt.Errorf("quantile %g must be in (0, 1)", p)
	}
	if !r.Complete {
		return 0, fmt.Errorf("quantiles need the complete passage distribution")
	}
	if r.dense != nil {
		return r.dense.quantile(p, r.Absorbed[len(r.Absorbed)-1], r.Epsilon), nil
	}
	if r.absorbedAt(len(r.Absorbed)) < p-r.Epsilon {
		return math.Inf(1), nil
	}
	cdf := func(t float64) float64 { v, _ := r.CDF(t); return v }
	if cdf(0) >= p {
		return 0, nil
	}
	hi := 1 / r.Q
	for cdf(hi) < p {
		hi *= 2
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
	// A small chain whose series would be very long (rates orders of
	// magnitude apart) is solved densely instead.
	small := c.N <= DenseMaxStates && opt.MaxIterations <= 0
	if small {
		opt.MaxIterations = DenseSwitchSteps
	}
	var results []*Result
	for start := 0; start < len(probs); start += maxBlock {
		end := min(start+maxBlock, len(probs))
		rs, err := solveBlock(ctx, c, probs[start:end], q, len(probs), opt)
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
const maxBlock = 8

// rowBlock is the number of rows one worker takes at a time. It does not
// depend on the number of cores, and sums over rows are reduced block by
// block in order, so results are bit-for-bit the same whatever GOMAXPROCS.
const rowBlock = 4096

type kernel struct {
	n, p  int
	lanes int // 1 for a single passage, else 8 (unused lanes stay zero)
	// Transposed, uniformized matrix without self-loops, split into entries
	// whose action ends no passage of the block (common) and the others
	// (special). A special entry carries one value per lane: the rate, or 0
	// for a passage it ends (that mass goes to the passage's target). With
	// one passage every special entry ends it, so none is stored.
	cPtr  []int64
	cSrc  []int32
	cVal  []float64
	sPtr  []int64
	sSrc  []int32
	sVal8 []float64

	diag []float64 // [j*lanes+p]: probability of staying in j
	out  []float64 // [j*lanes+p]: probability of jumping from j to passage p's target
	zero []bool    // [j*lanes+p]: j is a target state of passage p (mass there is absorbed)
	live []bool    // [j*lanes+p]: j is not a target of passage p and can reach it
	anyZ bool
}

func solveBlock(ctx context.Context, c *ctmc.Chain, probs []Problem, q float64, totalPassages int, opt Options) ([]*Result, error) {
	n, P := c.N, len(probs)
	k, err := buildKernel(c, probs, q)
	if err != nil {
		return nil, err
	}
	L := k.lanes

	results := make([]*Result, P)
	v := make([]float64, n*L)
	for p, pr := range probs {
		r := &Result{Q: q, Epsilon: opt.Epsilon, Method: "uniformization"}
		a0 := 0.0
		for i, x := range pr.Alpha {
			if pr.TargetStates != nil && pr.TargetStates[i] {
				a0 += x
				r.Reachable = r.Reachable || x > 0
			} else {
				v[i*L+p] = x
				r.Reachable = r.Reachable || (x > 0 && k.live[i*L+p])
			}
		}
		r.Absorbed = append(r.Absorbed, a0)
		results[p] = r
	}
	// The series stops at the budget, or for a horizon at the right
	// truncation point of q*Horizon (+1: the density needs one more), or
	// as soon as every passage's absorbable mass is below Epsilon/2.
	budget := MaxSeriesValues / totalPassages
	if opt.MaxIterations > 0 {
		budget = min(budget, opt.MaxIterations)
	}
	kmax, known := budget, false
	if !opt.Complete {
		right, err := PoissonRight(q*math.Max(opt.Horizon, 0), opt.Epsilon/2)
		if err != nil {
			return nil, err
		}
		if right < budget {
			kmax, known = right+1, true
		}
	}
	progressMax := 0
	if known {
		progressMax = kmax
	}
	done := make([]bool, P)
	rest := make([]float64, P)
	for p, r := range results {
		rest[p] = k.restMass(v, p)
		r.Rest = rest[p]
		if !r.Reachable || rest[p] <= opt.Epsilon/2 {
			done[p], r.Complete = true, true
		}
	}
	y := make([]float64, n*L)
	nblocks := (n + rowBlock - 1) / rowBlock
	sinkPart := make([]float64, nblocks*L)
	restPart := make([]float64, nblocks*L)
	pool := newPool(nblocks)
	defer pool.close()
	last := time.Now()
	for step := 1; step <= kmax; step++ {
		if allTrue(done) {
			break
		}
		if step&63 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
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
			r.Absorbed = append(r.Absorbed, r.Absorbed[len(r.Absorbed)-1]+sink)
			r.Rest = rs
			if rs <= opt.Epsilon/2 {
				done[p], r.Complete = true, true
			}
		}
	}
	if !known {
		for p, r := range results {
			if !r.Complete {
				return nil, fmt.Errorf("%w: passage %d still has %.3g of its probability in states that can reach the target after %d steps (q = %.6g, so t = %.6g; epsilon/2 = %.3g)",
					ErrTooManySteps, p, r.Rest, kmax, q, float64(kmax)/q, opt.Epsilon/2)
			}
		}
	}
	return results, nil
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
	n, P := c.N, len(probs)
	L := 1
	if P > 1 {
		L = 8
	}
	k := &kernel{n: n, p: P, lanes: L}
	mask := targetMask(probs)
	for _, pr := range probs {
		if pr.TargetStates != nil {
			k.anyZ = true
		}
	}
	// Count entries per target row.
	k.cPtr = make([]int64, n+1)
	k.sPtr = make([]int64, n+1)
	for i := 0; i < n; i++ {
		for e := c.RowPtr[i]; e < c.RowPtr[i+1]; e++ {
			j := c.Col[e]
			if int(j) == i {
				continue
			}
			switch {
			case mask.of(c.Act[e]) == 0:
				k.cPtr[j+1]++
			case L > 1:
				k.sPtr[j+1]++
			}
		}
	}
	for j := 0; j < n; j++ {
		k.cPtr[j+1] += k.cPtr[j]
		k.sPtr[j+1] += k.sPtr[j]
	}
	k.cSrc, k.cVal = make([]int32, k.cPtr[n]), make([]float64, k.cPtr[n])
	k.sSrc, k.sVal8 = make([]int32, k.sPtr[n]), make([]float64, 8*k.sPtr[n])
	cFill := append([]int64(nil), k.cPtr[:n]...)
	sFill := append([]int64(nil), k.sPtr[:n]...)
	k.diag = make([]float64, n*L)
	k.out = make([]float64, n*L)
	k.live = make([]bool, n*L)
	if k.anyZ {
		k.zero = make([]bool, n*L)
	}
	leave := make([]float64, P)
	for i := 0; i < n; i++ {
		clear(leave)
		outI := k.out[i*L : i*L+P]
		for e := c.RowPtr[i]; e < c.RowPtr[i+1]; e++ {
			j, a, r := c.Col[e], c.Act[e], c.Rate[e]
			m := mask.of(a)
			for p, pr := range probs {
				toTarget := m&(1<<uint(p)) != 0 || (pr.TargetStates != nil && pr.TargetStates[j])
				if int(j) == i && !toTarget {
					continue // a self-loop that ends nothing changes nothing
				}
				leave[p] += r
				if toTarget {
					outI[p] += r / q
				}
			}
			if int(j) == i {
				continue
			}
			switch {
			case m == 0:
				k.cSrc[cFill[j]], k.cVal[cFill[j]] = int32(i), r/q
				cFill[j]++
			case L > 1:
				f := sFill[j]
				k.sSrc[f] = int32(i)
				for p := 0; p < P; p++ {
					if m&(1<<uint(p)) == 0 {
						k.sVal8[8*f+int64(p)] = r / q
					}
				}
				sFill[j]++
			}
		}
		for p := 0; p < L; p++ {
			if p >= P {
				k.diag[i*L+p] = 1 // unused lane: nothing moves
				continue
			}
			k.diag[i*L+p] = 1 - leave[p]/q
			if probs[p].TargetStates != nil && probs[p].TargetStates[i] {
				k.zero[i*L+p] = true
				continue
			}
			if !(k.diag[i*L+p] >= 0) {
				return nil, fmt.Errorf("uniformization rate %g is below the rate %g at which state %d is left once passage %d's target is absorbing (negative diagonal)", q, leave[p], i, p)
			}
		}
	}
	k.markLive()
	return k, nil
}

// markLive sets live: the states outside a passage's target from which it
// can be reached, by one backward search per passage over the transposed
// matrix from the states with a transition that ends it (out > 0). Mass
// elsewhere can never be absorbed, so it does not count as rest.
func (k *kernel) markLive() {
	L := k.lanes
	stack := make([]int32, 0, 1024)
	for p := 0; p < k.p; p++ {
		for j := 0; j < k.n; j++ {
			if k.out[j*L+p] > 0 {
				k.live[j*L+p] = true
				stack = append(stack, int32(j))
			}
		}
		for len(stack) > 0 {
			j := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			visit := func(i int32) {
				at := int(i)*L + p
				if !k.live[at] && !(k.zero != nil && k.zero[at]) {
					k.live[at] = true
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
}

// restMass is the mass of passage p in states that can still reach its
// target.
func (k *kernel) restMass(v []float64, p int) float64 {
	s := 0.0
	for j := 0; j < k.n; j++ {
		if k.live[j*k.lanes+p] {
			s += v[j*k.lanes+p]
		}
	}
	return s
}

// step computes rows lo..hi of y = v P for every passage, and adds to sink
// the mass that jumps into each passage's target and to rest the new mass
// in states that can still reach it.
func (k *kernel) step(v, y []float64, lo, hi int, sink, rest []float64) {
	if k.lanes == 1 {
		k.step1(v, y, lo, hi, sink, rest)
	} else {
		k.step8(v, y, lo, hi, sink, rest)
	}
}

// step1 is step for a single passage: a plain CSR gather.
func (k *kernel) step1(v, y []float64, lo, hi int, sink, rest []float64) {
	cPtr, cSrc, cVal := k.cPtr, k.cSrc, k.cVal
	sumSink, sumRest := 0.0, 0.0
	for j := lo; j < hi; j++ {
		acc := k.diag[j] * v[j]
		sumSink += k.out[j] * v[j]
		for e := cPtr[j]; e < cPtr[j+1]; e++ {
			acc += cVal[e] * v[cSrc[e]]
		}
		if k.anyZ && k.zero[j] {
			acc = 0
		}
		y[j] = acc
		if k.live[j] {
			sumRest += acc
		}
	}
	sink[0] += sumSink
	rest[0] += sumRest
}

// step8 is step for a block of passages in 8 interleaved lanes, written out
// lane by lane (no inner loop, one bounds check per row of v).
func (k *kernel) step8(v, y []float64, lo, hi int, sink, rest []float64) {
	var sk, rs [8]float64
	for j := lo; j < hi; j++ {
		b := j * 8
		vj := (*[8]float64)(v[b : b+8])
		d := (*[8]float64)(k.diag[b : b+8])
		o := (*[8]float64)(k.out[b : b+8])
		for p := range sk {
			sk[p] += o[p] * vj[p]
		}
		a0, a1, a2, a3 := d[0]*vj[0], d[1]*vj[1], d[2]*vj[2], d[3]*vj[3]
		a4, a5, a6, a7 := d[4]*vj[4], d[5]*vj[5], d[6]*vj[6], d[7]*vj[7]
		for e := k.cPtr[j]; e < k.cPtr[j+1]; e++ {
			x := k.cVal[e]
			s := (*[8]float64)(v[int(k.cSrc[e])*8:][:8])
			a0 += x * s[0]
			a1 += x * s[1]
			a2 += x * s[2]
			a3 += x * s[3]
			a4 += x * s[4]
			a5 += x * s[5]
			a6 += x * s[6]
			a7 += x * s[7]
		}
		for e := k.sPtr[j]; e < k.sPtr[j+1]; e++ {
			x := (*[8]float64)(k.sVal8[8*e:][:8])
			s := (*[8]float64)(v[int(k.sSrc[e])*8:][:8])
			a0 += x[0] * s[0]
			a1 += x[1] * s[1]
			a2 += x[2] * s[2]
			a3 += x[3] * s[3]
			a4 += x[4] * s[4]
			a5 += x[5] * s[5]
			a6 += x[6] * s[6]
			a7 += x[7] * s[7]
		}
		acc := [8]float64{a0, a1, a2, a3, a4, a5, a6, a7}
		if k.anyZ {
			for p := range acc {
				if k.zero[b+p] {
					acc[p] = 0
				}
			}
		}
		*(*[8]float64)(y[b : b+8]) = acc
		t := k.live[b : b+8]
		for p := range acc {
			if t[p] {
				rs[p] += acc[p]
			}
		}
	}
	for p := range sk {
		sink[p] += sk[p]
		rest[p] += rs[p]
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
	for _, ch := range p.start {
		close(ch)
	}
}
