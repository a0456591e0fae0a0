package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"time"

	"pepa/ctmc"
	"pepa/ctmc/shard"
	"pepa/ctmc/simulate"
	"pepa/models"
)

// simFlags are the stopping and confidence flags of a simulation, shared
// by simulate and robustness --simulate.
type simFlags struct {
	seed         uint64
	confidence   float64
	precision    float64
	replications int
	budget       time.Duration
	workers      int
}

func (f *simFlags) register(fs *flag.FlagSet, prefix string) {
	fs.Uint64Var(&f.seed, "seed", 1, prefix+"seed of the random streams (one per replication): same seed and replications, same output")
	fs.Float64Var(&f.confidence, "confidence", 0.95, prefix+"level of every confidence interval")
	fs.Float64Var(&f.precision, "precision", 0, prefix+"stop once every interval's half-width is at most `H` (probabilities: absolute; throughputs: relative to the largest; means: relative)")
	fs.IntVar(&f.replications, "replications", 0, prefix+"stop after `N` replications (steady state: N independent streams, default 16); default 10000 when no --precision or --budget is given")
	fs.DurationVar(&f.budget, "budget", 0, prefix+"stop after this much wall-clock time (e.g. 30s), counted from the start: the run ends within it; the output says how many replications were run")
	fs.IntVar(&f.workers, "workers", 0, prefix+"goroutines to run replications on (default: every core); never changes the output")
}

// options turns the flags into simulate.Options (10,000 replications when
// nothing else says when to stop a run of replications).
func (f *simFlags) options(steady bool) simulate.Options {
	opt := simulate.Options{Seed: f.seed, Confidence: f.confidence, Precision: f.precision,
		Replications: f.replications, Budget: f.budget, Workers: f.workers}
	if !steady && opt.Replications == 0 && opt.Precision == 0 && opt.Budget == 0 {
		opt.Replications = 10000
	}
	return opt
}

// simulationProgress shows a simulation's progress on a terminal.
func simulationProgress(e *env, name string, p simulate.Progress) {
	fmt.Fprintf(e.stderr, "\rsimulating %s: %d replications, %.3g events/s, half-width %.3g   ", displayName(name),
		p.Replications, float64(p.Events)/p.Elapsed.Seconds(), p.HalfWidth)
}

// reportSpeed prints the run's speed on stderr (not in the output, which
// must not depend on the machine).
func reportSpeed(e *env, name string, st simulate.Stats) {
	if e.stderrTerminal {
		fmt.Fprint(e.stderr, "\r\033[K")
	}
	fmt.Fprintf(e.stderr, "%s: simulated %d events in %.3g s (%.3g events/s on %d workers; stopped by %s)\n",
		displayName(name), st.Events, st.Elapsed.Seconds(), st.EventsPerSecond, st.Workers, st.Stopped)
}

// simulateCmd is 'pepa simulate': one of three estimates (robustness
// figures, a passage, the steady state), the whole run or a shard of it.
type simulateCmd struct {
	analysisBase
	sf         simFlags
	fs         *flag.FlagSet // for a shard's canonical command
	beta       float64
	machines   []string
	cycling    bool
	budgetFrom time.Time // when --budget started counting (the process start), zero in a sweep
	target     string    // --target-action
	pred       string    // --target
	grid       []float64
	quantiles  []float64
	steady     simulate.SteadySpec
	maxEvents  int64
	shard      shard.Index
	power      models.PowerFlags
	budget     float64 // --energy-budget
}

// simOutcome is what a simulation gave: one estimate, or a shard's record
// of its range.
type simOutcome struct {
	info       simInfo
	what       string // the passage, in words
	robustness *simulate.RobustnessResult
	passage    *simulate.PassageResult
	steady     *simulate.SteadyResult
	energy     *models.EnergyResult // with the machines' power (--beta)
	shard      *simShard
	header     shard.Header
}

func runSimulate(ctx context.Context, e *env, args []string) int {
	a, ctx, code := parseSimulate(ctx, e, args)
	if code >= 0 {
		return code
	}
	// The budget is the whole process's: what loading and compiling took
	// is not the simulation's to spend (a sweep's points each have theirs).
	a.budgetFrom = e.start
	return runAnalysis(ctx, e, a)
}

func parseSimulate(ctx context.Context, e *env, args []string) (*simulateCmd, context.Context, int) {
	fs := newFlags(e, "simulate", "simulate [flags] FILE",
		`  pepa simulate --beta 30 --replications 20000 testdata/cluster/paired.pepa
        each machine's P(F <= 30), mean and q99, and the mapping's robustness, with 95% intervals
  pepa simulate --target-action compute3 --times 0:40:10 --precision 0.01 testdata/cluster/uneven.pepa
        the passage-time CDF, run until every point's interval is within 0.01
  pepa simulate --max-batches 10 --format csv testdata/pc-lan.pepa
        steady-state throughputs and populations by batch means (16 streams x 10 batches)
  pepa simulate --beta 30 --replications 20000 --shard 1/4 -o paired-1.shard testdata/cluster/paired.pepa
        the first quarter of the first example's replications, as a shard file for 'pepa merge'

Without --beta, --target-action or --target: steady state. The output depends
only on the model, the flags and --seed, never on the number of cores; the
speed (events/s) is reported on stderr. With --shard K/N the run is split
into N shards of its replications (steady state: of its streams), each
run on its own (one per Slurm array task or make target); 'pepa merge'
prints from the N shard files exactly what the whole run prints.
`)
	a := &simulateCmd{analysisBase: analysisBase{verb: "simulate"}, fs: fs}
	a.o.register(fs)
	a.sf.register(fs, "")
	target := fs.String("target-action", "", "comma-separated target actions: the passage ends when one first fires")
	pred := fs.String("target", "", "state predicate: the passage ends on entering a state where it holds")
	times := fs.String("times", "", "time grid `START:STOP:STEP`")
	at := fs.String("at", "", "comma-separated times `t1,t2,...`")
	quant := fs.String("quantile", "", "comma-separated probabilities `p1,p2` whose quantiles to estimate")
	fs.Float64Var(&a.beta, "beta", 0, "makespan goal in `SECONDS`: estimate the mapping's robustness figures (initial semantics)")
	machines := fs.String("machines", "", "with --beta: comma-separated machine components (default: detected)")
	fs.BoolVar(&a.cycling, "cycling", false, "with --beta: finished machines keep cycling and keep using what they share (the reading before 2026-11-25)")
	fs.Float64Var(&a.steady.Warmup, "warmup", 0, "steady state: simulated `TIME` each stream runs before measuring (default: one batch discarded, then the leading batches the MSER rule detects)")
	fs.Int64Var(&a.steady.BatchEvents, "batch-events", 20000, "steady state: jumps per batch")
	fs.IntVar(&a.steady.MaxBatches, "max-batches", 50, "steady state: most batches per stream")
	fs.Int64Var(&a.maxEvents, "max-events", 1e9, "most jumps of one replication (it is reported as censored)")
	fs.StringVar(&a.power.Busy, "busy-power", "", "with --beta: each machine's power in watts while it computes, a `LIST` in the machines' order or M1=250,... (overrides //pepa:power): adds the energy figures")
	fs.StringVar(&a.power.Idle, "idle-power", "", "with --beta: each machine's power in watts once finished, until the makespan (`LIST`, default 0)")
	fs.Float64Var(&a.budget, "energy-budget", 0, "with --beta and the machines' power: energy budget in `JOULES`, adds P(E <= B) and P(makespan <= beta and E <= B)")
	shardArg := fs.String("shard", "", shardUsage)
	files, code := parseFlags(e, fs, args)
	if code >= 0 {
		return nil, ctx, code
	}
	a.files, a.target, a.pred = files, *target, *pred
	if ctx, code = a.o.validate(ctx, e, "simulate"); code >= 0 {
		return nil, ctx, code
	}
	c := &checker{e: e, verb: "simulate"}
	c.sim(&a.sf)
	c.require(len(files) == 1, "need exactly one model file")
	c.require(a.target == "" || a.pred == "", "give at most one of --target-action and --target")
	c.require(a.beta == 0 || (a.target == "" && a.pred == ""), "--beta (robustness) and a passage target are separate runs")
	c.positiveSeconds("--beta", a.beta, false)
	c.require(a.beta > 0 || (!a.power.Given() && a.budget == 0), "--busy-power, --idle-power and --energy-budget are about a mapping's run: give --beta")
	c.require(a.budget >= 0 && !math.IsInf(a.budget, 0), "--energy-budget must be a finite number of joules >= 0")
	c.require(!a.cycling || (!a.power.Given() && a.budget == 0), "the energy figures are defined with finished machines stopped (not --cycling)")
	c.require(*shardArg == "" || (!a.power.Given() && a.budget == 0), "the energy figures are not kept in shards: run them whole (without --shard)")
	c.require(a.steady.BatchEvents > 0 && a.steady.MaxBatches > 0 && a.maxEvents > 0 && a.steady.Warmup >= 0,
		"--batch-events, --max-batches and --max-events must be positive, --warmup not negative")
	if *shardArg != "" && !c.failed() {
		var err error
		a.shard, err = shard.Parse(*shardArg)
		c.require(err == nil, "%v", err)
		c.require(a.sf.precision == 0 && a.sf.budget == 0, "--shard splits a fixed number of replications: --precision and --budget look at the whole run (give --replications)")
	}
	a.grid = c.grid(*times, *at)
	a.quantiles = c.probabilities("--quantile", *quant)
	a.machines = splitList(*machines)
	if c.failed() {
		return nil, ctx, c.code
	}
	return a, ctx, -1
}

// kind is the estimate asked for.
func (a *simulateCmd) kind() string {
	switch {
	case a.beta > 0:
		return "robustness"
	case a.target != "" || a.pred != "":
		return "passage"
	}
	return "steady"
}

func (a *simulateCmd) solve(ctx context.Context, e *env, in []models.Input, _ deriver) (any, error) {
	m := in[0]
	req := models.SimulationRequest{Compile: ctmc.Options{Aggregate: a.o.aggregate, MaxStates: a.o.maxStates},
		Options: a.sf.options(a.kind() == "steady"), Beta: a.beta, Machines: a.machines, Cycling: a.cycling,
		Power: a.power, EnergyBudget: a.budget, Target: a.pred, TargetActions: splitList(a.target),
		Times: a.grid, Quantiles: a.quantiles, Steady: a.steady, Shard: a.shard}
	if req.Options.Budget > 0 && !a.budgetFrom.IsZero() {
		// The replications stop at 95% of what is left: the figures
		// select quantiles over every run's sample (about 2-5% of the
		// time spent simulating, measured on the 32/8 model) and are
		// written within the rest. A small floor still runs a first part.
		req.Options.Budget = max(time.Millisecond, (req.Options.Budget-time.Since(a.budgetFrom))*95/100)
	}
	req.Options.MaxEvents = a.maxEvents
	if e.stderrTerminal {
		req.Options.Progress = func(p simulate.Progress) { simulationProgress(e, m.Name, p) }
		defer fmt.Fprint(e.stderr, "\r\033[K")
	}
	rep, err := models.Simulate(ctx, m, req)
	var te *models.TargetActionsError
	switch {
	case errors.As(err, &te):
		return nil, fmt.Errorf("--target-action: %w", te.Err)
	case errors.Is(err, models.ErrNoPower):
		return nil, fmt.Errorf("%w (give --busy-power, or //pepa:power lines in the model)", err)
	case err != nil:
		return nil, err
	}
	out := &simOutcome{info: simInfo{Model: m.Name, Seed: a.sf.seed, Confidence: a.sf.confidence}, what: rep.What,
		robustness: rep.Robustness, passage: rep.Passage, steady: rep.Steady, energy: rep.Energy}
	if a.shard.N > 0 {
		out.shard = &simShard{Model: m.Name, Seed: a.sf.seed, Confidence: a.sf.confidence, What: rep.What,
			Robustness: rep.RobustnessRecord, Passage: rep.PassageRecord, Steady: rep.SteadyRecord}
		out.header = shard.Header{Verb: "simulate", Command: shardCommand(a.fs, map[string]bool{"shard": true, "o": true, "format": true, "workers": true, "verbose": true}, a.files),
			Models: []shard.Model{shard.Hash(a.files[0], a.sources[0])}, Shard: a.shard.K, Shards: a.shard.N, Units: rep.Units, Total: rep.Total, First: rep.First, Count: rep.Count,
			Render: map[string]string{"format": a.o.format}}
	} else {
		out.info.set(rep.Stats)
	}
	return out, nil
}
