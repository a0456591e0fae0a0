package models

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"strings"

	"pepa/ctmc"
	"pepa/ctmc/simulate"
	"pepa/internal/membudget"
	"pepa/internal/option"
	"pepa/passage"
	"pepa/passage/laplace"
)

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

// flatRobustness solves a model on its product chain, with every machine
// stopped once finished where that matters (Stopped), or, when the chain
// or its solution does not fit and the request allows it, simulates it.
func flatRobustness(ctx context.Context, i int, s *ctmc.Structure, req Request, opt Options, stage func(name, detail string)) (*Result, *simulate.Stats, error) {
	fs, err := Stopped(s, opt)
	if err != nil {
		return nil, nil, err
	}
	derive := func(ctx context.Context, s *ctmc.Structure) (*ctmc.Chain, error) {
		return ctmc.Derive(ctx, s, ctmc.DeriveOptions{MaxStates: req.Compile.MaxStates})
	}
	if req.Derive != nil {
		derive = func(ctx context.Context, s *ctmc.Structure) (*ctmc.Chain, error) { return req.Derive(ctx, i, s) }
	}
	c, err := derive(ctx, fs)
	if err != nil {
		if opt.Simulate == nil || ctx.Err() != nil || !errors.Is(err, ctmc.ErrTooManyStates) {
			return nil, nil, err
		}
		because := option.Sprintf("the chain has more than %d states ({MaxStates})", req.Compile.MaxStates)
		if errors.Is(err, membudget.ErrOverBudget) {
			because = "the chain does not fit the memory budget (" + err.Error() + ")"
		}
		return simulateWhole(ctx, fs, opt, because)
	}
	if req.Derive == nil && req.Stage != nil {
		stage("derive", fmt.Sprintf("%d states, %d transitions", c.N, c.NumTransitions()))
	}
	opt.ReleaseChain = true // c is not used after the analysis
	r, err := Analyze(ctx, c, opt)
	if err != nil {
		if opt.Simulate != nil && errors.Is(err, membudget.ErrOverBudget) {
			// The chain fits, its solution does not: simulate.
			c = nil
			return simulateWhole(ctx, fs, opt, "the solution does not fit the memory budget ("+err.Error()+")")
		}
		return nil, nil, err
	}
	r.Why = option.Text("{Flat} was given")
	if fs != s {
		r.Why += "; finished machines stop"
	}
	return r, nil, nil
}

// simulateWhole estimates a model's figures by simulation (initial
// semantics), on s as the exact analysis would have derived it (already
// stopped where the stop rule applies: Stopped); because says why.
func simulateWhole(ctx context.Context, s *ctmc.Structure, opt Options, because string) (*Result, *simulate.Stats, error) {
	if opt.Semantics != passage.Initial {
		return nil, nil, option.Errorf("{Simulate} estimates initial semantics only (%s)", because)
	}
	spec, machines, err := SimulationSpec(s, opt.Beta, opt.Machines, true)
	if err != nil {
		return nil, nil, err
	}
	so := *opt.Simulate
	if opt.Pragmas != nil {
		if so.Initial, err = simulate.InitialFromNames(s, opt.Pragmas.Initial); err != nil {
			return nil, nil, err
		}
	}
	r, err := simulate.Robustness(ctx, s, spec, so)
	if err != nil {
		return nil, nil, err
	}
	res := &Result{Beta: opt.Beta, Semantics: passage.Initial, ProductStates: productSize(s), Solved: "simulated",
		Robustness: r.Robustness.Value, PAllByBeta: r.PAllByBeta.Value, ExpectedMakespan: r.ExpectedMakespan.Value,
		MakespanError: r.ExpectedMakespan.HalfWidth(), Joint: "simulated",
		PAllLo: r.PAllByBeta.Lo, PAllHi: r.PAllByBeta.Hi, MakespanLo: r.ExpectedMakespan.Lo, MakespanHi: r.ExpectedMakespan.Hi,
		Confidence: so.Confidence}
	res.Independent, res.Dependence = Independent(s, machines)
	var parts []string
	for j, me := range r.Machines {
		ms := MachineResult{Name: me.Name, PByBeta: me.PByBeta.Value, Mean: me.Mean.Value, Quantile: me.Quantile.Value,
			Availability: math.NaN(), Slowdown: math.NaN(),
			PByBetaLo: me.PByBeta.Lo, PByBetaHi: me.PByBeta.Hi, MeanLo: me.Mean.Lo, MeanHi: me.Mean.Hi,
			QuantileLo: me.Quantile.Lo, QuantileHi: me.Quantile.Hi}
		ms.Applications = machines[j].Apps
		ms.FirstActions, ms.LastActions = machines[j].FirstNames(s), machines[j].LastNames(s)
		res.Machines = append(res.Machines, ms)
		parts = append(parts, fmt.Sprintf("%s P(F <= %g) in [%.4f, %.4f]", me.Name, opt.Beta, me.PByBeta.Lo, me.PByBeta.Hi))
	}
	res.Why = fmt.Sprintf("simulated: %g%% CI robustness [%.4f, %.4f], P(all <= %g) [%.4f, %.4f], E[makespan] [%.4f, %.4f]; %s; %d replications, seed %d, because %s",
		100*so.Confidence, r.Robustness.Lo, r.Robustness.Hi, opt.Beta, r.PAllByBeta.Lo, r.PAllByBeta.Hi,
		r.ExpectedMakespan.Lo, r.ExpectedMakespan.Hi, strings.Join(parts, ", "), r.Replications, so.Seed, because)
	return res, &r.Stats, nil
}
