package models

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime/debug"

	"gonum.org/v1/gonum/integrate/quad"

	"pepa/ctmc"
	"pepa/ctmc/simulate"
	"pepa/internal/option"
	"pepa/passage"
	"pepa/passage/laplace"
)

// Options controls a robustness analysis.
type Options struct {
	// Question is what is asked (Request's, which Robustness validates):
	// the goal, the semantics, the machines, the accuracy, the stop rule,
	// the transient engine.
	Question
	// Pragmas of the model (ReadPragmas): initial distributions of
	// components, owner processes. May be nil.
	Pragmas *Pragmas
	// Stage, if not nil, is called at the end of each stage (see
	// passage.Options.Stage), for timing.
	Stage func(name, detail string)
	// Progress, if not nil, is called about every half second while a
	// series of uniformization runs: the machines of its group (nil: the
	// product chain), why its engine was chosen (a group's), the steps done
	// and the most that may be needed (0: not known; passage.Options.Progress).
	// Groups run in parallel: it may be called from several goroutines.
	Progress func(group []string, why string, step, max int)
	// ReleaseChain lets Analyze drop the chain's transitions once the
	// passages' generator is built, when nothing after needs them
	// (independent machines or plug-in semantics: the joint figures come
	// from the distributions): see passage.Options.ReleaseChain. For a
	// caller that analyses a big chain once.
	ReleaseChain bool
	// MaxJointStates bounds the chain with completion flags that gives
	// coupled machines' joint figures under Cycling (0: 2^25 states); past
	// it they are reported unavailable (NaN, with a warning), the machines'
	// own figures unaffected.
	MaxJointStates int
	// MaxGroupStates bounds each group's chain in AnalyzeGroups (0: no
	// bound); a group past it is simulated with Simulate, or fails.
	MaxGroupStates int
	// Simulate, when not nil, estimates a group whose chain passes
	// MaxGroupStates by simulation with these settings, the other groups
	// exact (initial semantics only).
	Simulate *simulate.Options
	// GroupStart, if not nil, gives AnalyzeGroups each group's start
	// distribution over its chain c (finished machines stopped) instead
	// of the initial state and the pragmas' (a filtered state: package
	// models/observe); leaves are the group's components.
	GroupStart func(leaves []*ctmc.Leaf, c *ctmc.Chain) ([]float64, error)
	// Chains, if not nil, keeps the groups' chains AnalyzeGroups derives,
	// by their components' names, and gives them back to later calls on
	// the same structure and stop rule.
	Chains *ChainCache
}

func (o *Options) stage(name, detail string) {
	if o.Stage != nil {
		o.Stage(name, detail)
	}
}

// Question is what an analysis asks of a mapping model (semantics.md
// section 3), shared by Request and Options. The zero values ask for the
// defaults: initial semantics, every machine detected, epsilon 1e-10, the
// 0.99 quantile, finished machines stopped, the engine by predicted cost.
type Question struct {
	Beta      float64           // the makespan goal
	Semantics passage.Semantics // Initial (default) or Plugin
	Machines  []string          // the machines to analyse; empty: detected
	Epsilon   float64           // bound on every probability's truncation error (default 1e-10)
	Quantile  float64           // the "finishing time" quantile (default 0.99)
	// Cycling reads the makespan figures as before 2026-11-25: a machine
	// that has finished keeps cycling (and keeps taking part in what it
	// shares with others), and coupled machines' joint figures come from
	// the chain with completion flags. By default a finished machine
	// stops (semantics.md section 3).
	Cycling bool
	// Transient chooses the engine of each group's passages:
	// passage.EngineAuto (or "") by predicted cost, EngineUniformization
	// or EngineLaplace (Laplace-transform inversion, for groups whose
	// chain is acyclic or has small blocks with real spectra: finished
	// machines stopped, initial semantics) to force one.
	Transient string
	// NoQuantile skips the finishing-time quantiles (Quantile NaN): where
	// nothing prints them, they need not set the cost.
	NoQuantile bool
}

func (o *Question) defaults() {
	if o.Semantics == "" {
		o.Semantics = passage.Initial
	}
	if o.Epsilon <= 0 {
		o.Epsilon = 1e-10
	}
	if o.Quantile <= 0 {
		o.Quantile = 0.99
	}
}

// MachineResult is one machine's finishing-time figures.
type MachineResult struct {
	Name         string
	FirstActions []string
	LastActions  []string
	Applications int
	PByBeta      float64 // P(F <= beta); NaN when not computed (see Note)
	// Availability is the long-run share of the processor the machine's
	// applications get from its owner process, Slowdown its inverse (the
	// factor on mean work time); NaN for a machine without an owner.
	Availability float64
	Slowdown     float64
	Mean         float64 // E[F]; +Inf if the machine may never finish
	Quantile     float64 // the Options.Quantile quantile of F
	Note         string
	// Simulated figures carry their confidence intervals (NaN for exact
	// ones).
	PByBetaLo, PByBetaHi   float64
	MeanLo, MeanHi         float64
	QuantileLo, QuantileHi float64
	Dist                   passage.Distribution `json:"-"` // the finishing-time distribution (optimize sets it for the chains it builds)
	meanError              float64              // bound on Mean's error (estimate for a series sum)
	MaxRest                float64              `json:"-"` // largest mean remaining time over reachable states; NaN: tails come from the series (SeriesTail)
	alpha                  []float64            // the passage's start distribution
	// Sensitivity is set by Sensitivities.
	Sensitivity *Sensitivity
}

// CDF is the machine's finishing-time distribution function (nil result
// when it was not computed).
func (m *MachineResult) CDF(t float64) (float64, error) {
	if m.Dist == nil {
		return math.NaN(), nil
	}
	return m.Dist.CDF(t)
}

// Result is the robustness analysis of one mapping model.
type Result struct {
	Model     string
	Beta      float64
	Semantics passage.Semantics
	States    int // states of the chain solved: the product, or summed over the parts
	// ProductStates is the size of the product chain (+Inf past float64).
	ProductStates float64
	Solved        string // "flat" (the product chain) or "decomposed" (independent parts)
	Why           string // why that path was taken
	Machines      []MachineResult

	Robustness       float64 // min_j P(F_j <= beta) over the computed machines
	PAllByBeta       float64 // P(max_j F_j <= beta)
	ExpectedMakespan float64 // E[max_j F_j]
	MakespanError    float64 // bound on the error of ExpectedMakespan
	Independent      bool    // machines' finishing times are independent
	Dependence       string  // why not, when they are not
	Joint            string  // how the joint figures were obtained
	// Groups are the groups of coupled machines, each with how it was
	// solved (AnalyzeGroups; nil for a flat analysis).
	Groups []GroupResult
	// Epsilon bounds the error of every exact probability: Options'
	// Epsilon, or more where float64 cannot keep it (passage.Solve).
	Epsilon float64
	// Simulated joint figures carry their confidence intervals at
	// Confidence; Confidence is 0, and the intervals meaningless, when
	// every figure is exact.
	PAllLo, PAllHi         float64
	MakespanLo, MakespanHi float64
	Confidence             float64
	// Warnings are problems of the mapping as a whole (an application no
	// machine computes); machine-level ones are in MachineResult.Note.
	Warnings []string
	// Energy are the energy figures (semantics.md section 5), nil when no
	// power is known (Request.Energy, //pepa:power).
	Energy *EnergyResult
	// Sensitive is what the sensitivities single out (Sensitivities; nil
	// when none were computed).
	Sensitive *SensitivitySummary
}

// Bottleneck is the index in Machines of the machine that sets the
// robustness: the smallest P(F <= beta) among the machines computed, the
// first of equals; -1 when none was computed. Every figure that marks a
// bottleneck (the plot, pepa serve's page) takes it from here.
func (r *Result) Bottleneck() int {
	b := -1
	for i := range r.Machines {
		if p := r.Machines[i].PByBeta; !math.IsNaN(p) && (b < 0 || p < r.Machines[b].PByBeta) {
			b = i
		}
	}
	return b
}

// Analyze computes the robustness of the mapping whose chain is c.
func Analyze(ctx context.Context, c *ctmc.Chain, opt Options) (*Result, error) {
	opt.defaults()
	machines, err := FindMachines(c.S, opt.Machines)
	if err != nil {
		return nil, err
	}
	res := &Result{Beta: opt.Beta, Semantics: opt.Semantics, States: c.N, ProductStates: float64(c.N), Solved: "flat"}
	res.Independent, res.Dependence = Independent(c.S, machines)
	res.Warnings = Uncomputed(c.S, machines)

	var pi []float64
	if opt.Semantics == passage.Plugin {
		if pi, err = passage.SteadyForPlugin(ctx, c); err != nil {
			return nil, err
		}
	}
	alpha, err := initialDistribution(c, opt.Pragmas)
	if err != nil {
		return nil, err
	}
	var probs []passage.Problem
	var solved []int // machine index of each problem
	if alpha == nil && opt.Semantics != passage.Plugin {
		// One start vector for every machine (not one each: on a big
		// chain that is 8 bytes a state per machine).
		alpha = make([]float64, c.N)
		alpha[0] = 1
	}
	res.Machines = make([]MachineResult, len(machines))
	for i, m := range machines {
		mr := &res.Machines[i]
		*mr = newMachineResult(m, c.S, opt.Pragmas)
		var pr passage.Problem
		if opt.Semantics == passage.Plugin {
			if sameSet(m.First, m.Last) {
				mr.Note = option.Text("its first and last actions are the same (one application), for which the plug-in semantics computes nothing; use {Semantics} initial")
				continue
			}
			if pr, err = passage.PluginProblem(c, pi, m.First, m.Last); err != nil {
				return nil, fmt.Errorf("machine %s: %w", m.Name, err)
			}
		} else {
			pr = passage.Problem{Alpha: alpha, TargetActions: m.Last}
		}
		probs = append(probs, pr)
		solved = append(solved, i)
	}
	if len(probs) == 0 {
		return nil, option.Errorf("no machine could be analysed under %s semantics (each has a single application); use {Semantics} initial", opt.Semantics)
	}
	opt.stage("start", "")
	if opt.Semantics == passage.Initial {
		done, err := flatLaplace(ctx, c, machines, res, opt, alpha)
		if done || err != nil {
			return res, err
		}
	}
	// The chain is needed after the machines' passages only for the chain
	// with completion flags of coupled machines (see joint).
	release := opt.ReleaseChain && (res.Independent || opt.Semantics == passage.Plugin || len(machines) == 1) && len(c.Col) > meanSolveLimit
	if release {
		debug.FreeOSMemory() // what the derivation left behind, before the generator is built
	}
	popt := passage.Options{Epsilon: opt.Epsilon, Horizon: opt.Beta, Complete: true, Stage: opt.Stage, ReleaseChain: release}
	if opt.Progress != nil {
		popt.Progress = func(step, max int) { opt.Progress(nil, "", step, max) }
	}
	dists, err := passage.Solve(ctx, c, probs, popt)
	if err != nil {
		return nil, err
	}
	res.Robustness = math.Inf(1)
	for k, i := range solved {
		mr := &res.Machines[i]
		mr.Dist = dists[k]
		if mr.PByBeta, err = dists[k].CDF(opt.Beta); err != nil {
			return nil, err
		}
		res.Robustness = math.Min(res.Robustness, mr.PByBeta)
	}
	// Means: on a chain of up to meanSolveLimit transitions by the linear
	// solve (every value to 1e-12, and the largest remaining mean time for
	// the joint figures' tails); on a larger one from the series all
	// passages shared (no second pass over the chain; the joint figures
	// then bound their tails with the series too: maxRest NaN).
	linear := c.Col != nil && len(c.Col) <= meanSolveLimit
	worstTail := 0.0
	for k, i := range solved {
		mr := &res.Machines[i]
		if c.Col == nil {
			m, tail, err := dists[k].SeriesMean()
			if err != nil {
				// As for a mean the solver cannot bound: unavailable, noted.
				mr.Mean, mr.MaxRest, mr.Note = math.NaN(), math.NaN(), fmt.Sprintf("%v: %v", passage.ErrMeanUnavailable, err)
				continue
			}
			mr.Mean, mr.MaxRest, mr.meanError = m, math.NaN(), tail
			if math.IsInf(m, 1) {
				mr.MaxRest = math.Inf(1)
			}
			worstTail = math.Max(worstTail, tail)
			continue
		}
		if err := mr.setMeanFrom(ctx, c, probs[k], dists[k], linear); err != nil {
			return nil, err
		}
		if math.IsNaN(mr.MaxRest) {
			worstTail = math.Max(worstTail, mr.meanError)
		}
	}
	how := "from the series"
	if linear {
		how = "by the linear solve"
	}
	opt.stage("means", fmt.Sprintf("%s, tail estimate %.2g", how, worstTail))
	for k, i := range solved {
		mr := &res.Machines[i]
		if mr.Quantile, err = dists[k].Quantile(opt.Quantile); err != nil {
			return nil, err
		}
		if note := neverFinishes(mr); note != "" {
			mr.Note = note
		}
	}
	opt.stage("quantiles", "")
	if err := joint(ctx, c, machines, res, opt, alpha); err != nil {
		return nil, err
	}
	res.setEpsilon(opt.Epsilon)
	opt.stage("joint", res.Joint)
	return res, nil
}

// setMean sets the machine's mean and largest remaining mean time. A mean
// that cannot be computed (passage.ErrMeanUnavailable) leaves both NaN
// with a note, and the machine's distribution stands.
func (mr *MachineResult) setMean(ctx context.Context, c *ctmc.Chain, pr passage.Problem) error {
	var err error
	mr.Mean, mr.MaxRest, err = passage.MeanTimes(ctx, c, pr)
	if errors.Is(err, passage.ErrMeanUnavailable) && ctx.Err() == nil {
		mr.Mean, mr.MaxRest = math.NaN(), math.NaN()
		mr.Note = err.Error()
		return nil
	}
	return err
}

func sameSet(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// productJoint sets the joint figures of independent machines: the
// product of their probabilities, and E[max] by integration.
func (res *Result) ProductJoint(tol float64) {
	res.PAllByBeta = 1
	var dists []passage.Distribution
	var rest []float64
	cdfErr, scale := 0.0, 0.0
	for i := range res.Machines {
		mr := &res.Machines[i]
		if mr.Dist == nil {
			continue
		}
		res.PAllByBeta *= mr.PByBeta
		dists = append(dists, mr.Dist)
		rest = append(rest, mr.MaxRest)
		cdfErr += mr.Dist.Accuracy()
		scale = math.Max(scale, mr.Mean)
	}
	if math.IsNaN(scale) {
		// Some machine's mean is unavailable, and with it the bound on
		// E[makespan]'s tail: report that as unavailable too.
		res.ExpectedMakespan, res.MakespanError = math.NaN(), math.NaN()
		return
	}
	if len(dists) == 1 {
		// One machine: the makespan is its finishing time.
		for i := range res.Machines {
			if mr := &res.Machines[i]; mr.Dist != nil {
				res.ExpectedMakespan, res.MakespanError = mr.Mean, mr.meanError
			}
		}
		return
	}
	res.ExpectedMakespan, res.MakespanError = MaxMean(cdfProduct(sortByQ(dists)), tailOf(dists, rest), scale, tol, cdfErr, shortestScale(dists))
}

// joint computes P(max F_j <= beta) and E[max F_j].
func joint(ctx context.Context, c *ctmc.Chain, machines []*Machine, res *Result, opt Options, alpha []float64) error {
	if res.Independent || opt.Semantics == passage.Plugin || len(machines) == 1 {
		// One machine's makespan is its own finishing time, however it
		// is coupled to the rest of the model.
		res.ProductJoint(1e-9)
		res.Joint = "product of independent machines"
		switch {
		case len(machines) == 1:
			res.Joint = "the one machine's own finishing time"
		case !res.Independent:
			res.Joint = "product of the machines' plug-in distributions (each has its own start), although " + res.Dependence
		}
		return nil
	}
	if alpha == nil {
		alpha = make([]float64, c.N)
		alpha[0] = 1
	}
	// Stopped machines (Stopped): all finished is the closed set of
	// states where every one is in its terminal state.
	stopped := true
	for _, m := range machines {
		stopped = stopped && finishedState(m.Leaf) >= 0
	}
	if stopped {
		target := make([]bool, c.N)
		for i := range target {
			st := c.State(i)
			target[i] = true
			for _, m := range machines {
				if m.Leaf.Local(st) != finishedState(m.Leaf) {
					target[i] = false
					break
				}
			}
		}
		return res.jointPassage(ctx, c, passage.Problem{Alpha: alpha, TargetStates: target}, opt,
			fmt.Sprintf("passage to every machine finished (stopped) on the product chain (%d states), because %s", c.N, res.Dependence))
	}
	// Machines that keep cycling (Cycling): the chain with a "finished"
	// flag per machine.
	fc, target, fcAlpha, err := flagChain(ctx, c, machines, alpha, opt.MaxJointStates)
	if errors.Is(err, ErrJointTooLarge) {
		res.PAllByBeta, res.ExpectedMakespan, res.MakespanError = math.NaN(), math.NaN(), math.NaN()
		res.Joint = fmt.Sprintf("unavailable: %v", err)
		res.Warnings = append(res.Warnings, option.Sprintf("P(max_j F_j <= beta) and E[makespan] are unavailable (%s): %v; each machine's figures stand (raise {MaxStates}, or estimate them with {SimulateRobustness})", res.Dependence, err))
		return nil
	}
	if err != nil {
		return err
	}
	return res.jointPassage(ctx, fc, passage.Problem{Alpha: fcAlpha, TargetStates: target}, opt,
		fmt.Sprintf("passage to all machines finished on the product chain with completion flags (%d states), because %s", fc.N, res.Dependence))
}

// jointPassage sets the joint figures from the passage to every machine
// finished: its CDF at beta, and its mean, the series' sum when the series
// ran to completion (its estimated tail counted as error), else the linear
// solve.
func (res *Result) jointPassage(ctx context.Context, c *ctmc.Chain, pr passage.Problem, opt Options, how string) error {
	rs, err := passage.Solve(ctx, c, []passage.Problem{pr}, passage.Options{Epsilon: opt.Epsilon, Horizon: opt.Beta, Complete: true})
	if err != nil {
		return err
	}
	if res.PAllByBeta, err = rs[0].CDF(opt.Beta); err != nil {
		return err
	}
	res.Joint = how
	if c.Col != nil && len(c.Col) <= meanSolveLimit {
		var tmp MachineResult
		if err := tmp.setMean(ctx, c, pr); err != nil {
			return err
		}
		res.ExpectedMakespan, res.MakespanError = tmp.Mean, 1e-12*tmp.Mean
		return nil
	}
	if m, tail, serr := rs[0].SeriesMean(); serr == nil {
		// The part beyond the series is estimated (and included): take
		// it as the error, with the sum's rounding.
		res.ExpectedMakespan = m
		res.MakespanError = tail + 1e-12*m
		return nil
	}
	res.ExpectedMakespan, err = passage.Mean(ctx, c, pr)
	switch {
	case errors.Is(err, passage.ErrMeanUnavailable) && ctx.Err() == nil:
		res.ExpectedMakespan, res.MakespanError = math.NaN(), math.NaN()
	case err != nil:
		return err
	default:
		// The blocked solve bounds its error by 1e-12 relative.
		res.MakespanError = 1e-12 * res.ExpectedMakespan
	}
	return nil
}

// MaxMean computes E[max_j F_j] = integral over t >= 0 of 1 - prod_j F_j(t)
// for independent finishing times, and a bound on its error.
//
// prod(t) returns prod_j F_j(t); tail(T) bounds the integral beyond T (for
// passage times, sum_j (1 - F_j(T)) M_j with M_j the largest mean remaining
// time, because 1 - prod F <= sum_j (1 - F_j)); scale is a rough size of the
// result (the largest E[F_j], a lower bound of it); cdfErr bounds the error
// of prod(t) at any t. T doubles from 2*scale until the tail is below
// tol*scale/2 (or T*cdfErr if that is larger); [0, T] is integrated by adaptive bisection with 10-point
// Gauss-Legendre rules (a panel is accepted when its two halves agree with
// it to its share of tol*scale/2, or to 4*cdfErr per unit of time, below
// which the integrand is noise), the first panels set by start. The bound
// returned is the tail, the quadrature differences, the head's (below) and
// T*cdfErr.
func MaxMean(prod func(float64) float64, tail func(float64) float64, scale, tol, cdfErr float64, start QuadratureStart) (float64, float64) {
	if math.IsInf(scale, 1) || math.IsNaN(scale) {
		return math.Inf(1), 0
	}
	if scale <= 0 {
		return 0, 0
	}
	// Stop doubling once the tail is below tol*scale/2, or below the error
	// that the CDFs' own accuracy already puts on [0, T], whichever is larger.
	T := 2 * scale
	tailBound := tail(T)
	for i := 0; i < 60 && !(tailBound <= math.Max(tol*scale/2, T*cdfErr)); i++ {
		T *= 2
		tailBound = tail(T)
	}
	if !(tailBound <= math.Max(tol*scale/2, T*cdfErr)) {
		return math.Inf(1), math.Inf(1)
	}
	tolAbs := tol * scale / 2

	// The head [0, a]: prod is nondecreasing, so there the integrand lies
	// between 1 - prod(a) and 1, and its integral is a (1 - prod(a)/2)
	// within a prod(a)/2, whatever rises inside. Halving a until that is
	// below a quarter of the tolerance brings the panels down to the
	// fastest rise that matters, with no rate to say where it is.
	shortest := start.At
	head, headErr := 0.0, 0.0
	descend := start.Descend && shortest > 0 && shortest < T/16
	if descend {
		p := prod(shortest)
		for i := 0; i < 64 && shortest*p > tolAbs/4; i++ {
			shortest /= 2
			p = prod(shortest)
		}
		head, headErr = shortest*(1-p/2), shortest*p/2
	}

	type seg struct{ a, b, est float64 }
	// gl evaluates the 10-point rule on many segments at once, on all cores.
	gl := func(segs [][2]float64) []float64 {
		nodes := make([]float64, len(segs)*len(glNodes))
		for i, sg := range segs {
			h := sg[1] - sg[0]
			for k, x := range glNodes {
				nodes[i*len(glNodes)+k] = sg[0] + (x+1)*h/2
			}
		}
		vals := make([]float64, len(nodes))
		const chunk = 32
		Parallel(context.Background(), (len(nodes)+chunk-1)/chunk, func(c int) error {
			for k := c * chunk; k < min((c+1)*chunk, len(nodes)); k++ {
				vals[k] = 1 - prod(nodes[k])
			}
			return nil
		})
		out := make([]float64, len(segs))
		for i, sg := range segs {
			h := sg[1] - sg[0]
			for k := range glNodes {
				out[i] += glWeights[k] * h / 2 * vals[i*len(glNodes)+k]
			}
		}
		return out
	}
	const initial = 16
	const maxSegments = 1 << 14
	var first [][2]float64
	if shortest > 0 && shortest < T/initial {
		// 0, s, 2s, 4s, ... each octave in 2 panels up to T/16, then 15
		// panels of T/16 to T (the head [0, s] apart when descended).
		if !descend {
			first = append(first, [2]float64{0, shortest})
		}
		for a := shortest; a < T/initial; a *= 2 {
			b := math.Min(2*a, T/initial)
			first = append(first, [2]float64{a, (a + b) / 2}, [2]float64{(a + b) / 2, b})
		}
		for i := 1; i < initial; i++ {
			first = append(first, [2]float64{T * float64(i) / initial, T * float64(i+1) / initial})
		}
	} else {
		for i := 0; i < initial; i++ {
			first = append(first, [2]float64{T * float64(i) / initial, T * float64(i+1) / initial})
		}
	}
	active := make([]seg, len(first))
	for i, e := range gl(first) {
		active[i] = seg{first[i][0], first[i][1], e}
	}
	total, quadErr := 0.0, 0.0
	for level := 0; len(active) > 0; level++ {
		halves := make([][2]float64, 0, 2*len(active))
		for _, sg := range active {
			m := (sg.a + sg.b) / 2
			halves = append(halves, [2]float64{sg.a, m}, [2]float64{m, sg.b})
		}
		est := gl(halves)
		var next []seg
		for i, sg := range active {
			refined := est[2*i] + est[2*i+1]
			diff := math.Abs(refined - sg.est)
			// The integrand itself is only known to cdfErr: asking the
			// rules to agree more closely than that would split forever.
			if diff <= math.Max(tolAbs/T, 4*cdfErr)*(sg.b-sg.a) || level >= 30 || len(active) > maxSegments {
				total += refined
				quadErr += diff
				continue
			}
			next = append(next, seg{halves[2*i][0], halves[2*i][1], est[2*i]}, seg{halves[2*i+1][0], halves[2*i+1][1], est[2*i+1]})
		}
		active = next
	}
	return total + head, tailBound + quadErr + headErr + T*cdfErr
}

// A QuadratureStart says where MaxMean's first panels begin: at At, in
// octaves from the panel [0, At] (none: 16 panels of T/16); with Descend,
// At is only a first guess, halved until [0, At] holds too little of the
// integral to matter.
type QuadratureStart struct {
	At      float64
	Descend bool
}

// 10-point Gauss-Legendre nodes and weights on [-1, 1].
var glNodes, glWeights = func() ([]float64, []float64) {
	x := make([]float64, 10)
	w := make([]float64, 10)
	quad.Legendre{}.FixedLocations(x, w, -1, 1)
	return x, w
}()

// cdfProduct returns prod(t) for MaxMean over distributions:
// uniformization results with the same rate share their Poisson weights;
// other distributions give their own values.
func cdfProduct(dists []passage.Distribution) func(float64) float64 {
	return func(t float64) float64 {
		prod := 1.0
		var w *passage.PoissonWeights
		q := math.NaN()
		for _, dist := range dists {
			d, ok := dist.(*passage.Result)
			if !ok {
				v, err := dist.CDF(t)
				if err != nil {
					return math.NaN()
				}
				prod *= v
			} else {
				if d.Q != q {
					q = d.Q
					var err error
					if w, err = passage.FoxGlynn(q*t, d.Epsilon/2); err != nil {
						return math.NaN()
					}
				}
				prod *= d.CDFWith(w)
			}
			if prod == 0 {
				break
			}
		}
		return prod
	}
}

func newMachineResult(m *Machine, s *ctmc.Structure, pr *Pragmas) MachineResult {
	nan := math.NaN()
	mr := MachineResult{Name: m.Name, FirstActions: m.FirstNames(s), LastActions: m.LastNames(s),
		Applications: m.Apps, PByBeta: nan, Mean: nan, Quantile: nan,
		Availability: nan, Slowdown: nan, PByBetaLo: nan, PByBetaHi: nan, MeanLo: nan, MeanHi: nan, QuantileLo: nan, QuantileHi: nan}
	if pr != nil {
		if o := pr.Owners[m.Name]; o != nil {
			mr.Availability = o.Availability()
			mr.Slowdown = 1 / mr.Availability
		}
	}
	return mr
}

// initialDistribution is the start distribution over c's states that the
// pragmas give (nil: the initial state): components with a //pepa:initial
// distribution start in its states, all others in their first state.
func initialDistribution(c *ctmc.Chain, pr *Pragmas) ([]float64, error) {
	if pr == nil || len(pr.Initial) == 0 {
		return nil, nil
	}
	type leafDist struct {
		leaf *ctmc.Leaf
		p    []float64 // by leaf-local state
	}
	var dists []leafDist
	has := map[*ctmc.Leaf]bool{}
	for comp, d := range pr.Initial {
		var leaf *ctmc.Leaf
		for _, l := range c.S.Leaves {
			if l.Name == comp {
				leaf = l
			}
		}
		if leaf == nil {
			return nil, fmt.Errorf("pepa:initial names component %s, which the model does not have", comp)
		}
		p := make([]float64, leaf.NumLocal)
		for name, x := range d {
			found := false
			for st := 0; st < leaf.NumLocal; st++ {
				if leaf.LocalName(st) == name {
					p[st], found = x, true
				}
			}
			if !found {
				return nil, fmt.Errorf("pepa:initial: component %s has no local state %s", comp, name)
			}
		}
		dists = append(dists, leafDist{leaf, p})
		has[leaf] = true
	}
	alpha := make([]float64, c.N)
	total := 0.0
	for i := 0; i < c.N; i++ {
		st := c.State(i)
		x := 1.0
		for _, l := range c.S.Leaves {
			if !has[l] && l.Local(st) != 0 {
				x = 0
				break
			}
		}
		for _, d := range dists {
			x *= d.p[d.leaf.Local(st)]
		}
		alpha[i] = x
		total += x
	}
	if math.Abs(total-1) > 1e-9 {
		return nil, fmt.Errorf("pepa:initial: only %g of the initial distribution falls on reachable states", total)
	}
	return alpha, nil
}

// setEpsilon records the bound every exact probability keeps: the largest
// of the distributions' (Accuracy) and the one asked.
func (res *Result) setEpsilon(asked float64) {
	res.Epsilon = asked
	for i := range res.Machines {
		if d := res.Machines[i].Dist; d != nil {
			res.Epsilon = math.Max(res.Epsilon, d.Accuracy())
		}
	}
	for _, g := range res.Groups {
		if g.dist != nil {
			res.Epsilon = math.Max(res.Epsilon, g.dist.Accuracy())
		}
	}
}

// simulated reports whether some group was simulated.
func (res *Result) simulated() bool {
	for _, g := range res.Groups {
		if g.Solved == "simulated" {
			return true
		}
	}
	return false
}

// shortestScale is the time scale of the fastest rise of the
// distributions, where MaxMean's first panels start (an integrand's
// sharp early rise can fall between the nodes of coarser panels): the
// reciprocal of the largest uniformization rate, or for a distribution
// without one (Laplace) an eighth of its mean, from which MaxMean descends
// (a rise faster than that, ahead of the mean, was missed: seed 501640,
// a delay of 1/263 s under jobs of hundreds of seconds put E[makespan]
// 1.2e-8 off, beyond its stated 8e-10); none when there is none.
func shortestScale(ds []passage.Distribution) QuadratureStart {
	s, descend := math.Inf(1), false
	for _, d := range ds {
		switch d := d.(type) {
		case *passage.Result:
			if d.Q > 0 {
				s = math.Min(s, 1/d.Q)
			}
		case *passage.LaplaceDistribution:
			if m := d.Mean(); m > 0 && !math.IsInf(m, 1) {
				s = math.Min(s, m/8)
				descend = true
			}
		}
	}
	if math.IsInf(s, 1) {
		return QuadratureStart{}
	}
	return QuadratureStart{At: s, Descend: descend}
}

// flatLaplace solves a flat analysis by Laplace-transform inversion where
// passage.ChooseEngine says so (or Options.Transient forces it): every
// machine stopped once finished (Stopped), so that each machine's
// finishing time, and all of them finished, are the times the chain first
// holds its mass in closed sets of states. It reports whether it solved.
func flatLaplace(ctx context.Context, c *ctmc.Chain, machines []*Machine, res *Result, opt Options, alpha []float64) (bool, error) {
	if len(machines) == 0 || opt.Transient == passage.EngineUniformization {
		return false, nil
	}
	all := make([]bool, c.N)
	for i := range all {
		all[i] = true
	}
	var sets [][]bool
	for _, m := range machines {
		done := finishedState(m.Leaf)
		if done < 0 {
			if opt.Transient == passage.EngineLaplace {
				return false, option.Errorf("%w: {Transient} laplace needs every machine stopped once finished (initial semantics, not {Cycling}, coupled machines; by groups, a machine alone is solved on its own chain)", laplace.ErrNotApplicable)
			}
			return false, nil // machines that keep cycling
		}
		set := make([]bool, c.N)
		for i := range set {
			set[i] = m.Leaf.Local(c.State(i)) == done
			all[i] = all[i] && set[i]
		}
		sets = append(sets, set)
	}
	sets = append(sets, all)
	var probs []passage.Problem
	for _, m := range machines {
		probs = append(probs, passage.Problem{Alpha: alpha, TargetActions: m.Last})
	}
	choice, err := passage.ChooseEngine(ctx, passage.EngineQuery{Chain: c, Alpha: alpha, Sets: sets, Beta: opt.Beta, Epsilon: opt.Epsilon, Rate: passage.UniformizationRate(c, probs), Force: opt.Transient})
	if err != nil || choice.Engine != passage.EngineLaplace {
		return false, err
	}
	eng := choice.Laplace
	res.Robustness = math.Inf(1)
	for i := range machines {
		mr := &res.Machines[i]
		d := &passage.LaplaceDistribution{Engine: eng, Set: i}
		mr.Dist, mr.alpha = d, alpha
		if mr.PByBeta, err = d.CDF(opt.Beta); err != nil {
			return false, err
		}
		res.Robustness = math.Min(res.Robustness, mr.PByBeta)
		mr.Mean, mr.MaxRest = d.Mean(), d.MaxRest()
		mr.meanError = 1e-12 * mr.Mean
		if !opt.NoQuantile {
			if mr.Quantile, err = d.Quantile(opt.Quantile); err != nil {
				return false, err
			}
		}
		if note := neverFinishes(mr); note != "" {
			mr.Note = note
		}
	}
	allDist := &passage.LaplaceDistribution{Engine: eng, Set: len(sets) - 1}
	if res.PAllByBeta, err = allDist.CDF(opt.Beta); err != nil {
		return false, err
	}
	res.ExpectedMakespan = allDist.Mean()
	res.MakespanError = 1e-12 * res.ExpectedMakespan
	check, err := eng.Check(opt.Beta)
	if err != nil {
		return false, err
	}
	res.Joint = fmt.Sprintf("passage to every machine finished (stopped) on the product chain (%d states)", c.N)
	if !res.Independent {
		res.Joint += ", because " + res.Dependence
	}
	res.Joint += fmt.Sprintf("; every figure by Laplace-transform inversion (%s; %s)", choice.Why, passage.LaplaceNote(eng, check))
	res.setEpsilon(opt.Epsilon)
	opt.stage("laplace", choice.Why)
	return true, nil
}
