package laplace

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/cmplx"
	"runtime"
	"sync"
)

// Engine computes, for sets of states, the probability F(t) that the
// chain is in the set at time t from its start distribution: the transient
// distribution's mass on each set, at any t, by inverting its Laplace
// transform on a contour. For a passage the sets are the closed sets the
// passage ends in (a stopped machine's finished states, the sink of a
// target), so F is the passage-time distribution.
//
// Windows: the t axis is cut into windows [base 16^k, base 16^(k+1)]; a
// window costs windowHalf+1 solves (each one pass over the transitions, in
// complex arithmetic) and then gives every set's F at any t inside it for
// the price of a sum over its nodes. A window is solved the first time a
// t inside it is asked. Means, the probability of ever reaching each set
// and each set's largest mean time to it from a reachable state come from
// real solves (z = 0) in the same order, subtraction-free on an acyclic
// chain. Safe for concurrent use.
type Engine struct {
	sys     *System
	b       []float64 // the start distribution, by position
	sets    [][]int32 // positions of each set
	inSet   [][]bool
	workers int

	c       contour // the windows' contour
	epsilon float64
	mu      sync.Mutex
	// checked is the largest accuracy of a window taken (the contour's
	// prediction for one healthy at the first level, the refinement's
	// estimate for one refined), talbot the largest difference a second
	// contour found at the first level (set aside once a check refined:
	// it was the one that was wrong), level the finest refinement taken.
	checked float64
	talbot  float64
	level   int
	refined bool

	base    float64
	windows map[int]*window
	solves  int
	ctx     context.Context
	err     error // the first failure of a solve (context, singular block)

	means, limits, maxRest []float64
	start                  []float64     // each set's mass at t = 0
	tau                    []float64     // expected time in each state (realSolves)
	blockEnds              map[int32]int // a block's last position -> its index (MaxRest)
	trapped                []bool        // absorbing states and closed blocks holding mass
}

// window holds, per level of the trapezoidal rule, the nodes it adds and
// at each node each set's transform times z'(u) / (2 pi i): level 0 the
// nodes u = j h, j = 0..m, level l >= 1 the nodes u = j h / 2^l for odd j
// up to m 2^l (conjugate nodes give conjugate values: only u >= 0 is
// solved). A window is never changed once made: a finer one replaces it.
type window struct {
	t0   float64
	m    int              // the nodes' range: u up to m h
	z    [][]complex128   // [level][node]
	vals [][][]complex128 // [level][node][set]
}

// maxLevel is the finest refinement Check tries: 2^maxLevel times the
// nodes (Erlang-64 work needs about 2 to 3).
const maxLevel = 4

// New prepares an engine for the chain ordered in sys, started from alpha
// (by chain state, summing to 1), for the sets given as masks over chain
// states (sink, if any, is in every set: it is where a target's passages
// end). base anchors the windows (a time of interest: the makespan goal;
// 0: the largest finite mean);
// the windows' contour has the fewest nodes whose predicted error is at
// most epsilon/10 (or the most nodes offered, whose error is then larger:
// Accuracy says).
func New(ctx context.Context, sys *System, alpha []float64, sets [][]bool, base, epsilon float64) (*Engine, error) {
	if base < 0 || math.IsInf(base, 0) || math.IsNaN(base) {
		return nil, fmt.Errorf("laplace: window base %g is not a positive time", base)
	}
	e := &Engine{sys: sys, b: make([]float64, sys.n), windows: map[int]*window{}, base: base / 4, ctx: ctx,
		c: contourFor(epsilon, sys.sector), epsilon: epsilon}
	e.workers = runtime.GOMAXPROCS(0)
	copy(e.b, alpha)
	for _, mask := range sets {
		in := make([]bool, sys.n)
		var ps []int32
		for i, m := range mask {
			if m {
				in[i] = true
				ps = append(ps, int32(i))
			}
		}
		if sys.sink >= 0 {
			in[sys.sink] = true
			ps = append(ps, sys.sink)
		}
		e.sets = append(e.sets, ps)
		e.inSet = append(e.inSet, in)
	}
	if err := e.realSolves(); err != nil {
		return nil, err
	}
	if base == 0 {
		// No time of interest: the windows are anchored at the largest
		// finite mean.
		for _, m := range e.means {
			if m > 0 && !math.IsInf(m, 1) {
				e.base = math.Max(e.base, m/4)
			}
		}
		if e.base == 0 {
			e.base = 1
		}
	}
	return e, nil
}

// Solves is the number of complex solves so far.
func (e *Engine) Solves() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.solves
}

// Predicted is the contour's predicted error of every F value (at the
// trapezoidal rule's first level).
func (e *Engine) Predicted() float64 { return e.c.predicted }

// Accuracy is the estimated error of every F value: the largest of the
// windows' (the contour's prediction for a window healthy at the first
// level, the refinement's estimate for one refined), and the difference
// a second contour found (Check) unless a check had to refine; the
// contour's prediction before any window is solved.
func (e *Engine) Accuracy() float64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.windows) == 0 {
		return e.c.predicted
	}
	return math.Max(e.checked, e.talbot)
}

// Sector is the widest angle (radians) of the chain's poles from the
// negative real axis (System.Sector), ComplexBlocks how many blocks have
// complex eigenvalues, and Nodes the contour's m (2m+1 nodes a window at
// the first level).
func (e *Engine) Sector() float64    { return e.sys.sector }
func (e *Engine) ComplexBlocks() int { return e.sys.complexBlocks }
func (e *Engine) Nodes() int         { return e.c.m }

// PoleOrder is the system's longest run of one exit rate (System.PoleOrder).
func (e *Engine) PoleOrder() int { return e.sys.poleOrder }

// Level is the trapezoidal rule's refinement (h / 2^Level).
func (e *Engine) Level() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.level
}

// Anchor is the time the windows are anchored at (a time of interest).
func (e *Engine) Anchor() float64 { return 4 * e.base }

// WindowSolves is the number of solves a window costs (at the first
// level); CheckSolves those of a Check that agrees.
func (e *Engine) WindowSolves() int { return e.c.m + 1 }
func (e *Engine) CheckSolves() int  { return checkNodes }

// Mean is set k's expected first time of being in the set (+Inf when the
// chain may never get there), Limit the probability that it ever does,
// MaxRest the largest expected time to the set from a state the chain
// reaches outside it.
func (e *Engine) Mean(k int) float64  { return e.means[k] }
func (e *Engine) Limit(k int) float64 { return e.limits[k] }

// CDF is set k's probability at time t, within the contour's predicted
// error (Predicted; a second contour checks it: Check).
func (e *Engine) CDF(k int, t float64) (float64, error) {
	if t <= 0 || math.IsNaN(t) {
		return e.start[k], nil
	}
	if math.IsInf(t, 1) {
		return e.limits[k], nil
	}
	if v, ok := e.beyond(k, t); ok {
		return v, nil
	}
	w, err := e.window(t)
	if err != nil {
		return math.NaN(), err
	}
	v := w.value(e.c, k, t, w.top())
	// The inversion's error can take a value just outside what a
	// probability can be: it is clamped to [start, limit].
	return math.Min(math.Max(v, e.start[k]), e.limits[k]), nil
}

// beyond answers for a t below every solved window where set k's value at
// the lowest window's start is within the accuracy of its start mass, or
// above them where its value at the highest window's end is within the
// accuracy of its limit: F is nondecreasing, so those values hold to that
// accuracy, and no window need be solved for the early rise of a passage
// that takes its time, or its late tail.
func (e *Engine) beyond(k int, t float64) (float64, bool) {
	e.mu.Lock()
	lo, hi := math.MaxInt, math.MinInt
	for i := range e.windows {
		lo, hi = min(lo, i), max(hi, i)
	}
	wlo, whi := e.windows[lo], e.windows[hi]
	acc := math.Max(e.checked, e.talbot)
	e.mu.Unlock()
	if wlo == nil {
		return 0, false
	}
	if t < wlo.t0 {
		if v := wlo.value(e.c, k, wlo.t0, wlo.top()); v-e.start[k] <= acc {
			return e.start[k], true
		}
	}
	if end := whi.t0 * windowRatio; t > end {
		if v := whi.value(e.c, k, end, whi.top()); e.limits[k]-v <= acc {
			return e.limits[k], true
		}
	}
	return 0, false
}

// PDF is the density of set k's probability at t > 0 (the derivative of
// CDF): the same sum with the transform multiplied by z (F(0) is a jump
// at 0, outside t > 0).
func (e *Engine) PDF(k int, t float64) (float64, error) {
	if !(t > 0) || math.IsInf(t, 1) {
		return 0, nil
	}
	w, err := e.window(t)
	if err != nil {
		return math.NaN(), err
	}
	return w.sum(e.c, k, t, w.top(), true), nil
}

// top is the window's finest level.
func (w *window) top() int { return len(w.z) - 1 }

// value is the trapezoidal sum at level for set k at t.
func (w *window) value(c contour, k int, t float64, level int) float64 {
	return w.sum(c, k, t, level, false)
}

// sum is the trapezoidal sum of the window's nodes up to level for set k
// at t, of the transform (or of z times it: the density).
func (w *window) sum(c contour, k int, t float64, level int, density bool) float64 {
	f := 0.0
	for l := 0; l <= level; l++ {
		for i, z := range w.z[l] {
			v := cexpScaled(z, t) * w.vals[l][i][k]
			if density {
				v *= z
			}
			if l == 0 && i == 0 {
				f += real(v)
			} else {
				f += 2 * real(v)
			}
		}
	}
	return f * c.h / float64(int(1)<<level)
}

// coarse is the first level's sum on every other node (step 2h) for set
// k at t.
func (w *window) coarse(c contour, k int, t float64) float64 {
	f := 0.0
	for i := 0; i < len(w.z[0]); i += 2 {
		v := real(cexpScaled(w.z[0][i], t) * w.vals[0][i][k])
		if i == 0 {
			f += v
		} else {
			f += 2 * v
		}
	}
	return f * 2 * c.h
}

// estimate is the error estimate of the sum at level-1 for set k at t
// from the sum at level: their difference (the rule converges
// geometrically, so the finer sum is far closer), plus the last node's
// term (the truncation of the sum, which both share) and the rounding of
// the terms.
func (w *window) estimate(c contour, k int, t float64, level int) float64 {
	diff := math.Abs(w.value(c, k, t, level) - w.value(c, k, t, level-1))
	last, round := w.tail(c, k, t, level)
	return diff + last + round
}

// tail is the sum's last terms at level for set k at t (the largest of
// the last node's of each level: about what the truncation of the sum
// leaves out) and the rounding of its terms.
func (w *window) tail(c contour, k int, t float64, level int) (last, round float64) {
	mass := 0.0
	hl := c.h / float64(int(1)<<level)
	for l := 0; l <= level; l++ {
		for i, z := range w.z[l] {
			a := 2 * hl * cmplx.Abs(cexpScaled(z, t)*w.vals[l][i][k])
			mass += a
			if i == len(w.z[l])-1 {
				last = math.Max(last, a)
			}
		}
	}
	return last, 0x1p-50 * mass
}

// window returns the window holding t, solved to the level and range its
// health asks (windowAt).
func (e *Engine) window(t float64) (*window, error) {
	k := int(math.Floor(math.Log(t/e.base) / math.Log(windowRatio)))
	return e.windowAt(k, 0)
}

// windowAt returns window k solved to level at least, solving what is
// missing, and checks a window it solves (health): one whose rule at h
// and 2h differ by more than the contour predicts, or whose two finest
// levels differ by more than epsilon, is solved again a level finer; one
// whose last terms are too large to leave out is solved again over a
// longer range of nodes. Each window goes as far as it needs (the
// others keep their cost), and the engine's accuracy becomes the largest
// refined estimate, so that every window's values keep the accuracy the
// engine states, not only the goal's (a group's rise at the first
// seconds of Erlang work was 1.3e-5 off while the goal's window was
// right).
func (e *Engine) windowAt(k, level int) (*window, error) {
	m := e.c.m
	for {
		w, fresh, err := e.solveTo(k, level, m)
		if err != nil || !fresh {
			return w, err
		}
		need, est, extend := e.health(w)
		if extend && w.m < maxRange*e.c.m {
			m, level = w.m+w.m/2, w.top()
			continue
		}
		if need <= w.top() {
			e.mu.Lock()
			if w.top() > 0 || w.m > e.c.m {
				e.level = max(e.level, w.top())
				e.checked = math.Max(e.checked, est)
			} else {
				e.checked = math.Max(e.checked, e.c.predicted)
			}
			e.mu.Unlock()
			return w, nil
		}
		level = need
	}
}

// coarseMargin is how far above the contour's prediction for 2h a window's
// sums at h and 2h may differ before it is refined: a CDF's transform
// (about 1/z near the contour's vertex) takes them 1.1 times past it on an
// exponential network whose rule at h is right to 1e-14 (the prediction
// assumes a transform bounded by 1), while poles of high order take them
// 4.4 (Erlang-16 at its mean) to 4,000 times past it.
const coarseMargin = 4

// maxRange is the longest the nodes' range grows, in contour ranges.
const maxRange = 4

// health is the level window w needs, the error estimate of its values at
// its finest level (0 at the first level, where the contour's prediction
// holds), and whether the nodes' range must grow: at t0, 2 t0, ..., 16 t0
// and for every set, the last terms of the sum must be below a tenth of
// epsilon (the range is extended otherwise: refining h leaves the
// truncation as it is); the first level's sums at h and 2h (every other
// node) must differ by at most the contour's prediction for 2h (a
// transform the analysis fits, bounded near the contour, does; poles of
// high order near it do not, and then the prediction for h does not hold
// either: both scale with the transform's size there); a finer level's
// estimate (window.estimate) must be at most epsilon, until maxLevel.
func (e *Engine) health(w *window) (int, float64, bool) {
	top := w.top()
	worst, lastWorst, gain := 0.0, 0.0, false
	for i := 0; i <= 4; i++ {
		t := w.t0 * float64(int(1)<<(i))
		for s := range e.sets {
			last, round := w.tail(e.c, s, t, top)
			lastWorst = math.Max(lastWorst, last)
			if top == 0 {
				worst = math.Max(worst, math.Abs(w.value(e.c, s, t, 0)-w.coarse(e.c, s, t)))
				continue
			}
			diff := math.Abs(w.value(e.c, s, t, top) - w.value(e.c, s, t, top-1))
			est := diff + last + round
			worst = math.Max(worst, est)
			// A finer level can only shrink the difference of levels:
			// where the truncation or the rounding is as large, it
			// would gain nothing.
			gain = gain || (est > e.epsilon && diff > math.Max(last, round))
		}
	}
	switch {
	case lastWorst > e.epsilon/10 && lastWorst > e.c.predicted:
		return top, math.Max(worst, lastWorst), true
	case top == 0 && (worst > coarseMargin*e.c.coarse || e.c.predicted > e.epsilon/10):
		// A transform the analysis does not fit, or a contour whose
		// prediction does not reach epsilon (a steep one, for poles of
		// high order): the refinement's estimate instead.
		return 1, 0, false
	case top == 0 && w.m > e.c.m:
		return 0, math.Max(e.c.predicted, lastWorst), false
	case top == 0:
		return 0, 0, false
	case gain && top < maxLevel:
		return top + 1, worst, false
	}
	return top, worst, false
}

// solveTo returns window k solved to level and range m at least, and
// whether this call solved it (a window of a shorter range is solved
// again from the start).
func (e *Engine) solveTo(k, level, m int) (*window, bool, error) {
	e.mu.Lock()
	if e.err != nil {
		err := e.err
		e.mu.Unlock()
		return nil, false, err
	}
	old := e.windows[k]
	e.mu.Unlock()
	if old != nil && old.m >= m && old.top() >= level {
		return old, false, nil
	}
	if old != nil && old.m != m {
		if old.m > m {
			m = old.m
		} else {
			old = nil
		}
	}
	t0 := e.base * math.Pow(windowRatio, float64(k))
	w, added, err := e.solveWindow(t0, old, level, m)
	e.mu.Lock()
	defer e.mu.Unlock()
	if err != nil {
		if e.err == nil {
			e.err = err
		}
		return nil, false, err
	}
	e.solves += added
	if cur := e.windows[k]; cur != nil && cur.m >= w.m && cur.top() >= w.top() {
		return cur, false, nil // solved meanwhile by another caller
	}
	e.windows[k] = w
	return w, true, nil
}

// solveWindow returns the window starting at t0 solved to level: old's
// levels (nil: none) and the transforms at the nodes of the levels above
// them, solved on the engine's workers; and how many solves that took.
func (e *Engine) solveWindow(t0 float64, old *window, level, m int) (*window, int, error) {
	w := &window{t0: t0, m: m}
	if old != nil {
		w.z, w.vals = append(w.z, old.z...), append(w.vals, old.vals...)
	}
	added := 0
	for l := len(w.z); l <= level; l++ {
		var js []int
		if l == 0 {
			for j := 0; j <= m; j++ {
				js = append(js, j)
			}
		} else {
			for j := 1; j < m<<l; j += 2 {
				js = append(js, j)
			}
		}
		zs := make([]complex128, len(js))
		dzs := make([]complex128, len(js))
		for i, j := range js {
			zs[i], dzs[i] = e.c.node(j, l, t0)
		}
		vals := make([][]complex128, len(js))
		err := e.eachNode(zs, func(i int, x []complex128) {
			v := make([]complex128, len(e.sets))
			for s, ps := range e.sets {
				var sum complex128
				for _, p := range ps {
					sum += x[p]
				}
				v[s] = sum * dzs[i]
			}
			vals[i] = v
		})
		if err != nil {
			return nil, 0, err
		}
		w.z, w.vals = append(w.z, zs), append(w.vals, vals)
		added += len(js)
	}
	return w, added, nil
}

// eachNode solves x (zI - Q) = alpha at every z, on the workers, and hands
// each solution to use.
func (e *Engine) eachNode(zs []complex128, use func(k int, x []complex128)) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	next := make(chan int, len(zs))
	for k := range zs {
		next <- k
	}
	close(next)
	for wk := 0; wk < min(e.workers, len(zs)); wk++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := make([]complex128, e.sys.n)
			work := make([]complex128, MaxBlock*MaxBlock+MaxBlock)
			for k := range next {
				if err := e.ctx.Err(); err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
					return
				}
				for i, v := range e.b {
					x[i] = complex(v, 0)
				}
				if err := e.sys.solve(zs[k], x, work); err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
					return
				}
				use(k, x)
			}
		}()
	}
	wg.Wait()
	return firstErr
}

// cexpScaled is e^{zt}.
func cexpScaled(z complex128, t float64) complex128 {
	r := math.Exp(real(z) * t)
	s, c := math.Sincos(imag(z) * t)
	return complex(r*c, r*s)
}

// Quantile is the p-quantile of set k's passage: the least t with F(t) >=
// p (+Inf when the set is reached with a probability below p), found by
// bisection to a relative 1e-12 on the windows' values.
func (e *Engine) Quantile(k int, p float64) (float64, error) {
	if e.start[k] >= p {
		return 0, nil
	}
	if e.limits[k] < p {
		return math.Inf(1), nil
	}
	// Bracket from the mean: F is nondecreasing.
	hi := e.means[k]
	if !(hi > 0) || math.IsInf(hi, 0) {
		hi = e.base * 4
	}
	lo := 0.0
	for i := 0; ; i++ {
		f, err := e.CDF(k, hi)
		if err != nil {
			return math.NaN(), err
		}
		if f >= p {
			break
		}
		if i == 200 {
			return math.Inf(1), nil
		}
		lo, hi = hi, hi*2
	}
	for i := 0; i < 200 && hi-lo > 1e-12*hi; i++ {
		mid := lo + (hi-lo)/2
		f, err := e.CDF(k, mid)
		if err != nil {
			return math.NaN(), err
		}
		if f >= p {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, nil
}

// checkNodes is the number of solves of a Check (half its nodes).
const checkNodes = 16

// Check estimates the error of every set's value at t, and returns the
// estimate. First a second, independent contour (the Talbot contour of
// Schmelzer and Trefethen for t alone, 2*checkNodes nodes): where it
// agrees within epsilon, the difference is the estimate. Where it does
// not, one of the two is wrong, and the trapezoidal rule arbitrates: the
// window's step is halved (the nodes between the old ones solved) until
// two levels agree within epsilon or maxLevel is reached; the estimate is
// then their difference (with the last node's term and the rounding), the
// finer level is used for every window from then on, and the Talbot
// contour's difference no longer counts (poles of high order near the
// real axis, an Erlang chain of many phases, spoil the Talbot contour
// first: its tails run close to the axis).
func (e *Engine) Check(t float64) (float64, error) {
	e.mu.Lock()
	refined := e.refined
	e.mu.Unlock()
	if refined {
		return e.refine(t)
	}
	// A window its health refined has its estimate already: the second
	// contour would add nothing.
	if w, err := e.window(t); err != nil {
		return math.NaN(), err
	} else if w.top() > 0 {
		return e.refine(t)
	}
	n := 2 * checkNodes
	h := 2 * math.Pi / float64(n)
	zs := make([]complex128, checkNodes)
	ws := make([]complex128, checkNodes)
	for k := 0; k < checkNodes; k++ {
		theta := -math.Pi + (float64(k)+0.5)*h
		const c1, c2, c3, c4 = 0.5017, 0.6407, 0.6122, 0.2645
		cot := 1 / math.Tan(c2*theta)
		csc := 1 / math.Sin(c2*theta)
		scale := complex(float64(n)/t, 0)
		zs[k] = scale * complex(c1*theta*cot-c3, c4*theta)
		ws[k] = scale * complex(-c1*c2*theta*csc*csc+c1*cot, c4) * complex(h/(2*math.Pi), 0) / complex(0, 1)
	}
	sums := make([][]complex128, checkNodes)
	if err := e.eachNode(zs, func(k int, x []complex128) {
		vals := make([]complex128, len(e.sets))
		for s, ps := range e.sets {
			var sum complex128
			for _, p := range ps {
				sum += x[p]
			}
			vals[s] = sum * ws[k] * cexpScaled(zs[k], t)
		}
		sums[k] = vals
	}); err != nil {
		return math.NaN(), err
	}
	e.mu.Lock()
	e.solves += checkNodes
	e.mu.Unlock()
	worst := 0.0
	for s := range e.sets {
		var f complex128
		for k := range zs {
			f += sums[k][s]
		}
		other := 2 * real(f)
		v, err := e.CDF(s, t)
		if err != nil {
			return math.NaN(), err
		}
		worst = math.Max(worst, math.Abs(other-v))
	}
	if worst <= e.epsilon {
		e.mu.Lock()
		e.talbot = math.Max(e.talbot, worst)
		e.mu.Unlock()
		return worst, nil
	}
	return e.refine(t)
}

// refine raises the trapezoidal rule's level until the sums at t of two
// consecutive levels agree within epsilon (or maxLevel), and returns the
// error estimate of the finer one's value at t (window.estimate).
func (e *Engine) refine(t float64) (float64, error) {
	k := int(math.Floor(math.Log(t/e.base) / math.Log(windowRatio)))
	level := 1
	for {
		w, err := e.windowAt(k, level)
		if err != nil {
			return math.NaN(), err
		}
		top := w.top()
		worst := 0.0
		for s := range e.sets {
			worst = math.Max(worst, w.estimate(e.c, s, t, top))
		}
		if worst <= e.epsilon || top >= maxLevel {
			e.mu.Lock()
			e.refined, e.talbot = true, 0 // the Talbot contour's differences are set aside
			e.level = max(e.level, top)
			e.checked = math.Max(e.checked, worst)
			e.mu.Unlock()
			return worst, nil
		}
		level = top + 1
	}
}

// realSolves computes, with real arithmetic at z = 0, every set's mass at
// t = 0, its mean first time and the probability of ever reaching it (the
// largest mean time to it comes on demand: MaxRest). The pass gives tau,
// the expected time spent in each state (b (-Q)^-1, in order): every term
// is a nonnegative product or sum on an acyclic chain, so each value has a
// small relative error; an absorbing state or closed block keeps instead
// the probability of ending in it. Each set must be closed (no transition
// leaves it).
func (e *Engine) realSolves() error {
	s := e.sys
	tau := make([]float64, s.n)
	copy(tau, e.b)
	trapped := make([]bool, s.n) // absorbing states (or closed blocks) holding mass
	if err := e.forwardReal(tau, trapped); err != nil {
		return err
	}
	e.tau, e.trapped = tau, trapped
	for k, in := range e.inSet {
		if err := e.checkClosed(k, in); err != nil {
			return err
		}
		start, mean, limit := 0.0, 0.0, 0.0
		for i := 0; i < s.n; i++ {
			switch {
			case in[i]:
				start += e.b[i]
			case trapped[i]:
				mean = math.Inf(1) // mass that never reaches the set
			default:
				mean += tau[i]
				e.eachSucc(int32(i), func(j int32, r float64) {
					if in[j] {
						limit += tau[i] * r
					}
				})
			}
		}
		e.start = append(e.start, start)
		e.means = append(e.means, mean)
		e.limits = append(e.limits, math.Min(1, start+limit))
	}
	e.maxRest = make([]float64, len(e.sets))
	for k := range e.maxRest {
		e.maxRest[k] = math.NaN()
	}
	return nil
}

// eachSucc calls f with each successor of state i (the sink included)
// and the transition's rate, self-loops left out.
func (e *Engine) eachSucc(i int32, f func(j int32, r float64)) {
	s := e.sys
	if int(i) >= s.c.N || s.absorbing(int(i)) {
		return
	}
	for t := s.c.RowPtr[i]; t < s.c.RowPtr[i+1]; t++ {
		if j := s.succ(i, t); j >= 0 {
			f(j, s.c.RateAt(t))
		}
	}
}

// checkClosed refuses a set that a transition leaves.
func (e *Engine) checkClosed(k int, in []bool) error {
	for i := 0; i < e.sys.n; i++ {
		if !in[i] {
			continue
		}
		leaves := false
		e.eachSucc(int32(i), func(j int32, _ float64) { leaves = leaves || !in[j] })
		if leaves {
			return fmt.Errorf("%w: set %d is not closed: a transition leaves state %d", ErrNotApplicable, k, i)
		}
	}
	return nil
}

// forwardReal solves tau (-Q) = b in order, a block at a time, marking the
// absorbing states and closed blocks that hold mass (their tau keeps the
// mass instead).
func (e *Engine) forwardReal(tau []float64, trapped []bool) error {
	s := e.sys
	n := s.c.N
	work := make([]complex128, MaxBlock*MaxBlock+MaxBlock)
	var x []complex128 // a block's solve reads and writes only its own states
	for k := 0; k < n; k++ {
		if s.blockAt != nil && s.blockAt[k] > 0 {
			b := s.blocks[s.blockAt[k]-1]
			if b.closed {
				for p := b.lo; p < b.hi; p++ {
					trapped[s.order[p]] = tau[s.order[p]] > 0
				}
			} else {
				if x == nil {
					x = make([]complex128, s.n)
				}
				for p := b.lo; p < b.hi; p++ {
					x[s.order[p]] = complex(tau[s.order[p]], 0)
				}
				if err := s.solveBlock(0, b, x, work); err != nil {
					return err
				}
				for p := b.lo; p < b.hi; p++ {
					i := s.order[p]
					tau[i] = math.Max(real(x[i]), 0)
				}
				for p := b.lo; p < b.hi; p++ {
					i := s.order[p]
					e.eachSucc(i, func(j int32, r float64) {
						if !b.holds(s, j) {
							tau[j] += tau[i] * r
						}
					})
				}
			}
			k = int(b.hi) - 1
			continue
		}
		i := s.state(k)
		if s.exit[i] == 0 {
			trapped[i] = tau[i] > 0
			continue
		}
		tau[i] /= s.exit[i]
		v := tau[i]
		e.eachSucc(i, func(j int32, r float64) { tau[j] += v * r })
	}
	if s.sink >= 0 {
		trapped[s.sink] = tau[s.sink] > 0
	}
	return nil
}

// holds reports whether state j is in the block.
func (b block) holds(s *System, j int32) bool {
	if j < 0 || int(j) >= len(s.pos) {
		return false // the sink
	}
	p := s.pos[j]
	return p >= b.lo && p < b.hi
}

// MaxRest is set k's largest expected time to the set from a state the
// chain reaches outside it (computed on first use: one backward pass).
func (e *Engine) MaxRest(k int) float64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	if math.IsNaN(e.maxRest[k]) {
		e.maxRest[k] = e.maxRestTo(e.inSet[k])
	}
	return e.maxRest[k]
}

// maxRestTo is the largest expected time to the set from a state the
// chain reaches (tau > 0 or a start) outside it: the backward pass m_i =
// (1 + sum_j q_ij m_j) / q_i in reverse order, +Inf from an absorbing
// state or a closed block outside the set.
func (e *Engine) maxRestTo(in []bool) float64 {
	s := e.sys
	n := s.c.N
	m := make([]float64, s.n)
	if s.sink >= 0 && !in[s.sink] {
		m[s.sink] = math.Inf(1)
	}
	worst := 0.0
	for k := n - 1; k >= 0; k-- {
		if s.blockAt != nil && k > 0 {
			// A block is met from its last position: find its start.
			if b, ok := e.blockEndingAt(k); ok {
				e.backBlock(b, in, m)
				for p := b.lo; p < b.hi; p++ {
					i := s.order[p]
					if !in[i] && (e.tau[i] > 0 || e.b[i] > 0) {
						worst = math.Max(worst, m[i])
					}
				}
				k = int(b.lo)
				continue
			}
		}
		i := s.state(k)
		if in[i] {
			continue
		}
		if s.exit[i] == 0 {
			m[i] = math.Inf(1)
		} else {
			v := 1.0
			e.eachSucc(i, func(j int32, r float64) { v += r * m[j] })
			m[i] = v / s.exit[i]
		}
		if e.tau[i] > 0 || e.b[i] > 0 {
			worst = math.Max(worst, m[i])
		}
	}
	return worst
}

// blockEndingAt returns the block whose last position is k.
func (e *Engine) blockEndingAt(k int) (block, bool) {
	s := e.sys
	if e.blockEnds == nil {
		e.blockEnds = make(map[int32]int, len(s.blocks))
		for i, b := range s.blocks {
			e.blockEnds[b.hi-1] = i
		}
	}
	i, ok := e.blockEnds[int32(k)]
	if !ok {
		return block{}, false
	}
	return s.blocks[i], true
}

// backBlock solves (-Q_B) m_B = 1 + the flow to solved states for a block
// outside the set (m +Inf on a closed block), by the elimination of
// gthEliminate: subtraction-free, so a block cycled through fast and left
// slowly keeps its digits.
func (e *Engine) backBlock(bl block, in []bool, m []float64) {
	s := e.sys
	if in[s.order[bl.lo]] {
		return // the set: 0
	}
	b := int(bl.hi - bl.lo)
	if bl.closed {
		for p := bl.lo; p < bl.hi; p++ {
			m[s.order[p]] = math.Inf(1)
		}
		return
	}
	r := make([]float64, b*b)
	kill := append([]float64(nil), bl.leak...)
	c := make([]float64, b)
	for i := 0; i < b; i++ {
		for j := 0; j < b; j++ {
			if i != j {
				r[i*b+j] = bl.q[i*b+j]
			}
		}
		c[i] = 1
		e.eachSucc(s.order[int(bl.lo)+i], func(j int32, rate float64) {
			if !bl.holds(s, j) {
				c[i] += rate * m[j]
			}
		})
	}
	if err := gthEliminate(r, kill, b, bl.env); err != nil {
		for k := range c {
			c[k] = math.NaN() // a block the chain leaves is never singular
		}
	} else {
		// Forward: c_i += q_ik c_k / p_k; back: m_k = (c_k + sum over
		// later j of q_kj m_j) / p_k.
		for k := 0; k < b; k++ {
			ck := c[k] / r[k*b+k]
			for i := k + 1; i <= int(bl.env[b+k]); i++ {
				c[i] += r[i*b+k] * ck
			}
		}
		for k := b - 1; k >= 0; k-- {
			v := c[k]
			for j := k + 1; j <= int(bl.env[k]); j++ {
				v += r[k*b+j] * c[j]
			}
			c[k] = v / r[k*b+k]
		}
	}
	for k := 0; k < b; k++ {
		m[s.order[int(bl.lo)+k]] = c[k]
	}
}

// Transient returns the chain's distribution at time t from alpha (by
// state; the sink's mass, that of the passages ended, left out), by
// inverting each state's transform on one window's contour (t inside it),
// and an estimate of the largest error of any state's value: the
// trapezoidal rule at h and h/2 (and finer while they differ by more than
// epsilon, up to maxLevel), their largest difference plus the last node's
// term and the rounding, as Check's refinement. Values below 0 (the
// inversion's error around a probability near 0) are set to 0. A system
// with a closed block of several states is refused (ErrNotApplicable):
// its solves keep only the block's total. It also returns the solves.
func Transient(ctx context.Context, sys *System, alpha []float64, t, epsilon float64) ([]float64, float64, int, error) {
	if !(t > 0) || math.IsInf(t, 0) {
		return nil, 0, 0, fmt.Errorf("laplace: time %g: expected a finite number > 0", t)
	}
	for _, b := range sys.blocks {
		if b.closed {
			return nil, 0, 0, fmt.Errorf("%w: a closed block of %d states (the transient distribution inside it is not solved)", ErrNotApplicable, b.hi-b.lo)
		}
	}
	c := contourFor(epsilon, sys.sector)
	t0 := t / 4
	e := &Engine{sys: sys, b: make([]float64, sys.n), ctx: ctx, workers: runtime.GOMAXPROCS(0)}
	copy(e.b, alpha)
	n := sys.c.N
	var sums [][]float64 // per level, the weighted sum of the nodes it adds
	solves := 0
	value := func(level int) []float64 {
		v := make([]float64, n)
		for l := 0; l <= level; l++ {
			for i, x := range sums[l] {
				v[i] += x
			}
		}
		scale := c.h / float64(int(1)<<level)
		for i := range v {
			v[i] *= scale
		}
		return v
	}
	var lastTerm float64
	for level := 0; level <= maxLevel; level++ {
		var js []int
		if level == 0 {
			for j := 0; j <= c.m; j++ {
				js = append(js, j)
			}
		} else {
			for j := 1; j < c.m<<level; j += 2 {
				js = append(js, j)
			}
		}
		zs, dzs := make([]complex128, len(js)), make([]complex128, len(js))
		for i, j := range js {
			zs[i], dzs[i] = c.node(j, level, t0)
		}
		sum := make([]float64, n)
		var mu sync.Mutex
		last := len(js) - 1
		err := e.eachNode(zs, func(k int, x []complex128) {
			w := 2.0
			if level == 0 && js[k] == 0 {
				w = 1
			}
			f := cexpScaled(zs[k], t) * dzs[k]
			mu.Lock()
			defer mu.Unlock()
			for i := 0; i < n; i++ {
				v := w * real(f*x[i])
				sum[i] += v
				if k == last {
					lastTerm = math.Max(lastTerm, math.Abs(v)*c.h/float64(int(1)<<level))
				}
			}
		})
		if err != nil {
			return nil, 0, solves, err
		}
		solves += len(js)
		sums = append(sums, sum)
		if level == 0 {
			continue
		}
		fine, coarse := value(level), value(level-1)
		est := 0.0
		for i := range fine {
			est = math.Max(est, math.Abs(fine[i]-coarse[i])+0x1p-50*math.Abs(fine[i]))
		}
		est += lastTerm
		if est <= epsilon || level == maxLevel {
			for i, v := range fine {
				if v < 0 {
					fine[i] = 0
				}
			}
			return fine, est, solves, nil
		}
	}
	return nil, 0, solves, errors.New("laplace: no level of the trapezoidal rule was tried")
}

// TransientApplies reports whether Transient solves sys (no closed block
// of several states, inside which it keeps only the block's total).
func TransientApplies(sys *System) bool {
	for _, b := range sys.blocks {
		if b.closed {
			return false
		}
	}
	return true
}
