package models

import (
	"context"
	"fmt"
	"math"
	"sort"

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

// productJoint sets the joint figures of independent machines: the
// product of their probabilities, and E[max] by integration.
func (res *Result) productJoint(tol float64) {
	res.PAllByBeta = 1
	var dists []*passage.Result
	var means []float64
	cdfErr := 0.0
	for i := range res.Machines {
		mr := &res.Machines[i]
		if mr.dist == nil {
			continue
		}
		res.PAllByBeta *= mr.PByBeta
		dists = append(dists, mr.dist)
		means = append(means, mr.Mean)
		cdfErr += mr.dist.Epsilon
	}
	sort.SliceStable(dists, func(i, j int) bool { return dists[i].Q < dists[j].Q })
	res.ExpectedMakespan, res.MakespanError = MaxMean(cdfProduct(dists), means, tol, cdfErr)
}

// joint computes P(max F_j <= beta) and E[max F_j].
func joint(ctx context.Context, c *ctmc.Chain, machines []*Machine, res *Result, opt Options) error {
	if res.Independent || opt.Semantics == passage.Plugin {
		res.productJoint(1e-9)
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
// bound on its error. at(t) returns prod_j F_j(t) and sum_j (1 - F_j(t)).
//
// The integral is taken with 10-point Gauss-Legendre panels on [0, T]; T
// is doubled until the neglected tail, bounded by
// sum_j (E[F_j] - integral_0^T (1 - F_j)) (because 1 - prod F <= sum 1 - F_j,
// and E[F_j] is known exactly), is below tol times the result; the
// quadrature error is estimated by halving the panels. cdfErr bounds the
// error of prod_j F_j(t) at any t (the sum of the CDFs' error bounds); the
// returned bound adds T * cdfErr for it.
func MaxMean(at func(t float64) (prod, sumComp float64), means []float64, tol, cdfErr float64) (float64, float64) {
	sumMeans, maxMean := 0.0, 0.0
	for _, m := range means {
		if math.IsInf(m, 1) || math.IsNaN(m) {
			return math.Inf(1), 0
		}
		sumMeans += m
		maxMean = math.Max(maxMean, m)
	}
	if maxMean == 0 {
		return 0, 0
	}
	// integrate returns the integrals of 1 - prod and of sumComp.
	integrate := func(T float64, panels int) (float64, float64) {
		h := T / float64(panels)
		var f, g float64
		for i := 0; i < panels; i++ {
			lo := float64(i) * h
			for k, x := range glNodes {
				p, c := at(lo + (x+1)*h/2)
				f += glWeights[k] * h / 2 * (1 - p)
				g += glWeights[k] * h / 2 * c
			}
		}
		return f, g
	}
	T := 2 * maxMean
	panels := 16
	for iter := 0; iter < 60; iter++ {
		coarse, _ := integrate(T, panels)
		fine, g := integrate(T, 2*panels)
		tail := math.Max(0, sumMeans-g)
		quadErr := math.Abs(fine - coarse)
		if tail <= tol*fine && quadErr <= tol*fine {
			return fine, tail + quadErr + T*cdfErr
		}
		if tail > tol*fine {
			T *= 2
		}
		panels *= 2
	}
	fine, _ := integrate(T, 2*panels)
	return fine, math.Abs(fine)*tol*10 + T*cdfErr
}

// 10-point Gauss-Legendre nodes and weights on [-1, 1].
var glNodes, glWeights = func() ([]float64, []float64) {
	x := make([]float64, 10)
	w := make([]float64, 10)
	quad.Legendre{}.FixedLocations(x, w, -1, 1)
	return x, w
}()

// cdfProduct returns at(t) for MaxMean over passage results: results with
// the same uniformization rate share their Poisson weights.
func cdfProduct(dists []*passage.Result) func(float64) (float64, float64) {
	return func(t float64) (float64, float64) {
		prod, comp := 1.0, 0.0
		var w *passage.PoissonWeights
		q := math.NaN()
		for _, d := range dists {
			if d.Q != q {
				q = d.Q
				var err error
				if w, err = passage.FoxGlynn(q*t, d.Epsilon/2); err != nil {
					return math.NaN(), math.NaN()
				}
			}
			f := d.CDFWith(w)
			prod *= f
			comp += 1 - f
		}
		return prod, comp
	}
}
