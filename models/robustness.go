package models

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/integrate/quad"

	"pepa/ctmc"
	"pepa/passage"
)

// Options controls a robustness analysis.
type Options struct {
	Beta      float64           // makespan goal
	Semantics passage.Semantics // Initial (default) or Plugin
	Machines  []string          // machine names; empty: detected
	Epsilon   float64           // CDF truncation bound (default 1e-10)
	Quantile  float64           // the "finishing time" quantile (default 0.99)
}

func (o *Options) defaults() {
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
	Mean         float64 // E[F]; +Inf if the machine may never finish
	Quantile     float64 // the Options.Quantile quantile of F
	Note         string
	dist         *passage.Result
}

// CDF is the machine's finishing-time distribution function (nil result
// when it was not computed).
func (m *MachineResult) CDF(t float64) (float64, error) {
	if m.dist == nil {
		return math.NaN(), nil
	}
	return m.dist.CDF(t)
}

// Result is the robustness analysis of one mapping model.
type Result struct {
	Model     string
	Beta      float64
	Semantics passage.Semantics
	States    int
	Solved    string // "flat": the product chain
	Machines  []MachineResult

	Robustness       float64 // min_j P(F_j <= beta) over the computed machines
	PAllByBeta       float64 // P(max_j F_j <= beta)
	ExpectedMakespan float64 // E[max_j F_j]
	MakespanError    float64 // bound on the error of ExpectedMakespan
	Independent      bool    // machines' finishing times are independent
	Dependence       string  // why not, when they are not
	Joint            string  // how the joint figures were obtained
}

// Analyze computes the robustness of the mapping whose chain is c.
func Analyze(ctx context.Context, c *ctmc.Chain, opt Options) (*Result, error) {
	opt.defaults()
	machines, err := FindMachines(c.S, opt.Machines)
	if err != nil {
		return nil, err
	}
	res := &Result{Beta: opt.Beta, Semantics: opt.Semantics, States: c.N, Solved: "flat"}
	res.Independent, res.Dependence = Independent(c.S, machines)

	var pi []float64
	if opt.Semantics == passage.Plugin {
		if pi, err = passage.SteadyForPlugin(ctx, c); err != nil {
			return nil, err
		}
	}
	var probs []passage.Problem
	var solved []int // machine index of each problem
	res.Machines = make([]MachineResult, len(machines))
	for i, m := range machines {
		mr := &res.Machines[i]
		*mr = MachineResult{Name: m.Name, FirstActions: m.FirstNames(c.S), LastActions: m.LastNames(c.S),
			Applications: m.Apps, PByBeta: math.NaN(), Mean: math.NaN(), Quantile: math.NaN()}
		var pr passage.Problem
		if opt.Semantics == passage.Plugin {
			if sameSet(m.First, m.Last) {
				mr.Note = "its first and last actions are the same (one application), for which the plug-in semantics computes nothing; use --semantics initial"
				continue
			}
			if pr, err = passage.PluginProblem(c, pi, m.First, m.Last); err != nil {
				return nil, fmt.Errorf("machine %s: %w", m.Name, err)
			}
		} else {
			pr = passage.InitialProblem(c, m.Last)
		}
		probs = append(probs, pr)
		solved = append(solved, i)
	}
	if len(probs) == 0 {
		return nil, fmt.Errorf("no machine could be analysed under %s semantics (each has a single application); use --semantics initial", opt.Semantics)
	}
	dists, err := passage.Solve(ctx, c, probs, passage.Options{Epsilon: opt.Epsilon, Horizon: opt.Beta, Complete: true})
	if err != nil {
		return nil, err
	}
	res.Robustness = math.Inf(1)
	for k, i := range solved {
		mr := &res.Machines[i]
		mr.dist = dists[k]
		if mr.PByBeta, err = dists[k].CDF(opt.Beta); err != nil {
			return nil, err
		}
		if mr.Mean, err = passage.Mean(ctx, c, probs[k]); err != nil {
			return nil, err
		}
		if mr.Quantile, err = dists[k].Quantile(opt.Quantile); err != nil {
			return nil, err
		}
		res.Robustness = math.Min(res.Robustness, mr.PByBeta)
	}
	if err := joint(ctx, c, machines, res, opt); err != nil {
		return nil, err
	}
	return res, nil
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

// joint computes P(max F_j <= beta) and E[max F_j].
func joint(ctx context.Context, c *ctmc.Chain, machines []*Machine, res *Result, opt Options) error {
	var cdfs []func(float64) float64
	var means []float64
	for i := range res.Machines {
		mr := &res.Machines[i]
		if mr.dist == nil {
			continue
		}
		d := mr.dist
		cdfs = append(cdfs, func(t float64) float64 { v, _ := d.CDF(t); return v })
		means = append(means, mr.Mean)
	}
	if res.Independent || opt.Semantics == passage.Plugin {
		res.PAllByBeta = 1
		for i := range res.Machines {
			if p := res.Machines[i].PByBeta; !math.IsNaN(p) {
				res.PAllByBeta *= p
			}
		}
		res.ExpectedMakespan, res.MakespanError = MaxMean(cdfs, means, 1e-9)
		res.Joint = "product of independent machines"
		if !res.Independent {
			res.Joint = "product of the machines' plug-in distributions (each has its own start), although " + res.Dependence
		}
		return nil
	}
	// Coupled machines: the chain with a "finished" flag per machine.
	fc, target, err := flagChain(ctx, c, machines)
	if err != nil {
		return err
	}
	pr := passage.StateProblem(fc, target)
	rs, err := passage.Solve(ctx, fc, []passage.Problem{pr}, passage.Options{Epsilon: opt.Epsilon, Horizon: opt.Beta})
	if err != nil {
		return err
	}
	if res.PAllByBeta, err = rs[0].CDF(opt.Beta); err != nil {
		return err
	}
	if res.ExpectedMakespan, err = passage.Mean(ctx, fc, pr); err != nil {
		return err
	}
	res.MakespanError = 1e-13 * res.ExpectedMakespan
	res.Joint = fmt.Sprintf("passage to all machines finished on the product chain with completion flags (%d states), because %s", fc.N, res.Dependence)
	return nil
}

// MaxMean computes E[max_j F_j] = integral over t >= 0 of 1 - prod_j F_j(t)
// for independent finishing times with the given CDFs and means, and a
// bound on its error. The integral is taken with 10-point Gauss-Legendre
// panels on [0, T]; T is doubled until the neglected tail, bounded by
// sum_j (E[F_j] - integral_0^T (1 - F_j)) (because 1 - prod F <= sum 1 - F_j,
// and E[F_j] is known exactly), is below tol times the result; the
// quadrature error is estimated by halving the panels.
func MaxMean(cdfs []func(float64) float64, means []float64, tol float64) (float64, float64) {
	if len(cdfs) == 0 {
		return 0, 0
	}
	maxMean := 0.0
	for _, m := range means {
		if math.IsInf(m, 1) || math.IsNaN(m) {
			return math.Inf(1), 0
		}
		maxMean = math.Max(maxMean, m)
	}
	if maxMean == 0 {
		return 0, 0
	}
	f := func(t float64) float64 {
		p := 1.0
		for _, F := range cdfs {
			p *= F(t)
		}
		return 1 - p
	}
	integrate := func(g func(float64) float64, T float64, panels int) float64 {
		h := T / float64(panels)
		s := 0.0
		for i := 0; i < panels; i++ {
			s += quad.Fixed(g, float64(i)*h, float64(i+1)*h, 10, quad.Legendre{}, 0)
		}
		return s
	}
	T := 4 * maxMean
	panels := 64
	for iter := 0; iter < 40; iter++ {
		tail := 0.0
		for j, F := range cdfs {
			g := func(t float64) float64 { return 1 - F(t) }
			tail += math.Max(0, means[j]-integrate(g, T, panels))
		}
		coarse := integrate(f, T, panels)
		fine := integrate(f, T, 2*panels)
		quadErr := math.Abs(fine - coarse)
		if tail <= tol*fine && quadErr <= tol*fine {
			return fine, tail + quadErr
		}
		if tail > tol*fine {
			T *= 2
			panels *= 2
		} else {
			panels *= 2
		}
	}
	fine := integrate(f, T, 2*panels)
	return fine, math.Abs(fine) * tol * 10
}
