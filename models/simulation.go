package models

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"pepa/ctmc"
	"pepa/ctmc/shard"
	"pepa/ctmc/simulate"
	"pepa/internal/membudget"
	"pepa/internal/option"
	"pepa/passage"
)

// SimulationRequest is one simulation of a model: the robustness figures
// of a mapping (Beta > 0), a passage (Target or TargetActions), else the
// steady state; the whole run, or one shard of its replications (steady
// state: of its streams) whose record pepa merge joins.
type SimulationRequest struct {
	Compile ctmc.Options     // how the model is compiled
	Options simulate.Options // when to stop, the seed, the confidence, the workers

	// The robustness figures (initial semantics unless Cycling): the goal,
	// the machines (nil: detected), and the energy figures when the
	// machines' power is known (Power, or the model's //pepa:power lines),
	// with P(E <= EnergyBudget) when the budget is positive.
	Beta         float64
	Machines     []string
	Cycling      bool
	Power        PowerFlags
	EnergyBudget float64

	// A passage: into states where Target (a state predicate) holds, or
	// until one of TargetActions first fires; the CDF at Times and the
	// Quantiles.
	Target        string
	TargetActions []string
	Times         []float64
	Quantiles     []float64

	// The steady state's batches.
	Steady simulate.SteadySpec

	// Shard, when its N > 0, runs shard K of N of the replications and
	// keeps their record instead of the figures.
	Shard shard.Index
}

// Kind is the estimate a request asks for: "robustness", "passage" or
// "steady".
func (r *SimulationRequest) Kind() string {
	switch {
	case r.Beta > 0:
		return "robustness"
	case r.Target != "" || len(r.TargetActions) > 0:
		return "passage"
	}
	return "steady"
}

// SimulationReport is what a simulation gave: one estimate (the field of
// its Kind), or a shard's record of its range.
type SimulationReport struct {
	Kind       string
	What       string // the passage, in words
	Robustness *simulate.RobustnessResult
	Passage    *simulate.PassageResult
	Steady     *simulate.SteadyResult
	Energy     *EnergyResult // with the machines' power (robustness)
	Stats      simulate.Stats

	// A shard's range (of Total replications or streams, Units) and its
	// record; nil records for a whole run.
	First, Count, Total int
	Units               string
	RobustnessRecord    *simulate.RobustnessRecord
	PassageRecord       *simulate.PassageRecord
	SteadyRecord        *simulate.SteadyRecord
}

// TargetActionsError is a request's target action the model does not
// have (a caller names where it came from).
type TargetActionsError struct{ Err error }

func (e *TargetActionsError) Error() string { return "target actions: " + e.Err.Error() }
func (e *TargetActionsError) Unwrap() error { return e.Err }

// ErrNoPower is returned for an energy budget without the machines' power.
var ErrNoPower = errors.New("an energy budget needs the machines' power: no power is known")

// Simulate runs one simulation of a model (pepa simulate): it compiles the
// model, reads its pragmas (initial distributions, power), and estimates
// what the request asks for with package simulate.
func Simulate(ctx context.Context, in Input, req SimulationRequest) (*SimulationReport, error) {
	s, err := ctmc.Compile(in.Model, req.Compile)
	if err != nil {
		return nil, err
	}
	pragmas, err := ReadPragmas(in.Model.File)
	if err != nil {
		return nil, err
	}
	opt := req.Options
	if opt.Initial, err = simulate.InitialFromNames(s, pragmas.Initial); err != nil {
		return nil, err
	}
	rep := &SimulationReport{Kind: req.Kind()}
	rep.Total, rep.Units = opt.Replications, "replications"
	if rep.Kind == "steady" {
		rep.Total, rep.Units = opt.Replications, "streams"
		if rep.Total == 0 {
			rep.Total = simulate.DefaultStreams
		}
	}
	rep.First, rep.Count = 0, rep.Total
	if req.Shard.N > 0 {
		rep.First, rep.Count = req.Shard.Range(rep.Total)
	}
	switch rep.Kind {
	case "robustness":
		err = simulateRobustness(ctx, s, pragmas, req, opt, rep)
	case "passage":
		err = simulatePassage(ctx, s, req, opt, rep)
	default:
		if req.Shard.N > 0 {
			rep.SteadyRecord, err = simulate.SteadyRange(ctx, s, req.Steady, opt, rep.First, rep.Count)
		} else if rep.Steady, err = simulate.Steady(ctx, s, req.Steady, opt); err == nil {
			rep.Stats = rep.Steady.Stats
		}
	}
	if err != nil {
		return nil, err
	}
	return rep, nil
}

// simulateRobustness estimates the robustness figures (the stop rule as
// the exact analysis applies it: SimulationSpec) and, with the machines'
// power, the energy figures from the same runs.
func simulateRobustness(ctx context.Context, s *ctmc.Structure, pragmas *Pragmas, req SimulationRequest, opt simulate.Options, rep *SimulationReport) error {
	spec, ms, err := SimulationSpec(s, req.Beta, req.Machines, req.Cycling)
	if err != nil {
		return err
	}
	if req.Shard.N > 0 {
		rep.RobustnessRecord, err = simulate.RobustnessRange(ctx, s, spec, opt, rep.First, rep.Count)
		return err
	}
	analysed := make([]string, len(ms))
	for j, m := range ms {
		analysed[j] = m.Name
	}
	names, power, err := MachinePower(analysed, pragmas, req.Power)
	if err != nil {
		return err
	}
	if power == nil && req.EnergyBudget > 0 {
		return ErrNoPower
	}
	spec.KeepFinish = power != nil && !req.Cycling
	if spec.KeepFinish && opt.Replications > 0 {
		need := membudget.Bytes(int64(opt.Replications), int64(len(ms))*8+24)
		if err := membudget.Check(ctx, fmt.Sprintf("energy: the finishing times of %d runs of %d machines", opt.Replications, len(ms)), need, option.Text("give fewer {Replications}")); err != nil {
			return err
		}
	}
	if rep.Robustness, err = simulate.Robustness(ctx, s, spec, opt); err != nil {
		return err
	}
	rep.Stats = rep.Robustness.Stats
	if spec.KeepFinish {
		rep.Energy = SimulatedEnergy(names, power, rep.Robustness.Finish, req.Beta, req.EnergyBudget, opt.Confidence)
	}
	return nil
}

// simulatePassage estimates a passage-time distribution.
func simulatePassage(ctx context.Context, s *ctmc.Structure, req SimulationRequest, opt simulate.Options, rep *SimulationReport) error {
	spec := simulate.PassageSpec{Times: req.Times, Quantiles: req.Quantiles}
	var err error
	if req.Target != "" {
		if spec.Target, err = ctmc.ParsePredicate(s, req.Target); err != nil {
			return err
		}
		rep.What = "entering states where " + req.Target
	} else {
		if spec.TargetActions, err = passage.ActionIDs(s, req.TargetActions); err != nil {
			return &TargetActionsError{err}
		}
		rep.What = "the first firing of " + strings.Join(req.TargetActions, ",")
	}
	if req.Shard.N > 0 {
		rep.PassageRecord, err = simulate.PassageRange(ctx, s, spec, opt, rep.First, rep.Count)
		return err
	}
	if rep.Passage, err = simulate.Passage(ctx, s, spec, opt); err == nil {
		rep.Stats = rep.Passage.Stats
	}
	return err
}
