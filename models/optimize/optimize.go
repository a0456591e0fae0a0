package optimize

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"pepa/internal/membudget"
	"pepa/models/spec"
)

// OptimizeOptions controls the search for a robust mapping.
type OptimizeOptions struct {
	Beta      float64
	Objective string        // "min" (default): min_j P(F_j <= beta); "joint": prod_j P(F_j <= beta)
	Budget    time.Duration // default 10 s
	Seed      uint64
	// MakespanSlack, if >= 0, keeps the expected makespan within
	// (1 + MakespanSlack) times the fastest heuristic's.
	MakespanSlack float64
	Epsilon       float64
	// Progress, if set, is called about once a second during the search.
	Progress func(OptimizeProgress)
}

// OptimizeProgress is the state of a running search.
type OptimizeProgress struct {
	Phase   string // "exact" or "search"
	Elapsed time.Duration
	Best    float64 // the best score so far
	Bound   float64 // an upper bound on any mapping's score (1 if unknown yet)
	Moves   int
}

// Candidate is a mapping with its figures.
type Candidate struct {
	Name       string
	Allocation [][]int // per machine, application indices in order
	Score      float64 // the objective
	Robustness float64 // min_j P(F_j <= beta)
	Joint      float64 // prod_j P(F_j <= beta)
	Makespan   float64 // E[max_j F_j] (NaN when not computed)
}

// Reasons a search stops (OptimizeResult.Stopped).
const (
	StoppedProved      = "optimal (proved)"
	StoppedBudget      = "budget" // the value the JSON output had before
	StoppedInterrupted = "interrupted"
)

// OptimizeResult is what Optimize found.
type OptimizeResult struct {
	Heuristics []Candidate
	Best       Candidate
	Stopped    string // StoppedProved, StoppedBudget or StoppedInterrupted
	// Cut lists what the budget left out of the result (the figures it
	// keeps instead are the search's: the same quantities within the
	// solvers' error bounds, the expected makespan unknown).
	Cut []string
	// Proved: Best's score is the largest any mapping reaches (machines
	// computing their applications in specification order).
	Proved bool
	// Bound is an upper bound on the score of every mapping: Best.Score
	// when proved, else the fastest-share bound (bound.go).
	Bound       float64
	Exact       bool // the exact method ran to its end (MakespanSlack may still rule its optimum out)
	Moves       int  // moves and swaps evaluated by the local search
	Restarts    int  // local searches started (from heuristics and perturbations)
	Evaluations int  // machine finishing times solved
	// GroupSolves counts the groups of coupled machines solved by the
	// search of a specification with shared resources (coupledopt.go).
	GroupSolves int
	Elapsed     time.Duration
}

// Gap is how far the best found may be from the optimum.
func (r *OptimizeResult) Gap() float64 { return math.Max(0, r.Bound-r.Best.Score) }

// optimizer evaluates mappings of an Instance, caching each machine's
// probability by the set of applications it computes.
//
// A machine's P(F <= beta) depends on its applications and on which of
// them it computes first: the race of the ideal and perturbed paths is
// decided on the first application's first phase, so its rates weigh the
// two paths; the order of the others does not matter (their phases add up
// to the same sum, the owner evolving independently of them). Optimize
// keeps each machine's applications in specification order, so a set
// determines the machine's figure, and its optimum is over such mappings.
type optimizer struct {
	in  *spec.Instance
	opt OptimizeOptions
	// ctx ends the current phase: the caller's context (parent) with the
	// search's deadline during the search, with the budget's end before
	// and after it (phases.go of the budget: Optimize).
	ctx      context.Context
	parent   context.Context
	deadline time.Time // the search's
	end      time.Time // the budget's: the whole call ends by then
	start    time.Time
	// figured holds the mappings analysed as pepa robustness analyses
	// them (by allocation), and analysis the longest one took: the final
	// analyses are planned into the budget with it.
	figured  map[string]Candidate
	analysis time.Duration
	// The search's end: a timer cancelling its context at deadline, and
	// the margin kept for writing the result.
	searchEnd *time.Timer
	margin    time.Duration
	cache     map[setKey]float64
	// solver solves the sets for the exact method and the search: faster
	// than machineFinish (package passage), the same within the solvers'
	// error bounds; the figures reported are machineFinish's.
	solver  *machineSolver
	zobrist []uint64 // per application, for set keys of more than 64 applications
	evals   int
	scratch []int
	// eval evaluates mappings: machine by machine, or by groups of
	// coupled machines for a specification with shared resources
	// (mapeval.go, coupledopt.go).
	eval evaluator

	// For progress reports.
	lastReport time.Time
	bestScore  float64
	bound      float64
	moves      int
	phase      string
}

// setKey names a machine's set of applications: the bit mask itself for up
// to 64 applications, else an XOR of per-application random words (the
// figures of the final mapping are recomputed without the cache).
type setKey struct {
	j int32
	h uint64
}

func (o *optimizer) appWord(a int) uint64 {
	if o.zobrist == nil {
		return 1 << uint(a)
	}
	return o.zobrist[a]
}

func (o *optimizer) setHash(apps []int) uint64 {
	var h uint64
	for _, a := range apps {
		h ^= o.appWord(a)
	}
	return h
}

// machineP is P(F_j <= beta) of machine j computing apps (sorted), whose
// set hash is h.
func (o *optimizer) machineP(j int, apps []int, h uint64) (float64, error) {
	key := setKey{int32(j), h}
	if p, ok := o.cache[key]; ok {
		return p, nil
	}
	p, err := o.solver.p(j, apps)
	if err != nil {
		return 0, err
	}
	o.evals++
	o.cache[key] = p
	return p, nil
}

// score is the objective of per-machine probabilities ps, with the other
// measure as a tie-break (so that a search on the minimum still moves
// along plateaus toward better joint probabilities, and vice versa). The
// joint probability is groupAll, the product of the groups' P(all
// finished by beta) (1: no group), times the figures of the machines not
// grouped (grouped[j] false, or j past its end).
func (o *optimizer) score(ps []float64, grouped []bool, groupAll float64) (primary, secondary, minP, joint float64) {
	minP, joint = 1, groupAll
	for j, p := range ps {
		minP = math.Min(minP, p)
		if j >= len(grouped) || !grouped[j] {
			joint *= p
		}
	}
	if o.opt.Objective == "joint" {
		return joint, minP, minP, joint
	}
	return minP, joint, minP, joint
}

func better(a1, a2, b1, b2 float64) bool {
	const tol = 1e-12
	return a1 > b1+tol || (math.Abs(a1-b1) <= tol && a2 > b2+tol)
}

// tick reports progress about once a second and says whether the search
// must stop (budget spent or interrupted).
func (o *optimizer) tick() bool {
	now := time.Now()
	if o.opt.Progress != nil && now.Sub(o.lastReport) >= time.Second {
		o.lastReport = now
		o.opt.Progress(OptimizeProgress{Phase: o.phase, Elapsed: now.Sub(o.start), Best: o.bestScore, Bound: o.bound, Moves: o.moves})
	}
	return o.ctx.Err() != nil || now.After(o.deadline)
}

// newOptimizer is the search's state for in with opt (defaults set),
// started at start.
func newOptimizer(ctx context.Context, in *spec.Instance, opt OptimizeOptions, start time.Time) *optimizer {
	o := &optimizer{in: in, opt: opt, ctx: ctx, parent: ctx, start: start, deadline: start.Add(opt.Budget), end: start.Add(opt.Budget),
		figured: map[string]Candidate{}, cache: map[setKey]float64{}, bound: 1, phase: "heuristics", lastReport: start,
		solver: newMachineSolver(in, opt.Beta, math.Min(opt.Epsilon, 1e-13))}
	o.eval = machineEval{o}
	if len(in.Resources) > 0 || len(in.Pools) > 0 {
		o.eval = &groupEval{o: o, coupling: newCoupling(in, opt.Beta, opt.Epsilon)}
	}
	if nApps := len(in.Apps); nApps > 64 {
		rng := rand.New(rand.NewPCG(opt.Seed, 0x2b0b))
		o.zobrist = make([]uint64, nApps)
		for a := range o.zobrist {
			o.zobrist[a] = rng.Uint64()
		}
	}
	return o
}

// Optimize searches for the most robust mapping of the applications of in
// (each machine computing its applications in specification order).
//
//  1. The classic heuristics for independent tasks on heterogeneous
//     machines (Braun et al. 2001: MET, MCT, Min-min, Max-min, Sufferage)
//     on the ETC matrix (times divided by each machine's availability).
//  2. When it fits in half the budget (estimated from timed solves), the
//     exact optimum: every machine's probability for every set of
//     applications, combined by a dynamic program over subsets; the result
//     is proved optimal.
//  3. Otherwise, iterated local search until the budget is spent: first
//     improvement over moves of one application and swaps of two (all of
//     them on small instances; on large ones those touching the two worst
//     machines and a random sample of the rest), from every heuristic in
//     turn, then from perturbations of the best mapping found. An upper
//     bound (bound.go) says how far from the optimum the result can be.
//
// On interruption (ctx) or budget end it returns the best mapping found so
// far, with Stopped saying why. The search is deterministic for a seed
// when it is not cut short by time.
//
// The budget is the whole call's: every solve runs under a context that
// ends with it. The full analysis of the best start (as pepa robustness
// analyses it) is timed right after the heuristics, and the search stops
// early enough for one more such analysis (of the best found) and a small
// margin; the heuristics' own analyses, the bound's refinement and their
// makespans follow only while they fit. What the budget left out is named
// in Cut, with the search's figures in its place.
func Optimize(ctx context.Context, in *spec.Instance, opt OptimizeOptions) (*OptimizeResult, error) {
	start := time.Now()
	if opt.Objective == "" {
		opt.Objective = "min"
	}
	if opt.Budget <= 0 {
		opt.Budget = 10 * time.Second
	}
	if opt.Epsilon <= 0 {
		opt.Epsilon = 1e-10
	}
	o := newOptimizer(ctx, in, opt, start)
	res := &OptimizeResult{Bound: 1}
	whole, cancel := context.WithDeadline(ctx, o.end)
	defer cancel()
	o.ctx = whole

	// 1. Heuristics; the local search starts from those the makespan
	// constraint allows, best first.
	fastest, err := o.runHeuristics(res)
	if err != nil {
		if ctx.Err() == nil && whole.Err() == nil {
			return nil, err
		}
		if len(res.Heuristics) == 0 {
			if ctx.Err() != nil {
				return nil, err
			}
			return nil, fmt.Errorf("the budget of %v ended before the first heuristic's mapping was solved: %w", opt.Budget, err)
		}
		if why := o.stopReason(); why == StoppedBudget {
			var left []string
			for _, h := range spec.Heuristics[len(res.Heuristics):] {
				left = append(left, h.Name)
			}
			res.Cut = append(res.Cut, "the heuristics "+strings.Join(left, ", ")+" (not run)")
		}
		// The best of the heuristics solved so far.
		return o.finish(res, startsOf(res.Heuristics, func(float64) bool { return true }, opt.Objective)[0], o.stopReason())
	}
	allowed := func(ms float64) bool {
		return opt.MakespanSlack < 0 || ms <= (1+opt.MakespanSlack)*fastest*(1+1e-12)
	}
	starts := startsOf(res.Heuristics, allowed, opt.Objective)
	best := starts[0]
	o.bestScore = best.Score

	// Plan the end into the budget: the best start analysed in full (the
	// result if nothing better is found) and timed; the search then
	// stops early enough for one more analysis and a margin for writing.
	if _, err := o.analyzed(best); err != nil {
		if ctx.Err() == nil && whole.Err() == nil {
			return nil, err
		}
		return o.finish(res, best, o.stopReason())
	}
	// The search's deadline moves: while the best is the analysed start
	// it may run to the margin; once it finds better (or before the exact
	// method, whose optimum is analysed after it) it keeps time for one
	// more analysis, half as long again as the longest so far.
	o.margin = min(opt.Budget/50, time.Second)
	o.deadline = o.end.Add(-o.margin)
	search, cancelSearch := context.WithCancel(ctx)
	defer cancelSearch()
	o.searchEnd = time.AfterFunc(time.Until(o.deadline), cancelSearch)
	defer o.searchEnd.Stop()
	o.ctx = search

	// 2. The exact optimum, when it fits (one machine: the only mapping).
	// With shared resources a machine's figure depends on the others on
	// its resources: no dynamic program over its sets (coupledopt.go).
	if len(in.Machines) == 1 {
		res.Proved = true
		return o.finish(res, best, StoppedProved)
	}
	if o.eval.separable() && o.exactFits(len(in.Apps), len(in.Machines)) {
		o.keepTimeForAnalysis()
		c, why, err := o.exactStage(res, best, allowed)
		if err != nil {
			return nil, err
		}
		if why != "" {
			return o.finish(res, c, why)
		}
	}

	// 3. Iterated local search.
	best, why, err := o.searchStage(res, starts, best, allowed)
	if err != nil {
		return nil, err
	}
	return o.finish(res, best, why)
}

// runHeuristics scores the heuristics' mappings with the search's solver
// (res.Heuristics), their expected makespans first only when the makespan
// constraint needs them, and returns the fastest of those.
func (o *optimizer) runHeuristics(res *OptimizeResult) (float64, error) {
	etm := o.in.ExpectedTimes()
	fastest := math.Inf(1)
	for _, h := range spec.Heuristics {
		c, err := o.quick(h.Name, h.Run(o.in, etm), o.opt.MakespanSlack >= 0)
		if err != nil {
			return fastest, err
		}
		res.Heuristics = append(res.Heuristics, c)
		fastest = math.Min(fastest, c.Makespan)
	}
	return fastest, nil
}

// startsOf are the starts of the local search: the heuristics, best first,
// those too slow for the makespan constraint left out.
func startsOf(hs []Candidate, allowed func(float64) bool, objective string) []Candidate {
	var starts []Candidate
	for _, c := range hs {
		if allowed(c.Makespan) {
			starts = append(starts, c)
		}
	}
	sort.SliceStable(starts, func(a, b int) bool {
		return better(starts[a].Score, starts[a].secondary(objective), starts[b].Score, starts[b].secondary(objective))
	})
	return starts
}

// exactStage runs the exact method. It returns the mapping to finish with
// and why, or why "" to search on: the method did not end, or its optimum
// is too slow for the makespan constraint (the search is then under the
// constraint, with the optimum's score as the bound).
func (o *optimizer) exactStage(res *OptimizeResult, best Candidate, allowed func(float64) bool) (Candidate, string, error) {
	o.phase = "exact"
	c, done, err := o.exact()
	if err != nil && o.ctx.Err() == nil {
		return Candidate{}, "", err
	}
	if o.ctx.Err() != nil {
		return best, o.stopReason(), nil
	}
	if !done {
		return Candidate{}, "", nil
	}
	res.Exact = true
	res.Bound, o.bound = c.Score, c.Score
	if o.opt.MakespanSlack >= 0 {
		ms, err := o.eval.makespan(o.ctx, c.Allocation)
		if err != nil {
			if o.ctx.Err() == nil {
				return Candidate{}, "", err
			}
			return best, o.stopReason(), nil
		}
		if !allowed(ms) {
			return Candidate{}, "", nil
		}
	}
	res.Proved = true
	return c, StoppedProved, nil
}

// searchStage runs the iterated local search, with the bound (for the
// progress line and in case the search is cut short) from the best
// heuristic unless the exact method gave it. It returns the best mapping
// found and why the search stopped.
func (o *optimizer) searchStage(res *OptimizeResult, starts []Candidate, best Candidate, allowed func(float64) bool) (Candidate, string, error) {
	if !res.Exact {
		o.phase = "bound"
		b, err := o.upperBound(best.Robustness, best.Joint)
		if err != nil {
			if o.ctx.Err() != nil {
				return best, o.stopReason(), nil
			}
			return Candidate{}, "", err
		}
		res.Bound, o.bound = b, b
	}
	o.phase = "search"
	found, err := o.iteratedSearch(starts, allowed, res)
	if err != nil && o.ctx.Err() == nil {
		return Candidate{}, "", err
	}
	if better(found.Score, found.secondary(o.opt.Objective), best.Score, best.secondary(o.opt.Objective)) {
		best = found
	}
	return best, o.stopReason(), nil
}

// stopReason says why a phase ended early: the caller's interruption, or
// the budget (the phase's deadline).
func (o *optimizer) stopReason() string {
	if o.parent.Err() != nil {
		return StoppedInterrupted
	}
	return StoppedBudget
}

// analyzed is c with the figures pepa robustness gives its mapping
// (analysed once per allocation, with the makespan), timing the analysis.
func (o *optimizer) analyzed(c Candidate) (Candidate, error) {
	key := fmt.Sprint(c.Allocation)
	if f, ok := o.figured[key]; ok {
		f.Name = c.Name
		return f, nil
	}
	t0 := time.Now()
	f, err := o.eval.candidate(o.ctx, c.Name, c.Allocation, true)
	if err != nil {
		return Candidate{}, err
	}
	o.analysis = max(o.analysis, time.Since(t0))
	o.figured[key] = f
	return f, nil
}

// keepTimeForAnalysis moves the search's deadline back to leave time for
// analysing a new best mapping.
func (o *optimizer) keepTimeForAnalysis() {
	if d := o.end.Add(-o.margin - o.analysis*3/2); d.Before(o.deadline) {
		o.deadline = d
		o.searchEnd.Reset(time.Until(d))
	}
}

// fits says whether work estimated to take d still ends within the
// budget.
func (o *optimizer) fits(d time.Duration) bool {
	return time.Now().Add(d).Before(o.end)
}

// finish completes res with best, the search having stopped for why: the
// figures every other verb computes (the evaluator's candidate) for best
// and the heuristics, the bound again from best, and the heuristics'
// makespans, while they fit in the budget (after an interruption, best's
// figures only). What did not fit is named in res.Cut, the search's
// figures kept in its place.
func (o *optimizer) finish(res *OptimizeResult, best Candidate, why string) (*OptimizeResult, error) {
	res.Stopped = why
	interrupted := why == StoppedInterrupted
	if interrupted {
		o.ctx = context.Background() // the figures of the best are still wanted
	} else {
		whole, cancel := context.WithDeadline(o.parent, o.end)
		defer cancel()
		o.ctx = whole
	}
	// cut keeps the search's figures of what the budget ended (err, the
	// budget's end) or left out (err nil, no time for it).
	cut := func(what string, err error) error {
		if err != nil && (interrupted || o.ctx.Err() == nil) {
			return err
		}
		res.Cut = append(res.Cut, what)
		return nil
	}
	var c Candidate
	var err error
	if interrupted && len(o.in.Machines)*len(o.in.Apps) >= 1e5 {
		// Interrupted on a large instance: no makespan.
		c, err = o.eval.candidate(o.ctx, best.Name, best.Allocation, false)
	} else {
		c, err = o.analyzed(best)
	}
	if err != nil {
		if err := cut("the best mapping's analysis as pepa robustness runs it (its expected makespan unknown)", err); err != nil {
			return nil, err
		}
		c = best
	}
	res.Best = c
	if !interrupted {
		if err := o.refigureHeuristics(res, cut); err != nil {
			return nil, err
		}
	}
	if !res.Exact && !interrupted && o.fits(o.analysis) {
		// Again from the best found: a higher floor rules out more.
		o.phase = "bound"
		b, err := o.upperBound(c.Robustness, c.Joint)
		if err == nil {
			res.Bound = math.Min(res.Bound, b)
		} else if err := cut("the bound's refinement from the best mapping", err); err != nil {
			return nil, err
		}
	}
	if res.Proved {
		res.Bound = c.Score
	}
	res.Bound = math.Max(res.Bound, c.Score)
	if !res.Proved && !interrupted && c.Score >= res.Bound-1e-12 {
		res.Proved, res.Stopped = true, StoppedProved
	}
	res.Evaluations = o.evals
	res.GroupSolves = o.eval.groupSolves()
	res.Elapsed = time.Since(o.start)
	return res, nil
}

// refigureHeuristics replaces the heuristics' figures by the reported
// ones (with their makespans), each while one more analysis fits in the
// budget; the others keep the search's figures, and cut names them.
func (o *optimizer) refigureHeuristics(res *OptimizeResult, cut func(string, error) error) error {
	var left []string
	for k := range res.Heuristics {
		h := &res.Heuristics[k]
		if _, done := o.figured[fmt.Sprint(h.Allocation)]; !done && (o.ctx.Err() != nil || !o.fits(o.analysis)) {
			left = append(left, h.Name)
			continue
		}
		hc, err := o.analyzed(*h)
		if err != nil {
			if o.ctx.Err() == nil {
				return err
			}
			left = append(left, h.Name)
			continue
		}
		if !math.IsNaN(h.Makespan) && math.IsNaN(hc.Makespan) {
			hc.Makespan = h.Makespan
		}
		*h = hc
	}
	if len(left) > 0 {
		return cut(fmt.Sprintf("the analysis of %s as pepa robustness runs it (the search's figures shown, no makespan)", strings.Join(left, ", ")), nil)
	}
	return nil
}

// quick scores an allocation with the search's solver and cache.
func (o *optimizer) quick(name string, alloc [][]int, withMakespan bool) (Candidate, error) {
	var st searchState
	if err := o.load(&st, alloc); err != nil {
		return Candidate{}, err
	}
	c := st.snapshot(o, name)
	if withMakespan {
		ms, err := o.eval.makespan(o.ctx, alloc)
		if err != nil {
			return Candidate{}, err
		}
		c.Makespan = ms
	}
	return c, nil
}

func (c Candidate) secondary(objective string) float64 {
	if objective == "joint" {
		return c.Robustness
	}
	return c.Joint
}

// maxExactApps bounds the exact method: its tables hold machines * 2^n
// probabilities and its program takes machines * 3^n steps.
const maxExactApps = 20

// exactFits estimates the exact method's time from a few timed solves of
// random sets (the method solves every set, of every size) and says
// whether it fits in half the budget.
func (o *optimizer) exactFits(n, m int) bool {
	if n > maxExactApps {
		return false
	}
	// Its tables: per machine and set, a probability and a best part
	// (12 bytes), and the program's two rows.
	if need := membudget.Bytes(int64(m+2), int64(1)<<uint(n), 12); membudget.Check(o.ctx, "", need, "") != nil {
		membudget.Degrade(o.ctx, "optimize: the exact method's tables would need %s, %s left of the memory budget: local search instead",
			membudget.FormatSize(need), membudget.FormatSize(membudget.Left(o.ctx)))
		return false
	}
	sets := float64(m) * math.Pow(2, float64(n))
	if sets <= 20_000 {
		return true // a second or so even on a loaded machine
	}
	// The median of timed solves: a loaded machine pauses the process now
	// and then, which a mean would count.
	rng := rand.New(rand.NewPCG(o.opt.Seed, 0xe5a))
	var times []float64
	for j := 0; j < m; j++ {
		for s := 0; s < 5; s++ {
			mask := rng.Uint64() & (1<<uint(n) - 1)
			apps := appsOf(mask, nil)
			t0 := time.Now()
			if _, err := o.machineP(j, apps, o.setHash(apps)); err != nil {
				return false
			}
			times = append(times, time.Since(t0).Seconds())
		}
	}
	sort.Float64s(times)
	perSolve := times[len(times)/2]
	program := float64(m) * math.Pow(3, float64(n)) * 3e-9
	estimate := sets*perSolve + program
	return time.Now().Add(time.Duration(estimate * 1e9)).Before(o.start.Add(o.opt.Budget / 2))
}

func appsOf(mask uint64, buf []int) []int {
	buf = buf[:0]
	for a := 0; mask != 0; a, mask = a+1, mask>>1 {
		if mask&1 != 0 {
			buf = append(buf, a)
		}
	}
	return buf
}

// exact solves every machine for every set of applications (sets as bit
// masks) and finds the best mapping by dynamic programming over subsets:
// with f_j(S) the best score of S on machines 0..j,
//
//	f_j(S) = max over T subset of S of comb(f_{j-1}(S \ T), P_j(T))
//
// where comb is min (objective min) or the product (joint); both are
// non-decreasing in each argument, so the optimum is made of optima. For
// min, a second program maximises the product among the mappings whose
// minimum is the optimum (the tie-break of the search). It returns false
// if the budget or ctx ended it.
func (o *optimizer) exact() (Candidate, bool, error) {
	in := o.in
	n, m := len(in.Apps), len(in.Machines)
	full := uint64(1)<<uint(n) - 1
	P := make([][]float64, m)
	var buf []int
	for j := range P {
		P[j] = make([]float64, full+1)
		for mask := uint64(0); mask <= full; mask++ {
			if mask&63 == 0 && o.tick() {
				return Candidate{}, false, o.ctx.Err()
			}
			buf = appsOf(mask, buf)
			p, err := o.machineP(j, buf, mask)
			if err != nil {
				return Candidate{}, false, err
			}
			P[j][mask] = p
		}
	}
	comb := func(a, b float64) float64 { return a * b }
	if o.opt.Objective != "joint" {
		comb = math.Min
	}
	value, alloc, ok := o.subsetProgram(P, comb, -1)
	if !ok {
		return Candidate{}, false, o.ctx.Err()
	}
	if o.opt.Objective != "joint" {
		// Among the mappings with minimum value, the largest product.
		_, alloc2, ok := o.subsetProgram(P, func(a, b float64) float64 { return a * b }, value-1e-12)
		if !ok {
			return Candidate{}, false, o.ctx.Err()
		}
		alloc = alloc2
	}
	ps := make([]float64, m)
	for j, apps := range alloc {
		var mask uint64
		for _, a := range apps {
			mask |= 1 << uint(a)
		}
		ps[j] = P[j][mask]
	}
	c := Candidate{Name: "exact", Allocation: alloc, Makespan: math.NaN()}
	c.Score, _, c.Robustness, c.Joint = o.score(ps, nil, 1)
	return c, true, nil
}

// subsetProgram maximises comb over the assignments of every application to
// a machine, using only sets T with P_j(T) >= floor (floor < 0: all). It
// returns the best value and an allocation reaching it.
func (o *optimizer) subsetProgram(P [][]float64, comb func(a, b float64) float64, floor float64) (float64, [][]int, bool) {
	m := len(P)
	full := uint64(len(P[0]) - 1)
	usable := func(j int, t uint64) bool { return P[j][t] >= floor || t == 0 }
	// f holds the best value of each set on the machines so far (-1: no
	// assignment reaches the floor); choice[j][S] is machine j's part.
	f := make([]float64, full+1)
	for s := range f {
		f[s] = -1
		if usable(0, uint64(s)) {
			f[s] = P[0][s]
		}
	}
	choice := make([][]uint32, m)
	next := make([]float64, full+1)
	for j := 1; j < m; j++ {
		choice[j] = make([]uint32, full+1)
		lo := uint64(0)
		if j == m-1 {
			lo = full // only the whole set matters on the last machine
		}
		for s := lo; s <= full; s++ {
			if s&255 == 0 && o.tick() {
				return 0, nil, false
			}
			bestV, bestT := -1.0, uint64(0)
			for t := s; ; t = (t - 1) & s {
				if rest := f[s&^t]; rest >= 0 && usable(j, t) {
					if v := comb(rest, P[j][t]); v > bestV {
						bestV, bestT = v, t
					}
				}
				if t == 0 {
					break
				}
			}
			next[s] = bestV
			choice[j][s] = uint32(bestT)
		}
		f, next = next, f
	}
	// Walk the choices back from the whole set.
	alloc := make([][]int, m)
	s := full
	for j := m - 1; j >= 1; j-- {
		t := uint64(choice[j][s])
		alloc[j] = appsOf(t, nil)
		s &^= t
	}
	alloc[0] = appsOf(s, nil)
	return f[full], alloc, true
}

// searchState is a mapping under local search, with each machine's set
// hash and probability, the machines whose figure comes from their group
// (groupEval), and the product of the groups' P(all finished by beta) (1
// without groups).
type searchState struct {
	alloc    [][]int // sorted
	where    []int
	hash     []uint64
	ps       []float64
	grouped  []bool
	groupAll float64
	s1       float64 // score
	s2       float64 // tie-break
}

// load sets st to alloc (each machine's set sorted), with its figures.
func (o *optimizer) load(st *searchState, alloc [][]int) error {
	m := len(o.in.Machines)
	st.alloc = make([][]int, m)
	st.where = make([]int, len(o.in.Apps))
	st.hash = make([]uint64, m)
	st.ps = make([]float64, m)
	st.grouped = make([]bool, m)
	for j, apps := range alloc {
		st.alloc[j] = append([]int(nil), apps...)
		sort.Ints(st.alloc[j])
		for _, a := range apps {
			st.where[a] = j
		}
		st.hash[j] = o.setHash(st.alloc[j])
	}
	return o.figures(st)
}

// figures sets st's figures from its sets: its groups' (if any), then the
// other machines' by machineP, and its score.
func (o *optimizer) figures(st *searchState) error {
	all, err := o.eval.groupFigures(st.alloc, st.ps, st.grouped)
	if err != nil {
		return err
	}
	st.groupAll = all
	for j := range st.alloc {
		if !st.grouped[j] {
			if st.ps[j], err = o.machineP(j, st.alloc[j], st.hash[j]); err != nil {
				return err
			}
		}
	}
	st.s1, st.s2, _, _ = o.score(st.ps, st.grouped, st.groupAll)
	return nil
}

// snapshot is st as a candidate named name (the search's figures).
func (st *searchState) snapshot(o *optimizer, name string) Candidate {
	alloc := make([][]int, len(st.alloc))
	for j := range alloc {
		alloc[j] = append([]int(nil), st.alloc[j]...)
	}
	c := Candidate{Name: name, Allocation: alloc, Makespan: math.NaN()}
	c.Score, _, c.Robustness, c.Joint = o.score(st.ps, st.grouped, st.groupAll)
	return c
}

// move is a candidate change: application a to machine to (b < 0), or a
// swap of applications a and b.
type move struct{ a, b, to int32 }

// without returns apps (sorted) less a, in buf.
func without(buf, apps []int, a int) []int {
	buf = buf[:0]
	for _, x := range apps {
		if x != a {
			buf = append(buf, x)
		}
	}
	return buf
}

// with returns apps (sorted) plus a, sorted, in buf.
func with(buf, apps []int, a int) []int {
	buf = buf[:0]
	i := sort.SearchInts(apps, a)
	buf = append(buf, apps[:i]...)
	buf = append(buf, a)
	return append(buf, apps[i:]...)
}

// try evaluates a move on st and applies it if it improves the score
// (and keeps the makespan allowed). It reports whether it was applied.
func (o *optimizer) try(st *searchState, mv move, allowed func(float64) bool, bufA, bufB *[]int) (bool, error) {
	p, ok := o.pending(st, mv)
	if !ok {
		return false, nil
	}
	o.moves++
	return o.eval.try(st, p, allowed, bufA, bufB)
}

// fullNeighbourhood is the largest number of moves and swaps searched in
// full each pass; larger instances search those touching the two worst
// machines and sampleMoves others.
const (
	fullNeighbourhood = 20_000
	sampleMoves       = 4_000
)

// neighbourhood lists a pass's moves in a random order.
func (o *optimizer) neighbourhood(st *searchState, rng *rand.Rand, cand []move) []move {
	n, m := len(o.in.Apps), len(o.in.Machines)
	cand = cand[:0]
	if n*(m-1)+n*(n-1)/2 <= fullNeighbourhood {
		for a := 0; a < n; a++ {
			for j := 0; j < m; j++ {
				if j != st.where[a] {
					cand = append(cand, move{int32(a), -1, int32(j)})
				}
			}
			for b := a + 1; b < n; b++ {
				if st.where[a] != st.where[b] {
					cand = append(cand, move{int32(a), int32(b), -1})
				}
			}
		}
	} else {
		// The two worst machines: every move of their applications, and
		// every swap of one of them with an application elsewhere.
		w1, w2 := 0, -1
		for j := range st.ps {
			if st.ps[j] < st.ps[w1] {
				w1, w2 = j, w1
			} else if j != w1 && (w2 < 0 || st.ps[j] < st.ps[w2]) {
				w2 = j
			}
		}
		for _, w := range []int{w1, w2} {
			if w < 0 {
				continue
			}
			for _, a := range st.alloc[w] {
				for j := 0; j < m; j++ {
					if j != w {
						cand = append(cand, move{int32(a), -1, int32(j)})
					}
				}
				for b := 0; b < n; b++ {
					if st.where[b] != w {
						cand = append(cand, move{int32(a), int32(b), -1})
					}
				}
			}
		}
		for k := 0; k < sampleMoves; k++ {
			a := rng.IntN(n)
			if rng.IntN(2) == 0 {
				cand = append(cand, move{int32(a), -1, int32(rng.IntN(m))})
			} else {
				cand = append(cand, move{int32(a), int32(rng.IntN(n)), -1})
			}
		}
	}
	rng.Shuffle(len(cand), func(i, k int) { cand[i], cand[k] = cand[k], cand[i] })
	return cand
}

// descend improves st by first improvement until a pass finds nothing or
// the search must stop (then it returns true).
func (o *optimizer) descend(st *searchState, rng *rand.Rand, allowed func(float64) bool, cand *[]move, bufA, bufB *[]int) (bool, error) {
	for {
		*cand = o.neighbourhood(st, rng, *cand)
		improved := false
		for i, mv := range *cand {
			if i%o.eval.tickEvery() == 0 && o.tick() {
				return true, nil
			}
			ok, err := o.try(st, mv, allowed, bufA, bufB)
			if err != nil {
				return true, err
			}
			if ok {
				improved = true
				if better(st.s1, st.s2, o.bestScore, math.Inf(-1)) {
					o.bestScore = st.s1
					o.keepTimeForAnalysis()
				}
			}
		}
		if !improved {
			return false, nil
		}
	}
}

// iteratedSearch runs local searches from every start, then from
// perturbations of the best mapping found, until the budget is spent, ctx
// ends, or the best reaches the bound.
func (o *optimizer) iteratedSearch(starts []Candidate, allowed func(float64) bool, res *OptimizeResult) (Candidate, error) {
	rng := rand.New(rand.NewPCG(o.opt.Seed, 0x5eed))
	n, m := len(o.in.Apps), len(o.in.Machines)
	best := starts[0]
	var st searchState
	var cand []move
	var bufA, bufB []int
	defer func() { res.Moves = o.moves }()
	for k := 0; ; k++ {
		if k < len(starts) {
			if err := o.load(&st, starts[k].Allocation); err != nil {
				return best, err
			}
		} else {
			// Perturb the best: a few random moves, half of them taking an
			// application off the worst machine.
			if err := o.load(&st, best.Allocation); err != nil {
				return best, err
			}
			kicks := 2 + rng.IntN(max(2, min(n/10, 8)))
			for i := 0; i < kicks && m > 1; i++ {
				w := 0
				for j := range st.ps {
					if st.ps[j] < st.ps[w] {
						w = j
					}
				}
				var a int
				if i%2 == 0 && len(st.alloc[w]) > 0 {
					a = st.alloc[w][rng.IntN(len(st.alloc[w]))]
				} else {
					a = rng.IntN(n)
				}
				to := rng.IntN(m - 1)
				if to >= st.where[a] {
					to++
				}
				if err := o.force(&st, a, to); err != nil {
					return best, err
				}
			}
		}
		res.Restarts++
		stop, err := o.descend(&st, rng, allowed, &cand, &bufA, &bufB)
		if err != nil {
			return best, err
		}
		if better(st.s1, st.s2, best.Score, best.secondary(o.opt.Objective)) {
			if o.opt.MakespanSlack < 0 || k < len(starts) || o.allowedNow(&st, allowed) {
				best = st.snapshot(o, "local search")
				o.bestScore = best.Score
			}
		}
		if stop || best.Score >= o.bound-1e-12 {
			return best, nil
		}
	}
}

// allowedNow checks the makespan constraint of a perturbed search's result.
func (o *optimizer) allowedNow(st *searchState, allowed func(float64) bool) bool {
	ms, err := o.eval.makespan(o.ctx, st.alloc)
	return err == nil && allowed(ms)
}

// force moves application a to machine to, whatever the score.
func (o *optimizer) force(st *searchState, a, to int) error {
	from := st.where[a]
	st.alloc[from] = without(nil, st.alloc[from], a)
	st.alloc[to] = with(nil, st.alloc[to], a)
	st.where[a] = to
	st.hash[from], st.hash[to] = o.setHash(st.alloc[from]), o.setHash(st.alloc[to])
	return o.figures(st)
}
