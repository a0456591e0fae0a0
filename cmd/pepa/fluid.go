package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"pepa/ctmc/fluid"
	"pepa/ctmc/fluid/fluidcheck"
	"pepa/models"
)

// fluidCmd is 'pepa fluid': a fluid.Query on one model.
type fluidCmd struct {
	analysisBase
	query      fluid.Query
	opt        fluid.Options
	check      bool
	plotPath   string
	plotFormat string
	pdf        bool
}

func runFluid(ctx context.Context, e *env, args []string) int {
	a, ctx, code := parseFluid(ctx, e, args)
	if code >= 0 {
		return code
	}
	return runAnalysis(ctx, e, a)
}

func parseFluid(ctx context.Context, e *env, args []string) (*fluidCmd, context.Context, int) {
	fs := newFlags(e, "fluid", "fluid [flags] FILE",
		`  pepa fluid testdata/fluid/clients.pepa
        mean populations and throughputs over time, to where the trajectory settles
  pepa fluid --steady testdata/fluid/clients.pepa
        the fluid steady state (the fixed point, with its residual) and its throughputs
  pepa fluid --times 0:20:2 --check testdata/fluid/scaling.pepa
        the time series, and its distance to the exact chain's means
  pepa fluid --steady --check --moments 2 testdata/fluid/scaling.pepa
        steady means and standard deviations (linear-noise closure), against the chain's
  pepa fluid --tag Client --target-action response --times 0:10:0.5 testdata/fluid/clients.pepa
        one tagged Client's passage from the start to its first response: CDF and mean
  pepa fluid --tag Client --source-action request --target-action response --at 1,2,5 testdata/fluid/clients.pepa
        the plug-in's semantics: from request to response, populations at their steady state
  pepa fluid --steady --times 0:60:1 --format json -o clients.json --plot clients.png testdata/fluid/clients.pepa
        the steady state and the time series as JSON, and the series drawn

Every figure is the fluid approximation (semantics.md section 8): the limit
of the chain's means as every population grows, exact for none of them.
`)
	a := &fluidCmd{analysisBase: analysisBase{verb: "fluid"}, opt: fluid.DefaultOptions}
	a.o.register(fs)
	times := fs.String("times", "", "time grid `START:STOP:STEP` of the series (and of the passage)")
	at := fs.String("at", "", "comma-separated times `t1,t2,...`")
	fs.BoolVar(&a.query.Steady, "steady", false, "compute the fluid steady state (the fixed point the trajectory reaches, with its residual); alone, no time series is printed")
	passageOn := fs.Bool("passage", false, "a tagged copy's passage time (needs --target-action or --target; implied by them)")
	source := fs.String("source-action", "", "comma-separated source actions: the plug-in's semantics (start where they lead, populations at their steady state)")
	target := fs.String("target-action", "", "comma-separated target actions: the passage ends at the tagged copy's first firing of one")
	pred := fs.String("target", "", "state predicate on the tagged component's local state: the passage ends on entering a state where it holds")
	tag := fs.String("tag", "", "the component whose copy is followed (default: the one that performs the target actions, or that --target names)")
	fs.BoolVar(&a.pdf, "pdf", false, "also print the passage-time density")
	wantMean := fs.Bool("mean", true, "compute the mean passage time")
	fs.IntVar(&a.query.Moments, "moments", 1, "1: means; 2: also standard deviations, by the linear-noise closure (exact where rates are linear in the populations)")
	fs.BoolVar(&a.check, "check", false, "measure the distance to the exact chain (count vectors, where it fits --max-states) or to simulation's intervals")
	fs.StringVar(&a.opt.Method, "method", fluid.MethodAuto, "integrator: auto (Dormand-Prince 5(4), switching to RODAS4 when the problem is stiff; RODAS4 for the steady state), rodas4 or dopri5")
	fs.Float64Var(&a.opt.RelTol, "rtol", fluid.DefaultOptions.RelTol, "relative tolerance of every integration step")
	fs.Float64Var(&a.opt.AbsTol, "atol", fluid.DefaultOptions.AbsTol, "absolute tolerance of every integration step, per copy of the population")
	fs.Float64Var(&a.opt.SteadyTol, "steady-tolerance", fluid.DefaultOptions.SteadyTol, "largest residual of the steady state: max |dx/dt| over the largest throughput")
	fs.Float64Var(&a.opt.MaxTime, "max-time", 0, "look for the steady state up to this time (0: 2^40 times the slowest activity's mean duration)")
	fs.StringVar(&a.plotPath, "plot", "", "draw the populations, throughputs and passage CDF to `FILE`: .png, .svg or .pdf, by the extension")
	files, code := parseFlags(e, fs, args)
	if code >= 0 {
		return nil, ctx, code
	}
	a.files = files
	if ctx, code = a.o.validate(ctx, e, "fluid"); code >= 0 {
		return nil, ctx, code
	}
	c := &checker{e: e, verb: "fluid"}
	c.require(len(files) == 1, "need exactly one model file")
	grid := c.grid(*times, *at)
	c.require(a.query.Moments == 1 || a.query.Moments == 2, "--moments must be 1 or 2")
	c.oneOf("--method", a.opt.Method, fluid.MethodAuto, fluid.MethodRodas4, fluid.MethodDopri5)
	c.require(a.opt.RelTol > 1e-14 && a.opt.RelTol < 1, "--rtol must be in (1e-14, 1)")
	c.require(a.opt.AbsTol > 0 && a.opt.SteadyTol > 0 && a.opt.MaxTime >= 0, "--atol and --steady-tolerance must be positive, --max-time not negative")
	asked := *target != "" || *pred != "" || *source != ""
	c.require(!*passageOn || asked, "--passage needs --target-action or --target")
	c.require(*target == "" || *pred == "", "give one of --target-action and --target")
	c.require(*source == "" || *target != "", "--source-action (the plug-in's semantics) needs --target-action")
	c.require(*tag == "" || asked, "--tag names the component of a passage: give --target-action or --target")
	c.require(!a.pdf || asked, "--pdf is about a passage: give --target-action or --target")
	a.plotFormat = c.plot(a.plotPath)
	c.require(a.plotPath == "" || !a.query.Steady || len(grid) > 0 || asked, "--plot draws a time series or a passage: with --steady, give --times too")
	if c.failed() {
		return nil, ctx, c.code
	}
	if len(grid) > 0 {
		a.query.Times = grid
	}
	if asked {
		a.query.Passage = &fluid.PassageQuery{Tag: *tag, SourceActions: splitList(*source), TargetActions: splitList(*target), Target: *pred, NoMean: !*wantMean}
	}
	if a.check {
		limit := a.o.maxStates
		if a.o.memory.defaulted {
			limit = min(limit, 2_000_000) // an exact check is worth a few seconds, not the machine
		}
		a.query.Check = fluidcheck.Checker{MaxStates: limit, SimBudget: 30 * time.Second, Seed: 1}
	}
	return a, ctx, -1
}

func (a *fluidCmd) solve(ctx context.Context, e *env, in []models.Input, _ deriver) (any, error) {
	res, err := fluid.Analyze(ctx, in[0].Model, a.query, a.opt)
	if err != nil {
		if errors.Is(err, fluid.ErrAmbiguousTag) {
			return nil, fmt.Errorf("%w (--tag)", err)
		}
		return nil, err
	}
	detail := res.Model.Summary()
	a.timer().mark("fluid", detail)
	return res, nil
}
