package passage

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"

	"pepa/ctmc"
	"pepa/internal/membudget"
	"pepa/internal/option"
	"pepa/lang"
	"pepa/passage/laplace"
)

// Query is one passage-time question about a compiled model: where the
// passage starts and ends, and what to report about its distribution.
type Query struct {
	// SourceActions, if not empty, select the PEPA Eclipse Plug-in's
	// semantics (semantics.md section 2); it needs TargetActions.
	SourceActions []string
	// TargetActions end the passage at the first firing of one of them
	// (initial semantics) or, with SourceActions, on entering a state they
	// lead to.
	TargetActions []string
	// Target is a state predicate (ctmc.ParsePredicate): the passage ends
	// on entering a state where it holds. Exactly one of TargetActions and
	// Target is given.
	Target string
	// Times is the grid of times whose CDF (and density) to report,
	// non-negative; empty asks for DefaultGrid.
	Times []float64
	// Quantiles are probabilities in (0, 1) whose quantiles to report.
	Quantiles []float64
	// PDF asks for the density at each time too.
	PDF bool
	// Flat solves on the whole product chain even where the passage
	// concerns one independent part (ctmc.Decompose).
	Flat bool
	// NoMean skips the mean passage time (Analysis.Mean NaN, MeanFrom
	// "not asked"). On a big chain the mean can cost more than the
	// distribution: without it a single passage up to a horizon is solved
	// by backward iteration, with no generator to build.
	NoMean bool
}

// AnalyzeOptions controls how Analyze solves.
type AnalyzeOptions struct {
	// Epsilon bounds the truncation error of every CDF value (default
	// 1e-10).
	Epsilon float64
	// Derive derives the product chain when one is needed (state limits,
	// progress); nil uses ctmc.Derive with no limit.
	Derive func(ctx context.Context, s *ctmc.Structure) (*ctmc.Chain, error)
	// Progress, if not nil, receives the uniformization's progress
	// (Options.Progress).
	Progress func(step, max int)
	// Stage, if not nil, is called at the end of each stage (see
	// Options.Stage), for timing.
	Stage func(name, detail string)
	// Transient chooses the engine (EngineAuto or "": by predicted cost;
	// EngineUniformization or EngineLaplace to force one): Laplace-
	// transform inversion for a passage from the start whose chain, with
	// the target absorbing, orders into small blocks with real spectra
	// (ChooseEngine).
	Transient string
}

// seriesMeanTransitions is the chain size, in transitions, from which
// Analyze may take the mean from the series run on past the horizon
// rather than from the linear solve: it does when the series is predicted
// (Result.StepsToComplete) to end within seriesMeanExtraSteps more steps,
// about what the linear solve costs. Measured again with the assembly
// step (one passage up to t = 45 on the mapping models' product chains,
// 28/7: 5.66M transitions, 32/8: 52.7M; both cores; the time of the
// solve divided by that of a step of the same run), the linear solve cost
// as much as 118 and 308 steps (28/7, machines 1 and 7), 299 and 534
// (32/8, machines 1 and 8), where running on to completion took 661, 623,
// 753 and 455 more steps (predicted as 608, 710, 750 and 461). A cap of
// 500 picks the cheaper way for all four: the solve where the series
// needs 600 more steps or more, the series for 32/8's machine 8 (455
// steps against a solve worth 534). The solve's cost in steps varies
// fourfold between chains, and the cap is its typical value, not a
// prediction for each chain. A variable so that tests can send small
// chains this way.
var (
	seriesMeanTransitions int64 = 5_000_000
	seriesMeanExtraSteps        = 500
)

// Point is the distribution at one time of the grid.
type Point struct {
	T, CDF float64
	PDF    float64 // NaN unless Query.PDF
}

// QuantilePoint is the p-quantile of the passage time: +Inf when the
// target is reached with probability below p.
type QuantilePoint struct {
	P, T float64
}

// Analysis is the answer to a Query.
type Analysis struct {
	Semantics Semantics
	// Solved is "flat" (the product chain) or "decomposed" (the one
	// independent part the passage concerns), and SolvedWhy says why.
	Solved, SolvedWhy string
	Chain             *ctmc.Chain // the chain solved
	Problem           Problem
	// Result is uniformization's result; nil when the Laplace engine
	// solved the passage (Engine says which, EngineWhy why).
	Result *Result
	// Distribution is the passage-time distribution, whichever engine
	// computed it (Result, or a *LaplaceDistribution).
	Distribution      Distribution
	Engine, EngineWhy string
	// Mean is the expected passage time: +Inf when the passage may never
	// end, NaN when it could not be computed (MeanErr says why; the
	// distribution is unaffected).
	Mean    float64
	MeanErr error
	// MeanFrom says how the mean was obtained: "series" (the sum of the
	// complete uniformization series, MeanTail its estimated part beyond
	// the last step), "linear solve" (MeanTimes), "may never end" (+Inf
	// without a solve: Result.MayNeverEnd), or "not asked" (Query.NoMean).
	MeanFrom  string
	MeanTail  float64
	Points    []Point
	Quantiles []QuantilePoint
}

// AnalyzeModel compiles m (with compile's options) and answers the query
// on it (Analyze): the analysis in one call from a model.
func AnalyzeModel(ctx context.Context, m *lang.Model, compile ctmc.Options, q Query, opt AnalyzeOptions) (*Analysis, error) {
	s, err := ctmc.Compile(m, compile)
	if err != nil {
		return nil, err
	}
	return Analyze(ctx, s, q, opt)
}

// Analyze answers a passage-time query on a compiled model: it solves on
// the one independent part that performs every action of the query when
// there is one (unless Query.Flat or a state predicate), else on the
// product chain; builds the passage of the chosen semantics; runs the
// uniformization once for the whole grid; and computes the mean and the
// quantiles. The mean is +Inf when the passage may never end, the sum of
// the series when it is complete (on a big chain the series runs on past
// the horizon when it is predicted to end soon), else the linear solve
// (Analysis.MeanFrom says which). A mean that cannot be computed leaves
// Mean NaN with MeanErr set and does not fail the analysis.
func Analyze(ctx context.Context, s *ctmc.Structure, q Query, opt AnalyzeOptions) (*Analysis, error) {
	if opt.Epsilon <= 0 {
		opt.Epsilon = 1e-10
	}
	if err := q.check(opt.Epsilon); err != nil {
		return nil, err
	}
	a := &Analysis{Semantics: Initial, Solved: "flat", SolvedWhy: option.Text("{Flat} was given"), Mean: math.NaN()}
	parts, partIndex, err := a.chooseChain(ctx, s, q, opt)
	if err != nil {
		return nil, err
	}
	if err := a.buildProblem(ctx, parts, partIndex, q); err != nil {
		return nil, err
	}
	if a.Semantics == Initial && opt.Transient != EngineUniformization {
		done, err := a.byLaplace(ctx, q, opt)
		if done || err != nil {
			return a, err
		}
	}
	a.Engine = EngineUniformization
	popt, runOn := solveOptions(ctx, a.Chain, a.Problem, q, opt)
	rs, err := Solve(ctx, a.Chain, []Problem{a.Problem}, popt)
	if err != nil {
		return nil, err
	}
	r := rs[0]
	a.Result, a.Distribution = r, r
	if err := a.readPoints(r, q); err != nil {
		return nil, err
	}
	how := a.mean(ctx, r, q, runOn)
	if opt.Stage != nil {
		opt.Stage("CDF values, quantiles and mean", how)
	}
	if a.MeanErr != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		a.Mean = math.NaN()
		if !errors.Is(a.MeanErr, ErrMeanUnavailable) {
			a.MeanErr = fmt.Errorf("%w: %w", ErrMeanUnavailable, a.MeanErr)
		}
	}
	return a, nil
}

// check refuses a malformed query (epsilon is the analysis's).
func (q *Query) check(epsilon float64) error {
	if !(epsilon < 1) {
		return fmt.Errorf("epsilon %g must be in (0, 1)", epsilon)
	}
	if (len(q.TargetActions) == 0) == (q.Target == "") {
		return fmt.Errorf("give exactly one of target actions and a target predicate")
	}
	if len(q.SourceActions) > 0 && len(q.TargetActions) == 0 {
		return fmt.Errorf("source actions (plug-in semantics) need target actions")
	}
	for _, t := range q.Times {
		if !(t >= 0) || math.IsInf(t, 0) {
			return fmt.Errorf("time %g is not a finite non-negative number", t)
		}
	}
	for _, p := range q.Quantiles {
		if !(p > 0 && p < 1) {
			return fmt.Errorf("quantile %g is not a probability in (0, 1)", p)
		}
	}
	return nil
}

// chooseChain sets a.Chain, and why it is that chain: the one independent
// part that performs every action of the query, when there is one (a
// passage whose actions all belong to one independent part has the same
// distribution on that part's own chain: ctmc.Decompose), else the
// product chain. It returns the parts and the part's index (-1: none)
// when decomposed.
func (a *Analysis) chooseChain(ctx context.Context, s *ctmc.Structure, q Query, opt AnalyzeOptions) ([]*ctmc.Part, int, error) {
	var parts []*ctmc.Part
	partIndex := -1
	if q.Target != "" {
		a.SolvedWhy = "state predicates are solved on the product chain"
	} else if !q.Flat {
		var err error
		if parts, err = ctmc.Decompose(s); err != nil {
			a.SolvedWhy = err.Error()
			parts = nil
		} else if partIndex = partOwning(s, parts, append(append([]string{}, q.SourceActions...), q.TargetActions...)); partIndex < 0 {
			a.SolvedWhy = "the passage's actions belong to more than one independent part"
			parts = nil
		} else {
			a.Chain = parts[partIndex].Chain
			a.Solved, a.SolvedWhy = "decomposed", fmt.Sprintf("its actions belong to component %s, one of %d independent parts", parts[partIndex].Leaf.Name, len(parts))
		}
	}
	if a.Chain == nil {
		derive := opt.Derive
		if derive == nil {
			derive = func(ctx context.Context, s *ctmc.Structure) (*ctmc.Chain, error) {
				return ctmc.Derive(ctx, s, ctmc.DeriveOptions{})
			}
		}
		var err error
		if a.Chain, err = derive(ctx, s); err != nil {
			return nil, -1, err
		}
	}
	return parts, partIndex, nil
}

// buildProblem sets a.Problem, the passage of the query's semantics on
// a.Chain: to the states of a predicate, plug-in (source actions) or
// initial.
func (a *Analysis) buildProblem(ctx context.Context, parts []*ctmc.Part, partIndex int, q Query) error {
	c := a.Chain
	switch {
	case q.Target != "":
		p, err := ctmc.ParsePredicate(c.S, q.Target)
		if err != nil {
			return err
		}
		a.Problem = StateProblem(c, ctmc.SelectStates(c, p))
	case len(q.SourceActions) > 0:
		a.Semantics = Plugin
		var err error
		if a.Problem, err = pluginProblemOf(ctx, c, parts, partIndex, q); err != nil {
			return err
		}
	default:
		tgt, err := ActionIDs(c.S, q.TargetActions)
		if err != nil {
			return option.Errorf("{TargetActions}: %w", err)
		}
		a.Problem = InitialProblem(c, tgt)
	}
	return nil
}

// solveOptions are the uniformization's options for the query, and
// whether the series runs on past the horizon for the mean.
func solveOptions(ctx context.Context, c *ctmc.Chain, pr Problem, q Query, opt AnalyzeOptions) (Options, bool) {
	horizon := 0.0
	for _, t := range q.Times {
		horizon = math.Max(horizon, t)
	}
	// The default grid spans the whole distribution: the complete series.
	// Quantiles need the series only until the CDF reaches them
	// (Options.Quantiles).
	popt := Options{Epsilon: opt.Epsilon, Horizon: horizon, Complete: len(q.Times) == 0, Quantiles: q.Quantiles, Progress: opt.Progress, Stage: opt.Stage}
	// On a big chain the mean is cheaper from the series run on past the
	// horizon to completion than from the linear solve when the series is
	// predicted to end within seriesMeanExtraSteps more steps; otherwise,
	// or if it has not ended after them, the linear solve gives it.
	runOn := !popt.Complete && !q.NoMean && int64(c.NumTransitions()) >= seriesMeanTransitions
	if runOn {
		popt.ExtraSteps = seriesMeanExtraSteps
	}
	// Where the linear solve would not fit in what the memory budget
	// leaves, the series runs on to completion instead (more steps, no
	// more memory) and the mean is its sum.
	// Where the forward iteration does not fit either, Solve iterates
	// backward, and the mean is the linear solve's if that fits, or
	// unavailable.
	if !popt.Complete && !q.NoMean {
		need := meanBytes(c)
		if membudget.Check(ctx, "", need, "") != nil && membudget.Check(ctx, "", forwardBytes(c, pr), "") == nil {
			popt.Complete, popt.ExtraSteps, runOn = true, 0, false
			membudget.Degrade(ctx, "passage: the mean's linear solve would need %s, %s left of the memory budget: the series runs on to completion instead, and the mean is its sum",
				membudget.FormatSize(need), membudget.FormatSize(membudget.Left(ctx)))
		}
	}
	return popt, runOn
}

// readPoints sets the CDF (and density) at the query's times, or on the
// default grid, and its quantiles.
func (a *Analysis) readPoints(r *Result, q Query) error {
	times := q.Times
	if len(times) == 0 {
		times = DefaultGrid(r)
	}
	for _, t := range times {
		v, err := r.CDF(t)
		if err != nil {
			return err
		}
		pt := Point{T: t, CDF: v, PDF: math.NaN()}
		if q.PDF {
			if pt.PDF, err = r.PDF(t); err != nil {
				return err
			}
		}
		a.Points = append(a.Points, pt)
	}
	for _, p := range q.Quantiles {
		t, err := r.Quantile(p)
		if err != nil {
			return err
		}
		a.Quantiles = append(a.Quantiles, QuantilePoint{P: p, T: t})
	}
	return nil
}

// mean sets the mean and says how it was had: a passage that may never
// end has an infinite mean, with no solve; a complete series gives the
// mean as its sum (SeriesMean); a series cut at the horizon, or a dense
// solve that has no series, needs the linear solve.
func (a *Analysis) mean(ctx context.Context, r *Result, q Query, runOn bool) string {
	switch {
	case q.NoMean:
		a.Mean, a.MeanFrom = math.NaN(), "not asked"
		return "no mean: not asked"
	case r.dense == nil && r.MayNeverEnd:
		a.Mean, a.MeanFrom = math.Inf(1), "may never end"
		return "infinite: the passage may never end"
	case r.Complete && r.dense == nil:
		a.Mean, a.MeanTail, a.MeanErr = r.SeriesMean()
		a.MeanFrom = "series"
		if runOn {
			return fmt.Sprintf("from the series, run on to step %d", r.Iterations())
		}
		return "from the series"
	}
	if runOn {
		// The uniformization's generator and vectors are garbage now:
		// collected first, their memory is reused by the solve instead
		// of adding to the peak (5.8M states, 52.7M transitions: 1.36 GB
		// peak, 1.97 GB without).
		runtime.GC()
	}
	a.Mean, a.MeanErr = Mean(ctx, a.Chain, a.Problem)
	a.MeanFrom = "linear solve"
	switch {
	case r.backward:
		return "linear solve: the passage was iterated backward (no series to sum)"
	case runOn:
		if more, ok := r.StepsToComplete(); ok {
			return fmt.Sprintf("linear solve: the series would need about %d more steps, above %d", more, seriesMeanExtraSteps)
		}
		return "linear solve: no decay of the series to extrapolate"
	}
	return "linear solve"
}

// pluginProblemOf builds the plug-in passage, with the steady state of the
// part (and the other parts' mean exit rates) when decomposed.
func pluginProblemOf(ctx context.Context, c *ctmc.Chain, parts []*ctmc.Part, partIndex int, q Query) (Problem, error) {
	srcIDs, err := ActionIDs(c.S, q.SourceActions)
	if err != nil {
		return Problem{}, option.Errorf("{SourceActions}: %w", err)
	}
	tgtIDs, err := ActionIDs(c.S, q.TargetActions)
	if err != nil {
		return Problem{}, option.Errorf("{TargetActions}: %w", err)
	}
	var pi []float64
	others := 0.0
	if parts != nil {
		chains := make([]*ctmc.Chain, len(parts))
		for k, p := range parts {
			chains[k] = p.Chain
		}
		pis, qbar, err := PartRates(ctx, chains)
		if err != nil {
			return Problem{}, err
		}
		pi = pis[partIndex]
		for k, x := range qbar {
			if k != partIndex {
				others += x
			}
		}
	} else if pi, err = SteadyForPlugin(ctx, c); err != nil {
		return Problem{}, err
	}
	pr, err := PluginPartProblem(c, pi, others, srcIDs, tgtIDs)
	if err != nil {
		return Problem{}, fmt.Errorf("source actions %s, target actions %s: %w", join(q.SourceActions), join(q.TargetActions), err)
	}
	return pr, nil
}

func join(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ","
		}
		out += x
	}
	return out
}

// partOwning returns the index of the part whose chain performs every one
// of the actions, or -1.
func partOwning(s *ctmc.Structure, parts []*ctmc.Part, actions []string) int {
	owner := -1
	for _, a := range actions {
		id, ok := s.ActionID(a)
		if !ok {
			return -1 // reported as unknown later, on the product chain
		}
		found := -1
		for k, p := range parts {
			for _, x := range p.Chain.Act {
				if x == id {
					found = k
					break
				}
			}
			if found >= 0 {
				break
			}
		}
		if found < 0 || (owner >= 0 && found != owner) {
			return -1
		}
		owner = found
	}
	return owner
}

// DefaultGrid spans 0 to the 0.999 quantile (or 20 mean jump times) in 20
// steps of a readable size.
func DefaultGrid(r *Result) []float64 {
	end, err := r.Quantile(0.999)
	if err != nil || math.IsInf(end, 1) || !(end > 0) {
		end = 20 / r.Q
	}
	step := niceStep(end / 20)
	grid := make([]float64, 0, 21)
	for i := 0; i <= 20; i++ {
		grid = append(grid, float64(i)*step)
	}
	return grid
}

func niceStep(x float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= x {
			return m * p
		}
	}
	return 10 * p
}

// byLaplace solves the passage by Laplace-transform inversion where
// ChooseEngine says so (or the options force it): the target's actions
// lead to a sink, its states are made absorbing, and the passage time is
// the time the chain first holds its mass there. It reports whether it
// solved.
func (a *Analysis) byLaplace(ctx context.Context, q Query, opt AnalyzeOptions) (bool, error) {
	c, pr := a.Chain, a.Problem
	mask := pr.TargetStates
	if mask == nil {
		mask = make([]bool, c.N)
	}
	horizon := 0.0
	for _, t := range q.Times {
		horizon = math.Max(horizon, t)
	}
	uh := horizon // uniformization runs to the horizon, or to the tail without one
	if len(q.Quantiles) > 0 || len(q.Times) == 0 {
		uh = 0
	}
	choice, err := ChooseEngine(ctx, EngineQuery{Chain: c, Alpha: pr.Alpha, Sets: [][]bool{mask}, Target: laplace.Target{Actions: pr.TargetActions, States: pr.TargetStates},
		Beta: horizon, Horizon: uh, Epsilon: opt.Epsilon, Rate: UniformizationRate(c, []Problem{pr}), Force: opt.Transient})
	if err != nil {
		return false, err
	}
	a.Engine, a.EngineWhy = choice.Engine, choice.Why
	if choice.Engine != EngineLaplace {
		return false, nil
	}
	eng := choice.Laplace
	d := &LaplaceDistribution{Engine: eng, Set: 0}
	a.Distribution = d
	times := q.Times
	if len(times) == 0 {
		times = laplaceGrid(d)
	}
	for _, t := range times {
		v, err := d.CDF(t)
		if err != nil {
			return false, err
		}
		pt := Point{T: t, CDF: v, PDF: math.NaN()}
		if q.PDF {
			if pt.PDF, err = eng.PDF(0, t); err != nil {
				return false, err
			}
		}
		a.Points = append(a.Points, pt)
	}
	for _, p := range q.Quantiles {
		t, err := d.Quantile(p)
		if err != nil {
			return false, err
		}
		a.Quantiles = append(a.Quantiles, QuantilePoint{P: p, T: t})
	}
	how := "no mean: not asked"
	a.Mean, a.MeanFrom = math.NaN(), "not asked"
	if !q.NoMean {
		a.Mean, a.MeanFrom = d.Mean(), "laplace"
		how = "the expected time in each state, by the ordered pass at z = 0"
		if math.IsInf(a.Mean, 1) {
			a.MeanFrom, how = "may never end", "infinite: the passage may never end"
		}
	}
	at := horizon
	if at == 0 && len(times) > 0 {
		at = times[len(times)/2]
	}
	if at > 0 {
		if _, err := eng.Check(at); err != nil {
			return false, err
		}
	}
	if opt.Stage != nil {
		opt.Stage("Laplace inversion", fmt.Sprintf("%d solves; mean: %s", eng.Solves(), how))
	}
	return true, nil
}

// laplaceGrid is DefaultGrid for a Laplace distribution: 0 to its 0.999
// quantile (or 20 times its mean) in 20 steps of a readable size.
func laplaceGrid(d *LaplaceDistribution) []float64 {
	end, err := d.Quantile(0.999)
	if err != nil || math.IsInf(end, 1) || !(end > 0) {
		end = 20 * d.Mean()
	}
	if !(end > 0) || math.IsInf(end, 1) {
		end = 1
	}
	step := niceStep(end / 20)
	grid := make([]float64, 0, 21)
	for i := 0; i <= 20; i++ {
		grid = append(grid, float64(i)*step)
	}
	return grid
}
