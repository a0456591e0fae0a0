package models

import (
	"errors"
	"fmt"
	"math"

	"pepa/ctmc"
	"pepa/ctmc/simulate"
	"pepa/passage"
)

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

// check refuses a question that has no meaning; the only validation of a
// question, where Robustness takes it (a Request's).
func (q *Question) check() error {
	switch {
	case !(q.Beta > 0) || math.IsInf(q.Beta, 0):
		return fmt.Errorf("the makespan goal beta must be a positive number of seconds, not %g", q.Beta)
	case q.Semantics != passage.Initial && q.Semantics != passage.Plugin:
		return fmt.Errorf("unknown semantics %q (want %q or %q)", q.Semantics, passage.Initial, passage.Plugin)
	case q.Cycling && q.Semantics != passage.Initial:
		return errors.New("cycling is about finished machines under initial semantics")
	}
	return passage.CheckEngine(q.Transient)
}

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

// stopped reports whether the stop rule applies: initial semantics, and the
// finished-machines-keep-cycling reading not asked for.
func (o *Options) stopped() bool { return o.Semantics == passage.Initial && !o.Cycling }

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

// productSize is the product of the leaves' local state counts (an upper
// bound on the state space), +Inf past float64.
func productSize(s *ctmc.Structure) float64 {
	p := 1.0
	for _, l := range s.Leaves {
		p *= float64(l.NumLocal)
	}
	return p
}

// Plural is "1 machine" or "n machines".
func Plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
