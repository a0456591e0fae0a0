package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"pepa/ctmc"
	"pepa/ctmc/simulate"
	"pepa/internal/membudget"
	"pepa/models"
	"pepa/models/shard"
	"pepa/passage"
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
	fs.DurationVar(&f.budget, "budget", 0, prefix+"stop after this much wall-clock time (e.g. 30s); the output says how many replications were run")
	fs.IntVar(&f.workers, "workers", 0, prefix+"goroutines to run replications on (default: every core); never changes the output")
}

func (f *simFlags) validate(e *env, verb string) int {
	switch {
	case !(f.confidence > 0 && f.confidence < 1):
		return usageError(e, verb, "--confidence must be in (0, 1)")
	case f.precision < 0 || math.IsNaN(f.precision):
		return usageError(e, verb, "--precision must not be negative")
	case f.replications < 0:
		return usageError(e, verb, "--replications must not be negative")
	case f.budget < 0:
		return usageError(e, verb, "--budget must not be negative")
	case f.workers < 0:
		return usageError(e, verb, "--workers must not be negative")
	}
	return -1
}

// options turns the flags into simulate.Options, with progress on a
// terminal.
func (f *simFlags) options(e *env, name string, steady bool) simulate.Options {
	opt := simulate.Options{Seed: f.seed, Confidence: f.confidence, Precision: f.precision,
		Replications: f.replications, Budget: f.budget, Workers: f.workers}
	if !steady && opt.Replications == 0 && opt.Precision == 0 && opt.Budget == 0 {
		opt.Replications = 10000
	}
	if e.stderrTerminal {
		opt.Progress = func(p simulate.Progress) {
			fmt.Fprintf(e.stderr, "\rsimulating %s: %d replications, %.3g events/s, half-width %.3g   ", displayName(name),
				p.Replications, float64(p.Events)/p.Elapsed.Seconds(), p.HalfWidth)
		}
	}
	return opt
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

func runSimulate(ctx context.Context, e *env, args []string) int {
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
	var o outputFlags
	o.register(fs)
	var sf simFlags
	sf.register(fs, "")
	target := fs.String("target-action", "", "comma-separated target actions: the passage ends when one first fires")
	pred := fs.String("target", "", "state predicate: the passage ends on entering a state where it holds")
	times := fs.String("times", "", "time grid `START:STOP:STEP`")
	at := fs.String("at", "", "comma-separated times `t1,t2,...`")
	quant := fs.String("quantile", "", "comma-separated probabilities `p1,p2` whose quantiles to estimate")
	beta := fs.Float64("beta", 0, "makespan goal in `SECONDS`: estimate the mapping's robustness figures (initial semantics)")
	machines := fs.String("machines", "", "with --beta: comma-separated machine components (default: detected)")
	cycling := fs.Bool("cycling", false, "with --beta: finished machines keep cycling and keep using what they share (the reading before 2026-11-25)")
	warmup := fs.Float64("warmup", 0, "steady state: simulated `TIME` each stream runs before measuring (default: one batch discarded, then the leading batches the MSER rule detects)")
	batch := fs.Int64("batch-events", 20000, "steady state: jumps per batch")
	maxBatches := fs.Int("max-batches", 50, "steady state: most batches per stream")
	maxEvents := fs.Int64("max-events", 1e9, "most jumps of one replication (it is reported as censored)")
	shardArg := fs.String("shard", "", shardUsage)
	files, code := parseFlags(e, fs, args)
	if code >= 0 {
		return code
	}
	ctx, code = o.validate(ctx, e, "simulate")
	if code >= 0 {
		return code
	}
	if code := sf.validate(e, "simulate"); code >= 0 {
		return code
	}
	if len(files) != 1 {
		return usageError(e, "simulate", "need exactly one model file")
	}
	if *target != "" && *pred != "" {
		return usageError(e, "simulate", "give at most one of --target-action and --target")
	}
	if *beta != 0 && (*target != "" || *pred != "") {
		return usageError(e, "simulate", "--beta (robustness) and a passage target are separate runs")
	}
	if *beta < 0 || math.IsNaN(*beta) || math.IsInf(*beta, 0) {
		return usageError(e, "simulate", "--beta must be a positive number of seconds")
	}
	if *batch <= 0 || *maxBatches <= 0 || *maxEvents <= 0 || *warmup < 0 {
		return usageError(e, "simulate", "--batch-events, --max-batches and --max-events must be positive, --warmup not negative")
	}
	var ix shard.Index
	if *shardArg != "" {
		var err error
		if ix, err = shard.Parse(*shardArg); err != nil {
			return usageError(e, "simulate", "%v", err)
		}
		if sf.precision != 0 || sf.budget != 0 {
			return usageError(e, "simulate", "--shard splits a fixed number of replications: --precision and --budget look at the whole run (give --replications)")
		}
	}
	grid, err := parseGrid(*times, *at)
	if err != nil {
		return usageError(e, "simulate", "%v", err)
	}
	quantiles, err := parseFloats(*quant)
	if err != nil {
		return usageError(e, "simulate", "--quantile: %v", err)
	}
	for _, p := range quantiles {
		if !(p > 0 && p < 1) {
			return usageError(e, "simulate", "--quantile: %g is not a probability in (0, 1)", p)
		}
	}
	name := files[0]
	m, src, code := loadModelSource(e, "simulate", name)
	if code >= 0 {
		return code
	}
	s, code := compileModel(e, name, m, &o)
	if code >= 0 {
		return code
	}
	fail := func(err error) int {
		if e.stderrTerminal {
			fmt.Fprint(e.stderr, "\r\033[K")
		}
		if ctx.Err() != nil {
			fmt.Fprintf(e.stderr, "pepa simulate: interrupted\n")
			return exitInterrupted
		}
		fmt.Fprintf(e.stderr, "%s: error: %v\n", displayName(name), err)
		return exitInvalid
	}
	pragmas, err := models.ReadPragmas(m.File)
	if err != nil {
		fmt.Fprintln(e.stderr, err)
		return exitInvalid
	}
	opt := sf.options(e, name, *beta == 0 && *target == "" && *pred == "")
	opt.MaxEvents = *maxEvents
	if opt.Initial, err = simulate.InitialFromNames(s, pragmas.Initial); err != nil {
		return fail(err)
	}
	sim := simInfo{Model: displayName(name), Seed: sf.seed, Confidence: sf.confidence}
	// A shard runs its range of the replications (streams) and writes
	// their record instead of the figures.
	data := simShard{Model: sim.Model, Seed: sim.Seed, Confidence: sim.Confidence}
	total, units := opt.Replications, "replications"
	first, count := 0, total
	if ix.N > 0 {
		first, count = ix.Range(total)
	}
	var write func(w io.Writer) error
	switch {
	case *beta > 0:
		spec, _, err := robustnessSpec(s, *beta, splitList(*machines), *cycling)
		if err != nil {
			return fail(err)
		}
		if ix.N > 0 {
			if data.Robustness, err = simulate.RobustnessRange(ctx, s, spec, opt, first, count); err != nil {
				return fail(err)
			}
			break
		}
		r, err := simulate.Robustness(ctx, s, spec, opt)
		if err != nil {
			return fail(err)
		}
		reportSpeed(e, name, r.Stats)
		sim.set(r.Stats)
		write = func(w io.Writer) error { return writeSimRobustness(w, o.format, sim, r) }
	case *target != "" || *pred != "":
		spec := simulate.PassageSpec{Times: grid, Quantiles: quantiles}
		if *pred != "" {
			if spec.Target, err = ctmc.ParsePredicate(s, *pred); err != nil {
				return fail(err)
			}
		} else if spec.TargetActions, err = passage.ActionIDs(s, splitList(*target)); err != nil {
			return fail(fmt.Errorf("--target-action: %w", err))
		}
		what := "the first firing of " + *target
		if *pred != "" {
			what = "entering states where " + *pred
		}
		if ix.N > 0 {
			data.What = what
			if data.Passage, err = simulate.PassageRange(ctx, s, spec, opt, first, count); err != nil {
				return fail(err)
			}
			break
		}
		r, err := simulate.Passage(ctx, s, spec, opt)
		if err != nil {
			return fail(err)
		}
		reportSpeed(e, name, r.Stats)
		sim.set(r.Stats)
		write = func(w io.Writer) error { return writeSimPassage(w, o.format, sim, what, r) }
	default:
		steady := simulate.SteadySpec{Warmup: *warmup, BatchEvents: *batch, MaxBatches: *maxBatches}
		if ix.N > 0 {
			total, units = sf.replications, "streams"
			if total == 0 {
				total = simulate.DefaultStreams
			}
			first, count = ix.Range(total)
			if data.Steady, err = simulate.SteadyRange(ctx, s, steady, opt, first, count); err != nil {
				return fail(err)
			}
			break
		}
		r, err := simulate.Steady(ctx, s, steady, opt)
		if err != nil {
			return fail(err)
		}
		reportSpeed(e, name, r.Stats)
		sim.set(r.Stats)
		write = func(w io.Writer) error { return writeSimSteady(w, o.format, sim, r) }
	}
	if ix.N > 0 {
		h := shard.Header{Verb: "simulate", Command: shardCommand(fs, map[string]bool{"shard": true, "o": true, "format": true, "workers": true, "verbose": true}, files),
			Models: []shard.Model{shard.Hash(name, src)}, Shard: ix.K, Shards: ix.N, Units: units, Total: total, First: first, Count: count,
			Render: map[string]string{"format": o.format}}
		return writeShard(e, "simulate", o.out, h, data)
	}
	if err := writeOutput(e, o.out, write); err != nil {
		fmt.Fprintf(e.stderr, "pepa simulate: %v\n", err)
		return exitInvalid
	}
	return exitOK
}

// robustnessSpec finds the machines (as robustness does) and their
// cycle-closing actions.
func robustnessSpec(s *ctmc.Structure, beta float64, named []string, cycling bool) (simulate.RobustnessSpec, []*models.Machine, error) {
	ms, err := models.FindMachines(s, named)
	if err != nil {
		return simulate.RobustnessSpec{}, nil, err
	}
	spec := simulate.RobustnessSpec{Beta: beta}
	for _, m := range ms {
		spec.Machines = append(spec.Machines, simulate.MachineSpec{Name: m.Name, Last: m.Last})
	}
	if !cycling {
		// Every machine stops once finished, the analysed ones or not.
		all, err := models.FindMachines(s, nil)
		if err != nil {
			all = ms
		}
		for _, m := range append(all, ms...) {
			spec.Stop = append(spec.Stop, simulate.MachineSpec{Name: m.Name, Last: m.Last})
		}
	}
	return spec, ms, nil
}

// simInfo is what the output says about the run: only what does not
// depend on the machine (no timings, no worker count).
type simInfo struct {
	Model        string  `json:"model"`
	Seed         uint64  `json:"seed"`
	Confidence   float64 `json:"confidence"`
	Replications int     `json:"replications"`
	Events       int64   `json:"events"`
	Stopped      string  `json:"stopped_by"`
}

func (s *simInfo) set(st simulate.Stats) {
	s.Replications, s.Events, s.Stopped = st.Replications, st.Events, st.Stopped
}

func (s simInfo) header(w io.Writer) {
	fmt.Fprintf(w, "model:      %s\n", s.Model)
	fmt.Fprintf(w, "simulated:  %d replications, %d events, seed %d, stopped by %s; intervals at %g%% confidence\n",
		s.Replications, s.Events, s.Seed, s.Stopped, 100*s.Confidence)
}

// ciJSON is an interval as JSON: [lo, hi], null ends where unknown.
func ciJSON(iv simulate.Interval) []any { return []any{jsonFloat(iv.Lo), jsonFloat(iv.Hi)} }

// ciText prints an estimate with its interval.
func ciText(iv simulate.Interval, f string) string {
	if math.IsNaN(iv.Value) {
		return "-"
	}
	return fmt.Sprintf(f+" ["+f+", "+f+"]", iv.Value, iv.Lo, iv.Hi)
}

func ciCSV(iv simulate.Interval) string {
	return csvFloat(iv.Value) + "," + csvFloat(iv.Lo) + "," + csvFloat(iv.Hi)
}

func writeSimRobustness(w io.Writer, format string, sim simInfo, r *simulate.RobustnessResult) error {
	switch format {
	case "json":
		var ms []map[string]any
		for _, m := range r.Machines {
			ms = append(ms, map[string]any{"name": m.Name,
				"p_by_beta": jsonFloat(m.PByBeta.Value), "p_by_beta_ci": ciJSON(m.PByBeta),
				"mean": jsonFloat(m.Mean.Value), "mean_ci": ciJSON(m.Mean),
				"q99": jsonFloat(m.Quantile.Value), "q99_ci": ciJSON(m.Quantile)})
		}
		return writeJSON(w, map[string]any{"model": sim.Model, "beta": r.Beta, "semantics": "initial", "simulation": sim,
			"machines": ms, "robustness": jsonFloat(r.Robustness.Value), "robustness_ci": ciJSON(r.Robustness),
			"p_all_by_beta": jsonFloat(r.PAllByBeta.Value), "p_all_by_beta_ci": ciJSON(r.PAllByBeta),
			"expected_makespan": jsonFloat(r.ExpectedMakespan.Value), "expected_makespan_ci": ciJSON(r.ExpectedMakespan),
			"unfinished": r.Never})
	case "csv":
		fmt.Fprintln(w, "model,machine,p_by_beta,p_lo,p_hi,mean,mean_lo,mean_hi,q99,q99_lo,q99_hi")
		for _, m := range r.Machines {
			fmt.Fprintf(w, "%s,%s,%s,%s,%s\n", csvQuote(sim.Model), csvQuote(m.Name), ciCSV(m.PByBeta), ciCSV(m.Mean), ciCSV(m.Quantile))
		}
		return nil
	}
	sim.header(w)
	fmt.Fprintf(w, "goal:       beta = %g, initial semantics\n\n", r.Beta)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "machine\tP(F <= %g)\tE[F]\tq99\n", r.Beta)
	for _, m := range r.Machines {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", m.Name, ciText(m.PByBeta, "%.4f"), ciText(m.Mean, "%.4f"), ciText(m.Quantile, "%.4f"))
	}
	tw.Flush()
	fmt.Fprintln(w)
	fmt.Fprintf(w, "robustness min_j P(F_j <= %g):   %s  (Bonferroni over %d machines)\n", r.Beta, ciText(r.Robustness, "%.4f"), len(r.Machines))
	fmt.Fprintf(w, "P(max_j F_j <= %g):              %s\n", r.Beta, ciText(r.PAllByBeta, "%.4f"))
	fmt.Fprintf(w, "expected makespan E[max_j F_j]:  %s\n", ciText(r.ExpectedMakespan, "%.4f"))
	if r.Never > 0 {
		fmt.Fprintf(w, "\n%d replications had a machine that never finished (%d stopped at --max-events)\n", r.Never, r.Censored)
	}
	return nil
}

func writeSimPassage(w io.Writer, format string, sim simInfo, what string, r *simulate.PassageResult) error {
	switch format {
	case "json":
		var pts, qs []map[string]any
		for _, p := range r.Points {
			pts = append(pts, map[string]any{"t": p.T, "cdf": p.CDF.Value, "cdf_ci": ciJSON(p.CDF)})
		}
		for _, q := range r.Quantiles {
			qs = append(qs, map[string]any{"p": q.P, "t": jsonFloat(q.T.Value), "t_ci": ciJSON(q.T)})
		}
		return writeJSON(w, map[string]any{"model": sim.Model, "semantics": "initial", "passage": what, "simulation": sim,
			"points": pts, "dkw_band": r.Band, "mean": jsonFloat(r.Mean.Value), "mean_ci": ciJSON(r.Mean),
			"quantiles": qs, "never": r.Never, "censored": r.Censored})
	case "csv":
		fmt.Fprintln(w, "t,cdf,cdf_lo,cdf_hi")
		for _, p := range r.Points {
			fmt.Fprintf(w, "%s,%s\n", fmtFloat(p.T), ciCSV(p.CDF))
		}
		return nil
	}
	sim.header(w)
	fmt.Fprintf(w, "passage:    from the initial state to %s\n", what)
	fmt.Fprintf(w, "mean:       %s\n", ciText(r.Mean, "%.6g"))
	if r.Never+r.Censored > 0 {
		fmt.Fprintf(w, "            %d replications never reached the target, %d stopped at --max-events (both count as not yet)\n", r.Never, r.Censored)
	}
	fmt.Fprintf(w, "band:       the whole CDF is within %.4g of the estimates at once (DKW)\n\n", r.Band)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "t\tcdf [Wilson interval]")
	for _, p := range r.Points {
		fmt.Fprintf(tw, "%g\t%s\n", p.T, ciText(p.CDF, "%.4f"))
	}
	tw.Flush()
	if len(r.Quantiles) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "quantile\tt")
		for _, q := range r.Quantiles {
			fmt.Fprintf(tw, "%g\t%s\n", q.P, ciText(q.T, "%.6g"))
		}
		tw.Flush()
	}
	return nil
}

func writeSimSteady(w io.Writer, format string, sim simInfo, r *simulate.SteadyResult) error {
	switch format {
	case "json":
		var tps, pops []map[string]any
		for _, t := range r.Throughputs {
			tps = append(tps, map[string]any{"action": t.Action, "throughput": t.Value, "ci": ciJSON(t.Interval)})
		}
		for _, p := range r.Populations {
			pops = append(pops, map[string]any{"component": p.Component, "state": p.State, "population": p.Value, "ci": ciJSON(p.Interval)})
		}
		return writeJSON(w, map[string]any{"model": sim.Model, "simulation": sim, "streams": r.Streams, "batches_per_stream": r.Batches,
			"warmup": r.Warmup, "warmup_batches": r.WarmupBatches, "throughput": tps, "utilisation": pops})
	case "csv":
		fmt.Fprintln(w, "measure,component,name,value,lo,hi")
		for _, t := range r.Throughputs {
			fmt.Fprintf(w, "throughput,,%s,%s\n", csvQuote(t.Action), ciCSV(t.Interval))
		}
		for _, p := range r.Populations {
			fmt.Fprintf(w, "utilisation,%s,%s,%s\n", csvQuote(p.Component), csvQuote(p.State), ciCSV(p.Interval))
		}
		return nil
	}
	sim.header(w)
	fmt.Fprintf(w, "method:     batch means, %d streams x %d batches after a warm-up of up to %.4g time units", r.Streams, r.Batches, r.Warmup)
	if r.WarmupBatches > 0 {
		fmt.Fprintf(w, " and %d more batches per stream (detected)", r.WarmupBatches)
	}
	fmt.Fprint(w, "\n\n")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "action\tthroughput")
	for _, t := range r.Throughputs {
		fmt.Fprintf(tw, "%s\t%s\n", t.Action, ciText(t.Interval, "%.6g"))
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "component\tlocal state\tpopulation")
	for _, p := range r.Populations {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", p.Component, p.State, ciText(p.Interval, "%.6g"))
	}
	return tw.Flush()
}

// simulateRobustness estimates a mapping's robustness for robustness
// --simulate, as a models.Result whose figures are the estimates and whose
// Why gives the intervals.
func simulateRobustness(ctx context.Context, e *env, name string, s *ctmc.Structure, mopt models.Options, sf *simFlags, because string) (*models.Result, error) {
	if mopt.Semantics != passage.Initial {
		return nil, fmt.Errorf("--simulate estimates initial semantics only (%s)", because)
	}
	// s is the structure the exact analysis would derive: already stopped
	// where the stop rule applies (models.Stopped).
	spec, machines, err := robustnessSpec(s, mopt.Beta, mopt.Machines, true)
	if err != nil {
		return nil, err
	}
	opt := sf.options(e, name, false)
	if mopt.Pragmas != nil {
		if opt.Initial, err = simulate.InitialFromNames(s, mopt.Pragmas.Initial); err != nil {
			return nil, err
		}
	}
	r, err := simulate.Robustness(ctx, s, spec, opt)
	if err != nil {
		return nil, err
	}
	reportSpeed(e, name, r.Stats)
	res := &models.Result{Beta: mopt.Beta, Semantics: passage.Initial, ProductStates: productSize(s), Solved: "simulated",
		Robustness: r.Robustness.Value, PAllByBeta: r.PAllByBeta.Value, ExpectedMakespan: r.ExpectedMakespan.Value,
		MakespanError: r.ExpectedMakespan.HalfWidth(), Joint: "simulated",
		PAllLo: r.PAllByBeta.Lo, PAllHi: r.PAllByBeta.Hi, MakespanLo: r.ExpectedMakespan.Lo, MakespanHi: r.ExpectedMakespan.Hi,
		Confidence: sf.confidence}
	res.Independent, res.Dependence = models.Independent(s, machines)
	var parts []string
	for j, me := range r.Machines {
		ms := models.MachineResult{Name: me.Name, PByBeta: me.PByBeta.Value, Mean: me.Mean.Value, Quantile: me.Quantile.Value,
			Availability: math.NaN(), Slowdown: math.NaN(),
			PByBetaLo: me.PByBeta.Lo, PByBetaHi: me.PByBeta.Hi, MeanLo: me.Mean.Lo, MeanHi: me.Mean.Hi,
			QuantileLo: me.Quantile.Lo, QuantileHi: me.Quantile.Hi}
		ms.Applications = machines[j].Apps
		ms.FirstActions, ms.LastActions = machines[j].FirstNames(s), machines[j].LastNames(s)
		res.Machines = append(res.Machines, ms)
		parts = append(parts, fmt.Sprintf("%s P(F <= %g) in [%.4f, %.4f]", me.Name, mopt.Beta, me.PByBeta.Lo, me.PByBeta.Hi))
	}
	res.Why = fmt.Sprintf("simulated: %g%% CI robustness [%.4f, %.4f], P(all <= %g) [%.4f, %.4f], E[makespan] [%.4f, %.4f]; %s; %d replications, seed %d, because %s",
		100*sf.confidence, r.Robustness.Lo, r.Robustness.Hi, mopt.Beta, r.PAllByBeta.Lo, r.PAllByBeta.Hi,
		r.ExpectedMakespan.Lo, r.ExpectedMakespan.Hi, strings.Join(parts, ", "), r.Replications, sf.seed, because)
	return res, nil
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

// deriveOrSimulate derives the chain, or with --simulate, when the chain
// does not fit --max-states, returns the simulated result instead.
func deriveOrSimulate(ctx context.Context, e *env, name string, s *ctmc.Structure, o *outputFlags, mopt models.Options, sim bool, sf *simFlags) (*ctmc.Chain, *models.Result, int) {
	if !sim {
		c, code := deriveStructure(ctx, e, "robustness", name, s, o)
		return c, nil, code
	}
	c, err := ctmc.Derive(ctx, s, ctmc.DeriveOptions{MaxStates: o.maxStates})
	if err == nil {
		return c, nil, -1
	}
	if ctx.Err() != nil {
		return nil, nil, exitInterrupted
	}
	if !errors.Is(err, ctmc.ErrTooManyStates) {
		fmt.Fprintf(e.stderr, "%s: error: %v\n", displayName(name), err)
		return nil, nil, exitInvalid
	}
	because := fmt.Sprintf("the chain has more than %d states (--max-states)", o.maxStates)
	if errors.Is(err, membudget.ErrOverBudget) {
		because = "the chain does not fit the memory budget (" + err.Error() + ")"
	}
	r, err := simulateRobustness(ctx, e, name, s, mopt, sf, because)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, exitInterrupted
		}
		fmt.Fprintf(e.stderr, "%s: error: %v\n", displayName(name), err)
		return nil, nil, exitInvalid
	}
	return nil, r, -1
}
