package models

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"

	"pepa/ctmc"
	"pepa/internal/option"
	"pepa/passage"
	"pepa/passage/laplace"
)

// GroupResult is how one group of coupled machines was solved (semantics.md
// section 3: machines that share a component, or cooperate, form a group;
// a machine that shares nothing is a group of its own).
type GroupResult struct {
	Machines   []string // its analysed machines, in model order
	Components []string // every component of the group that moves (its machines, what they share)
	States     int      // states of the chain it was solved on (0 when not derived)
	// Solved is "alone" (one machine on its own chain), "exact" (the
	// group's chain), "simulated" (past the state limit), or
	// "unavailable".
	Solved string
	Why    string
	// PAllByBeta is the probability that every analysed machine of the
	// group has finished by beta, Mean the expected time until they all
	// have (NaN when unavailable).
	PAllByBeta, Mean float64
	// MeanError bounds the error of Mean: 1e-12 relative for a linear
	// solve, the tail estimate for a series sum.
	MeanError float64
	// Interval bounds of simulated figures (NaN for exact ones).
	PAllLo, PAllHi float64
	// Transient is the engine that computed the group's distributions
	// (passage.EngineUniformization or EngineLaplace; empty when the
	// choice was not asked: plug-in semantics, machines cycling), and
	// TransientWhy why, with the Laplace engine's solves and accuracy.
	Transient, TransientWhy string
	dist                    passage.Distribution
	maxRest                 float64   // largest mean remaining time (NaN: tails from the series)
	simFinish               []float64 // simulated: the group's all-finished time per replication
}

// groupJob is one group to solve: its moving leaves and the analysed
// machines among them (indices into the machines slice).
type groupJob struct {
	s        *ctmc.Structure // the model
	leaves   []*ctmc.Leaf
	machines []int
	// Set by the first phase:
	c     *ctmc.Chain
	probs []passage.Problem // one per machine, then the group's all-finished passage (two or more machines)
	own   float64           // uniformization rate of a machine alone (0 otherwise)
	flags bool              // the all-finished passage is on a chain with completion flags (cycling)
	fc    *ctmc.Chain       // that chain
	err   error             // a group that could not be derived (ErrTooManyStates)
}

// AnalyzeGroups computes the robustness of a mapping by groups of coupled
// machines (ctmc.Structure.Groups): each group on its own chain, in
// parallel, the joint figures as products over the groups. A machine that
// forms a group of its own is solved on the chain of its own moves. The
// figures are exactly those of the product chain (tests compare both).
//
// Under initial semantics (without Cycling) a machine stops once it has
// finished (Stopped): a group's chain is built with its machines'
// cycle-closing actions leading to terminal states, and the probability
// that all of a group's machines have finished by t is the passage into
// the states where they are all terminal. With Cycling, the chain with a
// completion flag per machine gives it instead. Under plug-in semantics
// the machines' distributions come from every group's steady state (see
// passage.PluginPartProblem) and the joint figures are their products.
//
// A group whose chain passes MaxGroupStates is simulated when Simulate is
// set (its figures with confidence intervals, the others exact), and
// otherwise fails the analysis with ctmc.ErrTooManyStates.
func AnalyzeGroups(ctx context.Context, s *ctmc.Structure, opt Options) (*Result, error) {
	opt.defaults()
	machines, stop, err := analysedMachines(s, opt)
	if err != nil {
		return nil, err
	}
	res := &Result{Beta: opt.Beta, Semantics: opt.Semantics, Solved: "decomposed", Independent: true}
	res.Warnings = Uncomputed(s, machines)
	res.Machines = make([]MachineResult, len(machines))
	for i, m := range machines {
		res.Machines[i] = newMachineResult(m, s, opt.Pragmas)
	}
	// The groups with an analysed machine (under plug-in semantics every
	// group: the others' exit rates weight the sources).
	var jobs []*groupJob
	for _, j := range groupJobs(s, machines) {
		g := j.leaves
		if len(j.machines) > 0 || opt.Semantics == passage.Plugin {
			jobs = append(jobs, j)
		}
		if len(j.machines) > 1 || len(g) > 1 && len(j.machines) > 0 {
			res.Independent = false
			if res.Dependence == "" {
				res.Dependence = "machines " + strings.Join(machineNamesOf(machines, j.machines), ", ") + " are coupled through " + strings.Join(otherNames(g, machines), ", ")
			}
		}
	}
	// Phase 1, in parallel: every group's chain.
	err = Parallel(ctx, len(jobs), func(k int) error {
		return jobs[k].derive(ctx, s, stop, opt)
	})
	if err != nil {
		return nil, err
	}
	for _, j := range jobs {
		if j.err != nil && opt.Simulate == nil {
			return nil, j.err
		}
	}
	// The problems: plug-in starts need every group's steady state.
	if opt.Semantics == passage.Plugin {
		if err := pluginProblems(ctx, jobs, machines, res); err != nil {
			return nil, err
		}
	} else {
		for _, j := range jobs {
			if j.c != nil {
				if err := j.initialProblems(machines, opt); err != nil {
					return nil, err
				}
			}
		}
	}
	// Machines alone share one uniformization rate (their joint figures
	// then share Poisson weights), unless theirs is far below it.
	shared := 0.0
	for _, j := range jobs {
		if j.own > 0 {
			shared = math.Max(shared, j.own)
		}
	}
	for _, j := range jobs {
		if j.own > 0 && j.own*ownRateRatio >= shared {
			j.own = shared
		}
	}
	res.Groups = make([]GroupResult, len(jobs))
	err = Parallel(ctx, len(jobs), func(k int) error {
		return jobs[k].solve(ctx, machines, res, &res.Groups[k], opt)
	})
	if err != nil {
		return nil, err
	}
	for k, j := range jobs {
		g := &res.Groups[k]
		if j.err != nil {
			if err := simulateGroup(ctx, s, j, machines, stop, res, g, opt); err != nil {
				return nil, err
			}
		}
	}
	// Groups without analysed machines were only needed for the rates.
	kept := res.Groups[:0]
	for k, j := range jobs {
		if len(j.machines) > 0 {
			kept = append(kept, res.Groups[k])
		}
	}
	res.Groups = kept
	states, product := 0, 1.0
	for _, g := range res.Groups {
		states += g.States
		product *= float64(max(g.States, 1))
	}
	res.States, res.ProductStates = states, product
	res.Robustness = math.Inf(1)
	analysed := 0
	for i := range res.Machines {
		if mr := &res.Machines[i]; !math.IsNaN(mr.PByBeta) {
			res.Robustness = math.Min(res.Robustness, mr.PByBeta)
			analysed++
		}
	}
	if analysed == 0 {
		return nil, option.Errorf("no machine could be analysed under %s semantics (each has a single application); use {Semantics} initial", opt.Semantics)
	}
	res.setEpsilon(opt.Epsilon)
	if opt.Semantics == passage.Plugin {
		res.ProductJoint(1e-9)
		res.Joint = "product of the machines' plug-in distributions (each has its own start)"
		if !res.Independent {
			res.Joint += ", although " + res.Dependence
		}
		return res, nil
	}
	res.groupJoint(1e-9)
	return res, nil
}

func machineNamesOf(machines []*Machine, idx []int) []string {
	var out []string
	for _, i := range idx {
		out = append(out, machines[i].Name)
	}
	return out
}

// otherNames names a group's moving leaves that are not machines (what
// the machines share), or says they cooperate directly.
func otherNames(g []*ctmc.Leaf, machines []*Machine) []string {
	isM := map[*ctmc.Leaf]bool{}
	for _, m := range machines {
		isM[m.Leaf] = true
	}
	var out []string
	for _, l := range g {
		if !isM[l] {
			out = append(out, l.Name)
		}
	}
	if len(out) == 0 {
		return []string{"actions they both perform"}
	}
	return out
}

// derive builds the group's chain: a machine alone its own moves; other
// groups their sub-model, its machines stopped where stop says, derived up
// to MaxGroupStates (past it, j.err wraps ctmc.ErrTooManyStates).
func (j *groupJob) derive(ctx context.Context, s *ctmc.Structure, stop map[*ctmc.Leaf][]int32, opt Options) error {
	if c := opt.Chains.get(j.leaves); c != nil {
		j.c = c
		return nil
	}
	defer func() {
		if j.c != nil {
			opt.Chains.put(j.leaves, j.c)
		}
	}()
	if len(j.leaves) == 1 && opt.GroupStart == nil {
		if c, ok := s.OwnChain(j.leaves[0]); ok {
			j.c = c
			return nil
		}
	}
	if len(j.leaves) == 1 {
		stop = nil // a machine alone has the same figures either way
	}
	sub, _, err := s.Restrict(j.leaves, stop)
	if err != nil {
		return err
	}
	c, err := ctmc.Derive(ctx, sub, ctmc.DeriveOptions{MaxStates: opt.MaxGroupStates})
	if errors.Is(err, ctmc.ErrTooManyStates) && ctx.Err() == nil {
		j.err = fmt.Errorf("the group of %s: %w", strings.Join(ctmc.LeafNames(j.leaves), ", "), err)
		return nil
	}
	j.c = c
	return err
}

// machineIn is machine m as the group's chain sees it: its leaf and its
// actions in that chain's structure (a derived group has its own action
// table, ctmc.Structure.Restrict).
func (j *groupJob) machineIn(m *Machine) *Machine {
	c := j.c
	return &Machine{Name: m.Name, Leaf: leafIn(c, m.Leaf), First: c.S.ActionsFrom(j.s, m.First), Last: c.S.ActionsFrom(j.s, m.Last), Apps: m.Apps}
}

// initialProblems sets the initial-semantics passages of a group: each
// machine's first firing of its cycle-closing actions, from the start the
// pragmas give its components, and with two or more machines the passage
// to all of them finished.
func (j *groupJob) initialProblems(machines []*Machine, opt Options) error {
	c := j.c
	start := func(c *ctmc.Chain) ([]float64, error) { return partStart(c, opt.Pragmas) }
	if opt.GroupStart != nil {
		start = func(c *ctmc.Chain) ([]float64, error) { return opt.GroupStart(j.leaves, c) }
	}
	alpha, err := start(c)
	if err != nil {
		return fmt.Errorf("the group of %s: %w", strings.Join(ctmc.LeafNames(j.leaves), ", "), err)
	}
	for _, i := range j.machines {
		j.probs = append(j.probs, passage.Problem{Alpha: alpha, TargetActions: c.S.ActionsFrom(j.s, machines[i].Last)})
	}
	if len(j.leaves) == 1 {
		j.own = passage.UniformizationRate(c, j.probs)
	}
	if len(j.machines) < 2 {
		return nil
	}
	var leaves []*ctmc.Leaf
	var done []int
	for _, i := range j.machines {
		l := leafIn(c, machines[i].Leaf)
		leaves = append(leaves, l)
		done = append(done, finishedState(l))
	}
	if done[0] >= 0 {
		// Stopped machines: all finished is all terminal, a closed set.
		target := make([]bool, c.N)
		for i := range target {
			st := c.State(i)
			target[i] = true
			for k, l := range leaves {
				if l.Local(st) != done[k] {
					target[i] = false
					break
				}
			}
		}
		j.probs = append(j.probs, passage.Problem{Alpha: alpha, TargetStates: target})
		return nil
	}
	// Machines that keep cycling: the chain with a completion flag each.
	var ms []*Machine
	for _, i := range j.machines {
		ms = append(ms, j.machineIn(machines[i]))
	}
	fc, target, fcAlpha, err := flagChain(context.Background(), c, ms, alpha, opt.MaxJointStates)
	if err != nil {
		return fmt.Errorf("the group of %s: %w", strings.Join(ctmc.LeafNames(j.leaves), ", "), err)
	}
	j.flags, j.fc = true, fc
	j.probs = append(j.probs, passage.Problem{Alpha: fcAlpha, TargetStates: target})
	return nil
}

// analysedMachines are the machines opt names (all detected ones by
// default) and the stop rule's map: every machine of the model, analysed
// or not, stopped once finished where the rule applies.
func analysedMachines(s *ctmc.Structure, opt Options) ([]*Machine, map[*ctmc.Leaf][]int32, error) {
	machines, err := FindMachines(s, opt.Machines)
	if err != nil {
		return nil, nil, err
	}
	all, err := FindMachines(s, nil)
	if err != nil {
		all = machines // named machines the detection misses
	}
	stop := map[*ctmc.Leaf][]int32{}
	if opt.stopped() {
		stop = stopMap(append(all, machines...))
	}
	return machines, stop, nil
}

// groupJobs is a job per group of s (ctmc.Structure.Groups), each with the
// indices of its machines among machines (none: a group that moves but
// concerns no machine).
func groupJobs(s *ctmc.Structure, machines []*Machine) []*groupJob {
	of := map[*ctmc.Leaf]int{}
	for i, m := range machines {
		of[m.Leaf] = i
	}
	var out []*groupJob
	for _, g := range s.Groups() {
		j := &groupJob{s: s, leaves: g}
		for _, l := range g {
			if i, ok := of[l]; ok {
				j.machines = append(j.machines, i)
			}
		}
		out = append(out, j)
	}
	return out
}

// ChainCache keeps groups' chains by their components' names (one
// structure and stop rule per cache); safe for concurrent use.
type ChainCache struct {
	mu     sync.Mutex
	chains map[string]*ctmc.Chain
}

func (cc *ChainCache) key(leaves []*ctmc.Leaf) string {
	return strings.Join(ctmc.LeafNames(leaves), "\x00")
}

func (cc *ChainCache) get(leaves []*ctmc.Leaf) *ctmc.Chain {
	if cc == nil {
		return nil
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.chains[cc.key(leaves)]
}

func (cc *ChainCache) put(leaves []*ctmc.Leaf, c *ctmc.Chain) {
	if cc == nil {
		return
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.chains == nil {
		cc.chains = map[string]*ctmc.Chain{}
	}
	cc.chains[cc.key(leaves)] = c
}

// GroupChain is one group's chain as AnalyzeGroups derives it (finished
// machines stopped, under initial semantics), with its machines as that
// chain sees them (their leaves and actions in its structure).
type GroupChain struct {
	Leaves   []*ctmc.Leaf // the group's components in the model's structure
	Chain    *ctmc.Chain
	Machines []*Machine
}

// DeriveGroups derives the chain of every group with a machine of opt's
// (all detected ones by default), exactly as AnalyzeGroups does with opt,
// and keeps them in opt.Chains (which must not be nil), where AnalyzeGroups
// finds them again. Initial semantics only.
func DeriveGroups(ctx context.Context, s *ctmc.Structure, opt Options) ([]GroupChain, error) {
	opt.defaults()
	if opt.Chains == nil || opt.Semantics != passage.Initial {
		return nil, errors.New("DeriveGroups needs a chain cache, under initial semantics")
	}
	machines, stop, err := analysedMachines(s, opt)
	if err != nil {
		return nil, err
	}
	var out []GroupChain
	err = eachDerivedGroup(ctx, s, machines, stop, opt, func(j *groupJob) error {
		gc := GroupChain{Leaves: j.leaves, Chain: j.c}
		for _, i := range j.machines {
			gc.Machines = append(gc.Machines, j.machineIn(machines[i]))
		}
		out = append(out, gc)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// eachDerivedGroup derives, one after the other, the chain of every group
// with an analysed machine and hands it to f; a group whose chain cannot
// be derived (past MaxGroupStates: nothing is simulated here) fails, as
// does f.
func eachDerivedGroup(ctx context.Context, s *ctmc.Structure, machines []*Machine, stop map[*ctmc.Leaf][]int32, opt Options, f func(j *groupJob) error) error {
	for _, j := range groupJobs(s, machines) {
		if len(j.machines) == 0 {
			continue
		}
		if err := j.derive(ctx, s, stop, opt); err != nil {
			return err
		}
		if j.err != nil {
			return j.err
		}
		if err := f(j); err != nil {
			return err
		}
	}
	return nil
}

// pluginProblems sets every machine's plug-in passage: from the states
// entered by its first actions, weighted by its group's steady state and
// every group's mean exit rate (passage.PluginPartProblem).
func pluginProblems(ctx context.Context, jobs []*groupJob, machines []*Machine, res *Result) error {
	chains := make([]*ctmc.Chain, len(jobs))
	for k, j := range jobs {
		if j.c == nil {
			return fmt.Errorf("plug-in semantics needs every group's chain: %w", j.err)
		}
		chains[k] = j.c
	}
	pis, qbar, err := passage.PartRates(ctx, chains)
	if err != nil {
		return err
	}
	sum := 0.0
	for _, q := range qbar {
		sum += q
	}
	for k, j := range jobs {
		for _, i := range j.machines {
			m := machines[i]
			mr := &res.Machines[i]
			if sameSet(m.First, m.Last) {
				mr.Note = option.Text("its first and last actions are the same (one application), for which the plug-in semantics computes nothing; use {Semantics} initial")
				j.probs = append(j.probs, passage.Problem{})
				continue
			}
			pr, err := passage.PluginPartProblem(j.c, pis[k], sum-qbar[k], j.c.S.ActionsFrom(j.s, m.First), j.c.S.ActionsFrom(j.s, m.Last))
			if err != nil {
				return fmt.Errorf("machine %s: %w", m.Name, err)
			}
			j.probs = append(j.probs, pr)
		}
		if len(j.leaves) == 1 && len(j.probs) > 0 && j.probs[0].Alpha != nil {
			j.own = passage.UniformizationRate(j.c, j.probs)
		}
	}
	return nil
}

// solve computes the group's passages, its machines' figures and its
// all-finished distribution.
func (j *groupJob) solve(ctx context.Context, machines []*Machine, res *Result, g *GroupResult, opt Options) error {
	g.Machines = machineNamesOf(machines, j.machines)
	g.Components = ctmc.LeafNames(j.leaves)
	g.PAllByBeta, g.Mean, g.MeanError, g.PAllLo, g.PAllHi = math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN()
	if j.c == nil || len(j.machines) == 0 {
		return nil
	}
	g.States = j.c.N
	g.Solved = "exact"
	g.Why = fmt.Sprintf("its own chain, %d states", j.c.N)
	if len(j.leaves) == 1 {
		g.Solved, g.Why = "alone", fmt.Sprintf("one machine on the chain of its own moves, %d states", j.c.N)
	}
	if opt.Semantics == passage.Initial && !j.flags {
		done, err := j.solveByLaplace(ctx, machines, res, g, opt)
		if done || err != nil {
			return err
		}
	}
	// The machines' passages together (one sweep a step), the flag
	// chain's apart.
	var probs []passage.Problem
	var who []int // index into j.probs
	for k, pr := range j.probs {
		if pr.Alpha != nil && !(j.flags && k == len(j.probs)-1) {
			probs = append(probs, pr)
			who = append(who, k)
		}
	}
	popt := passage.Options{Epsilon: opt.Epsilon, Horizon: opt.Beta, Complete: true, Q: j.own}
	if opt.Progress != nil {
		popt.Progress = func(step, max int) { opt.Progress(g.Machines, g.TransientWhy, step, max) }
	}
	rs, err := passage.Solve(ctx, j.c, probs, popt)
	if err != nil {
		return fmt.Errorf("the group of %s: %w", strings.Join(g.Components, ", "), err)
	}
	dists := make([]*passage.Result, len(j.probs))
	for k, r := range rs {
		dists[who[k]] = r
	}
	if j.flags {
		fr, err := passage.Solve(ctx, j.fc, j.probs[len(j.probs)-1:], passage.Options{Epsilon: opt.Epsilon, Horizon: opt.Beta, Complete: true})
		if err != nil {
			return err
		}
		dists[len(dists)-1] = fr[0]
	}
	linear := len(j.c.Col) <= meanSolveLimit
	for k, i := range j.machines {
		mr := &res.Machines[i]
		d := dists[k]
		if d == nil {
			continue // plug-in: nothing to compute (noted)
		}
		mr.Dist, mr.alpha = d, j.probs[k].Alpha
		if mr.PByBeta, err = d.CDF(opt.Beta); err != nil {
			return err
		}
		if err := mr.setMeanFrom(ctx, j.c, j.probs[k], d, linear); err != nil {
			return err
		}
		if mr.Quantile, err = d.Quantile(opt.Quantile); err != nil {
			return err
		}
		if note := neverFinishes(mr); note != "" {
			mr.Note = note
		}
	}
	if opt.Semantics == passage.Plugin {
		return nil
	}
	// The group's all-finished distribution: the one machine's own, or
	// its passage.
	if len(j.machines) == 1 {
		mr := &res.Machines[j.machines[0]]
		g.dist, g.maxRest, g.Mean = mr.Dist, mr.MaxRest, mr.Mean
		g.MeanError = mr.meanError
		g.PAllByBeta = mr.PByBeta
		return nil
	}
	d := dists[len(dists)-1]
	g.dist = d
	if g.PAllByBeta, err = d.CDF(opt.Beta); err != nil {
		return err
	}
	chain := j.c
	if j.flags {
		chain = j.fc
	}
	var tmp MachineResult
	if err := tmp.setMeanFrom(ctx, chain, j.probs[len(j.probs)-1], d, linear && len(chain.Col) <= meanSolveLimit); err != nil {
		return err
	}
	g.Mean, g.maxRest, g.MeanError = tmp.Mean, tmp.MaxRest, tmp.meanError
	return nil
}

// groupJoint sets the joint figures from the groups: P(max F <= beta) the
// product of the groups' all-finished probabilities, E[makespan] the
// integral of 1 - the product of their distributions (MaxMean).
func (res *Result) groupJoint(tol float64) {
	var dists []passage.Distribution
	var rest []float64
	cdfErr, scale := 0.0, 0.0
	res.PAllByBeta = 1
	exact := 0
	for _, g := range res.Groups {
		if g.dist == nil {
			continue
		}
		exact++
		res.PAllByBeta *= g.PAllByBeta
		dists = append(dists, g.dist)
		rest = append(rest, g.maxRest)
		cdfErr += g.dist.Accuracy()
		scale = math.Max(scale, g.Mean)
	}
	alone := countAlone(res.Groups)
	switch coupled := len(res.Groups) - alone; {
	case coupled == 0:
		res.Joint = "product over " + Plural(alone, "machine", "machines") + " alone"
	case alone == 0:
		res.Joint = "product over " + Plural(coupled, "group", "groups") + " of coupled machines, all finished on each group's own chain"
	default:
		res.Joint = "product over " + Plural(coupled, "group", "groups") + " of coupled machines (all finished on each group's own chain) and " + Plural(alone, "machine", "machines") + " alone"
	}
	if res.simulated() {
		res.simulatedJoint(dists, rest, cdfErr, scale, tol)
		return
	}
	if math.IsNaN(scale) {
		res.ExpectedMakespan, res.MakespanError = math.NaN(), math.NaN()
		return
	}
	if len(res.Groups) == 1 {
		// One group: the makespan is its all-finished time.
		g := res.Groups[0]
		res.ExpectedMakespan, res.MakespanError = g.Mean, g.MeanError
		return
	}
	res.ExpectedMakespan, res.MakespanError = MaxMean(cdfProduct(sortByQ(dists)), tailOf(dists, rest), scale, tol, cdfErr, shortestScale(dists))
}

func countAlone(gs []GroupResult) int {
	n := 0
	for _, g := range gs {
		if g.Solved == "alone" {
			n++
		}
	}
	return n
}

// BatchEnds reports whether every deadlock of a chain derived with its
// machines stopped (StopAll) is the end of the batch: a state where every
// stopped machine is in its terminal state, so nothing is left to do.
// Any other deadlock is a fault of the model.
func BatchEnds(c *ctmc.Chain) bool {
	for _, d := range c.Deadlocks {
		for _, l := range c.S.Leaves {
			if l.NumLocal > 1 && l.Counts == nil && l.LocalName(l.Local(c.State(int(d)))) != ctmc.FinishedState && l.LocalName(l.NumLocal-1) == ctmc.FinishedState {
				return false
			}
		}
	}
	return true
}

// solveByLaplace solves the group by Laplace-transform inversion where
// passage.ChooseEngine says so (or Options.Transient forces it): a
// machine alone as the passage to the first firing of its cycle-closing
// actions (a sink: its own chain is then acyclic), coupled machines,
// stopped once finished, as the closed sets where each has finished and
// where they all have. It reports whether it solved the group; when it
// did not, the reason is in g.Why's engine note.
func (j *groupJob) solveByLaplace(ctx context.Context, machines []*Machine, res *Result, g *GroupResult, opt Options) (bool, error) {
	c := j.c
	var sets [][]bool
	var tgt laplace.Target
	if len(j.leaves) == 1 {
		tgt.Actions = j.probs[0].TargetActions
		sets = [][]bool{make([]bool, c.N)}
	} else {
		all := make([]bool, c.N)
		for i := range all {
			all[i] = true
		}
		for _, i := range j.machines {
			l := leafIn(c, machines[i].Leaf)
			done := finishedState(l)
			if done < 0 {
				return false, nil // not stopped
			}
			set := make([]bool, c.N)
			for s := range set {
				set[s] = l.Local(c.State(s)) == done
				all[s] = all[s] && set[s]
			}
			sets = append(sets, set)
		}
		if len(j.machines) > 1 {
			sets = append(sets, all)
		}
	}
	q := j.own
	if q == 0 {
		q = passage.UniformizationRate(c, j.probs)
	}
	choice, err := passage.ChooseEngine(ctx, passage.EngineQuery{Chain: c, Alpha: j.probs[0].Alpha, Sets: sets, Target: tgt, Beta: opt.Beta, Epsilon: opt.Epsilon, Rate: q, Force: opt.Transient})
	if err != nil {
		return false, fmt.Errorf("the group of %s: %w", strings.Join(g.Components, ", "), err)
	}
	g.Transient, g.TransientWhy = choice.Engine, choice.Why
	if choice.Engine != passage.EngineLaplace {
		return false, nil
	}
	eng := choice.Laplace
	dist := func(k int) *passage.LaplaceDistribution { return &passage.LaplaceDistribution{Engine: eng, Set: k} }
	for k, i := range j.machines {
		mr := &res.Machines[i]
		d := dist(k)
		mr.Dist, mr.alpha = d, j.probs[k].Alpha
		if mr.PByBeta, err = d.CDF(opt.Beta); err != nil {
			return false, err
		}
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
	all := dist(len(sets) - 1)
	g.dist, g.Mean, g.maxRest = all, all.Mean(), all.MaxRest()
	g.MeanError = 1e-12 * g.Mean
	if g.PAllByBeta, err = all.CDF(opt.Beta); err != nil {
		return false, err
	}
	// A second contour at the goal estimates the windows' error.
	check, err := eng.Check(opt.Beta)
	if err != nil {
		return false, err
	}
	g.TransientWhy += "; " + passage.LaplaceNote(eng, check)
	return true, nil
}
