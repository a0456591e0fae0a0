package models

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"pepa/ctmc"
	"pepa/ctmc/simulate"
	"pepa/internal/option"
	"pepa/lang"
	"pepa/passage"
)

// Input is one mapping model to analyse: a checked model and the name its
// results and errors carry.
type Input struct {
	Name  string
	Model *lang.Model
}

// Request asks for the robustness figures of one or several mappings
// (semantics.md section 3): the question (the goal, the semantics, the
// machines, the accuracy, the stop rule), how to solve it and what to add.
// The zero values ask for the defaults: initial semantics, every machine
// detected, epsilon 1e-10, the 0.99 quantile, finished machines stopped,
// groups of coupled machines each on its own chain.
type Request struct {
	// Question is what is asked of each model (the goal, the semantics,
	// the machines, the accuracy, the stop rule): the fields Options
	// shares, validated once, here.
	Question
	// Flat solves each model's whole product chain (with every machine
	// stopped once finished where the stop rule applies) instead of each
	// group of coupled machines on its own chain.
	Flat bool
	// Sensitivity adds every machine's derivatives with respect to its
	// rates and its robustness radius at probability Level (independent
	// machines, initial semantics, by groups).
	Sensitivity bool
	Level       float64
	// Tie is the relative difference of expected makespans under which
	// mappings count as equally fast (Rank).
	Tie float64
	// RankBy is "robustness" (or "") or "joint": P(max_j F_j <= beta and
	// E <= B), with an energy budget (RankByJoint).
	RankBy string
	// Compile compiles each model (Aggregate, MaxStates; SeparateRates is
	// set where Sensitivity needs it). Compile.MaxStates also bounds each
	// group's chain, the chain with completion flags under Cycling, and
	// the flat product chain (0: no bound).
	Compile ctmc.Options
	// Simulate, with initial semantics, estimates by simulation what does
	// not fit: a group past MaxGroupStates (the other groups exact), or
	// with Flat the whole model when its chain passes Compile.MaxStates or
	// its solution the memory budget. Nil: such a model fails. Its
	// Progress, if set, is replaced by SimulationProgress.
	Simulate *simulate.Options
	// Derive, if not nil, derives a flat analysis's product chain of model
	// i (progress, a sweep's chain cache); nil uses ctmc.Derive bounded by
	// Compile.MaxStates.
	Derive func(ctx context.Context, i int, s *ctmc.Structure) (*ctmc.Chain, error)
	// Stage, if not nil, is told the end of each stage of model i, for
	// timing (compile, groups or derive, then Options.Stage's).
	Stage func(i int, name, detail string)
	// Progress, if not nil, is told how a long series of model i is
	// going (Options.Progress); it may be called from several goroutines.
	Progress func(i int, group []string, why string, step, max int)
	// SimulationProgress, if not nil, receives the progress of a
	// simulation of model i.
	SimulationProgress func(i int, p simulate.Progress)
	// Energy, if not nil, sets the energy figures (semantics.md section
	// 5): the power (overriding the models' //pepa:power pragmas) and the
	// budget. A model whose pragmas give its machines' power has E[E]
	// even without it.
	Energy *EnergyRequest
}

// Report is the answer to a Request: every model's figures, in the order
// given and ranked.
type Report struct {
	Beta      float64
	Semantics passage.Semantics
	Tie       float64
	// Results are the models' figures in the order of the inputs; Ranking
	// holds the same results, most robust first (Rank).
	Results []*Result
	Ranking []*Ranked
	// Simulations are, per model, the statistics of the simulation that
	// estimated it whole (Flat past the budget), or nil: how fast it ran,
	// which the figures do not show.
	Simulations []*simulate.Stats
}

// InputError is the failure of one model of a request.
type InputError struct {
	Name string
	Err  error
}

func (e *InputError) Error() string { return e.Name + ": " + e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// Robustness computes the robustness figures of every model (a mapping) of
// a request, and ranks them: the one call behind 'pepa robustness'. Each
// model is compiled and, by default, solved by groups of coupled machines
// (AnalyzeGroups: each group on its own chain, in parallel, the joint
// figures as products over the groups, a group past MaxGroupStates
// simulated when Simulate is set); with Flat, on its product chain with
// every machine stopped once finished where that matters (Stopped, then
// Analyze), or simulated whole when that chain or its solution does not
// fit and Simulate is set. Each Result says which path was taken and why
// (Solved, Why). A model's failure is an *InputError naming it, unless it
// is a *PragmaError, which names its position itself.
func Robustness(ctx context.Context, in []Input, req Request) (*Report, error) {
	if len(in) == 0 {
		return nil, errors.New("no model given")
	}
	if req.Semantics == "" {
		req.Semantics = passage.Initial
	}
	if err := req.check(); err != nil {
		return nil, err
	}
	for _, m := range in {
		if m.Model == nil {
			return nil, &InputError{Name: m.Name, Err: errors.New("no model")}
		}
	}
	rep := &Report{Beta: req.Beta, Semantics: req.Semantics, Tie: req.Tie, Simulations: make([]*simulate.Stats, len(in))}
	for i, m := range in {
		r, st, err := robustnessOf(ctx, i, m, req)
		if err != nil {
			var pe *PragmaError
			if ctx.Err() != nil || errors.As(err, &pe) {
				return nil, err
			}
			return nil, &InputError{Name: m.Name, Err: err}
		}
		r.Model = m.Name
		rep.Results = append(rep.Results, r)
		rep.Simulations[i] = st
	}
	rep.Ranking = Rank(rep.Results, req.Tie)
	if req.RankBy == "joint" {
		rep.Ranking = RankByJoint(rep.Results, req.Tie)
	}
	return rep, nil
}

// check refuses combinations that have no meaning: the question's
// (Question.check), then those of what the request adds.
func (req *Request) check() error {
	if err := req.Question.check(); err != nil {
		return err
	}
	switch {
	case req.Sensitivity && (req.Semantics != passage.Initial || req.Flat):
		return errors.New("sensitivities are computed under initial semantics on the decomposed path (not flat)")
	case req.Sensitivity && !(req.Level > 0 && req.Level < 1):
		return fmt.Errorf("the robustness radius's level must be in (0, 1), not %g", req.Level)
	}
	if req.RankBy != "" && req.RankBy != "robustness" && req.RankBy != "joint" {
		return fmt.Errorf("unknown ranking %q (want robustness or joint)", req.RankBy)
	}
	if req.RankBy == "joint" && (req.Energy == nil || !(req.Energy.Budget > 0)) {
		return errors.New("ranking by the joint figure P(makespan <= beta and E <= B) needs an energy budget")
	}
	if e := req.Energy; e != nil {
		switch {
		case req.Semantics != passage.Initial || req.Cycling:
			return option.Errorf("energy figures are defined under initial semantics with finished machines stopped (semantics.md section 5): not with {Semantics} plugin or {Cycling}")
		case !(e.Budget >= 0) || math.IsInf(e.Budget, 0):
			return fmt.Errorf("the energy budget must be a finite number of joules >= 0, not %g", e.Budget)
		}
	}
	return nil
}

// robustnessOf analyses model i of a request.
func robustnessOf(ctx context.Context, i int, in Input, req Request) (*Result, *simulate.Stats, error) {
	stage := func(name, detail string) {
		if req.Stage != nil {
			req.Stage(i, name, detail)
		}
	}
	copt := req.Compile
	copt.SeparateRates = req.Sensitivity // merging prefixes by rate value would lose derivatives
	s, err := ctmc.Compile(in.Model, copt)
	if err != nil {
		return nil, nil, err
	}
	stage("compile", "")
	opt := Options{Question: req.Question, MaxJointStates: copt.MaxStates, MaxGroupStates: copt.MaxStates}
	if opt.Pragmas, err = ReadPragmas(in.Model.File); err != nil {
		return nil, nil, err
	}
	if req.Stage != nil {
		opt.Stage = stage
	}
	if req.Progress != nil {
		opt.Progress = func(group []string, why string, step, max int) { req.Progress(i, group, why, step, max) }
	}
	if req.Simulate != nil {
		so := *req.Simulate
		so.Progress = nil
		if req.SimulationProgress != nil {
			so.Progress = func(p simulate.Progress) { req.SimulationProgress(i, p) }
		}
		opt.Simulate = &so
	}
	r, st, err := modelFigures(ctx, i, in, s, req, opt, stage)
	if err != nil {
		return nil, nil, err
	}
	ereq := EnergyRequest{MaxStates: copt.MaxStates}
	if req.Energy != nil {
		ereq = *req.Energy
		if ereq.MaxStates == 0 {
			ereq.MaxStates = copt.MaxStates
		}
	}
	if req.Energy == nil && (opt.Semantics != passage.Initial || opt.Cycling) {
		return r, st, nil // power pragmas alone ask for nothing here
	}
	if r.Energy, err = energyFigures(ctx, s, r, opt, ereq); err != nil {
		return nil, nil, fmt.Errorf("energy: %w", err)
	}
	if r.Energy != nil {
		stage("energy", r.Energy.How)
	}
	return r, st, nil
}

// modelFigures are the robustness figures of model i, compiled as s: by
// groups, or flat.
func modelFigures(ctx context.Context, i int, in Input, s *ctmc.Structure, req Request, opt Options, stage func(name, detail string)) (*Result, *simulate.Stats, error) {
	if !req.Flat {
		gopt := opt
		if gopt.Semantics != passage.Initial {
			gopt.Simulate = nil // groups are simulated under initial semantics only
		}
		r, err := AnalyzeGroups(ctx, s, gopt)
		if err != nil {
			return nil, nil, err
		}
		stage("groups", fmt.Sprintf("%d groups", len(r.Groups)))
		r.Why = groupsWhy(r)
		if req.Sensitivity {
			parts, err := ctmc.Decompose(s)
			if err != nil {
				return nil, nil, option.Errorf("{Sensitivity} needs independent machines: %w", err)
			}
			if err := Sensitivities(in.Model, s, parts, r, req.Level); err != nil {
				return nil, nil, err
			}
		}
		return r, nil, nil
	}
	return flatRobustness(ctx, i, s, req, opt, stage)
}

// groupsWhy says how a model's groups were solved, in a line.
func groupsWhy(r *Result) string {
	alone, coupled, simulated := 0, 0, 0
	for _, g := range r.Groups {
		switch g.Solved {
		case "alone":
			alone++
		case "simulated":
			simulated++
		default:
			coupled++
		}
	}
	var parts []string
	if coupled > 0 {
		parts = append(parts, Plural(coupled, "group", "groups")+" of coupled machines")
	}
	if alone > 0 {
		parts = append(parts, Plural(alone, "machine", "machines")+" alone")
	}
	var why []string
	if len(parts) > 0 {
		why = append(why, strings.Join(parts, " and ")+", each on its own chain")
	}
	if simulated > 0 {
		why = append(why, Plural(simulated, "group", "groups")+option.Text(" simulated (past {MaxStates})"))
	}
	return strings.Join(why, "; ")
}
