package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"time"

	"pepa/ctmc"
	"pepa/ctmc/simulate"
	"pepa/models"
	"pepa/models/observe"
	"pepa/passage"
)

// robustnessCmd is 'pepa robustness': a models.Request and how to show
// its report.
type robustnessCmd struct {
	analysisBase
	req models.Request
	// With --observed: the record and the time its figures are for.
	observed   []observe.Event
	recordFile string
	now        float64
	plotPath   string
	plotFormat string
	summary    bool
}

func runRobustness(ctx context.Context, e *env, args []string) int {
	a, ctx, code := parseRobustness(ctx, e, args)
	if code >= 0 {
		return code
	}
	return runAnalysis(ctx, e, a)
}

func parseRobustness(ctx context.Context, e *env, args []string) (*robustnessCmd, context.Context, int) {
	fs := newFlags(e, "robustness", "robustness --beta SECONDS [flags] FILE...",
		`  pepa robustness --beta 45 testdata/mapping-a.pepa
        every machine's P(F <= 45), mean and 0.99 quantile; the mapping's robustness
  pepa robustness --beta 45 testdata/mapping-*.pepa --plot ranking.png
        rank several mappings (most robust first) and draw their CDFs
  pepa robustness --beta 45 --semantics plugin --format json testdata/mapping-b.pepa
        the PEPA Eclipse Plug-in's figures, as JSON
  pepa robustness --beta 45 --busy-power 250,180,200,220 --idle-power 60,40,50,50 --energy-budget 30000 testdata/mapping-*.pepa
        add each mapping's expected energy, P(E <= 30 kJ) and P(makespan <= 45 and E <= 30 kJ)
`)
	a := &robustnessCmd{analysisBase: analysisBase{verb: "robustness"}}
	a.o.register(fs)
	beta := fs.Float64("beta", 0, "makespan goal in `SECONDS` (required)")
	sem := fs.String("semantics", "initial", "finishing times from the initial state (initial) or as the PEPA Eclipse Plug-in computes them (plugin)")
	machines := fs.String("machines", "", "comma-separated machine components (default: detected)")
	fs.StringVar(&a.plotPath, "plot", "", "draw the CDFs (and a robustness/makespan scatter) to `FILE`: .png, .svg or .pdf, by the extension")
	tie := fs.Float64("tie", 0.01, "relative difference of expected makespans under which mappings count as equally fast")
	eps := fs.Float64("epsilon", 1e-10, "bound on the truncation error of every probability")
	flat := fs.Bool("flat", false, "solve the whole product chain instead of each group of coupled machines on its own")
	cycling := fs.Bool("cycling", false, "finished machines keep cycling and keep using what they share (the reading before 2026-11-25, to reproduce earlier results)")
	sensitivity := fs.Bool("sensitivity", false, "add per machine the derivative of P(F <= beta) with respect to each rate, and its robustness radius (independent machines, initial semantics)")
	level := fs.Float64("level", 0.9, "with --sensitivity: the probability level of the robustness radius")
	fs.BoolVar(&a.summary, "summary", false, "with --format csv: one row per model (no ranking), for collecting results of separate runs")
	transient := fs.String("transient", "auto", "the transient engine of each group's finishing times: auto (by predicted cost), uniformization, or laplace (Laplace-transform inversion: stiff groups, finished machines stopped); --verbose says which ran and why")
	simulateBig := fs.Bool("simulate", false, "estimate by simulation (with confidence intervals) a group of machines (with --flat: the model) whose chain does not fit --max-states")
	busyPower := fs.String("busy-power", "", "each machine's power in watts while it computes: a `LIST` in the order of the machines (250,180,...) or M1=250,M2=180 (overrides //pepa:power)")
	idlePower := fs.String("idle-power", "", "each machine's power in watts once it has finished, until the makespan: a `LIST` as for --busy-power (default 0)")
	energyBudget := fs.Float64("energy-budget", 0, "energy budget in `JOULES`: adds P(E <= B) and P(makespan <= beta and E <= B) (needs the machines' power)")
	now := fs.Float64("now", -1, "with --observed: the time `T` the figures are for (default: the record's latest event)")
	observedFile := fs.String("observed", "", "condition every figure on a record of completions seen so far: `FILE` is CSV with the header time,machine,action, a row per completion in time order (semantics.md section 6)")
	rankBy := fs.String("rank-by", "robustness", "rank several mappings by robustness, or by joint: P(makespan <= beta and E <= energy budget)")
	var sf simFlags
	sf.register(fs, "with --simulate, and for the energy figures that are simulated: ")
	files, code := parseFlags(e, fs, args)
	if code >= 0 {
		return nil, ctx, code
	}
	a.files = files
	if ctx, code = a.o.validate(ctx, e, "robustness"); code >= 0 {
		return nil, ctx, code
	}
	c := &checker{e: e, verb: "robustness"}
	c.positiveSeconds("--beta", *beta, true)
	c.oneOf("--semantics", *sem, "initial", "plugin")
	c.require(*tie >= 0 && *tie < 1, "--tie must be in [0, 1)")
	c.epsilon(*eps)
	c.require(len(files) > 0, "no model file given")
	c.require(!*cycling || *sem == "initial", "--cycling is about finished machines under --semantics initial")
	c.require(!*sensitivity || (*sem == "initial" && !*flat), "--sensitivity works with --semantics initial on the decomposed path (not --flat)")
	c.require(*level > 0 && *level < 1, "--level must be in (0, 1)")
	c.oneOf("--transient", *transient, "auto", "uniformization", "laplace")
	c.oneOf("--rank-by", *rankBy, "robustness", "joint")
	c.require(*energyBudget >= 0 && !math.IsInf(*energyBudget, 0), "--energy-budget must be a finite number of joules >= 0")
	c.require(*rankBy != "joint" || *energyBudget > 0, "--rank-by joint ranks by P(makespan <= beta and E <= B): give --energy-budget")
	energyAsked := *busyPower != "" || *idlePower != "" || *energyBudget > 0
	c.require(!energyAsked || (*sem == "initial" && !*cycling), "the energy figures are defined under --semantics initial with finished machines stopped (not --cycling)")
	names := c.names("--machines", *machines)
	a.plotFormat = c.plot(a.plotPath)
	c.sim(&sf)
	if c.failed() {
		return nil, ctx, c.code
	}
	a.req = models.Request{Question: models.Question{Beta: *beta, Semantics: passage.Semantics(*sem), Machines: names, Epsilon: *eps, Cycling: *cycling, Transient: *transient},
		Flat: *flat, Sensitivity: *sensitivity, Level: *level, Tie: *tie, Compile: ctmc.Options{Aggregate: a.o.aggregate, MaxStates: a.o.maxStates}}
	if *simulateBig {
		so := sf.options(false)
		a.req.Simulate = &so
		if e.stderrTerminal {
			a.req.SimulationProgress = func(i int, p simulate.Progress) { simulationProgress(e, a.files[i], p) }
		}
	}
	if energyAsked {
		so := sf.options(false)
		if sf.replications == 0 && sf.precision == 0 && sf.budget == 0 {
			so.Replications = 0 // the energy figures' own default
		}
		a.req.Energy = &models.EnergyRequest{Power: models.PowerFlags{Busy: *busyPower, Idle: *idlePower}, Budget: *energyBudget, Simulate: so}
	}
	a.req.RankBy = *rankBy
	if *observedFile != "" {
		c.require(!energyAsked && *sem == "initial" && !*cycling && !*flat && !*sensitivity && !*simulateBig,
			"--observed computes by groups under --semantics initial: not with --cycling, --flat, --sensitivity, --simulate or the energy flags")
		f, err := os.Open(*observedFile)
		if err != nil {
			c.require(false, "--observed: %v", err)
		} else {
			a.observed, err = observe.ReadRecord(*observedFile, f)
			f.Close()
			if err != nil {
				fmt.Fprintf(e.stderr, "%v\n", err)
				return nil, ctx, exitInvalid
			}
		}
		a.recordFile = *observedFile
		a.now = *now
		if a.now < 0 && len(a.observed) > 0 {
			a.now = a.observed[len(a.observed)-1].Time
		}
		c.require(a.now >= 0, "--observed: give --now (the record is empty)")
		if c.failed() {
			return nil, ctx, c.code
		}
	} else {
		c.require(*now < 0, "--now needs --observed (a record of the completions seen)")
		if c.failed() {
			return nil, ctx, c.code
		}
	}
	a.req.Progress = seriesProgress(e, a.o.verbose, a.files)
	return a, ctx, -1
}

// seriesProgress shows how long series of uniformization are going: on a
// terminal, one line rewritten in place; otherwise, with --verbose, a
// line every 10 s (a log); else nothing. Groups report from several
// goroutines.
func seriesProgress(e *env, verbose bool, files []string) func(i int, group []string, why string, step, max int) {
	if !e.stderrTerminal && !verbose {
		return nil
	}
	var mu sync.Mutex
	var last time.Time
	return func(i int, group []string, why string, step, max int) {
		mu.Lock()
		defer mu.Unlock()
		if !e.stderrTerminal && time.Since(last) < 10*time.Second {
			return
		}
		last = time.Now()
		what := "the product chain"
		if group != nil {
			what = "group " + strings.Join(group, ", ")
		}
		msg := fmt.Sprintf("%s: %s: uniformization: step %d", displayName(files[i]), what, step)
		if max > 0 {
			msg += fmt.Sprintf(" of at most %d", max)
		}
		if why != "" && !e.stderrTerminal {
			msg += " (" + why + ")"
		}
		if e.stderrTerminal {
			fmt.Fprintf(e.stderr, "\r%s   ", msg)
		} else {
			fmt.Fprintf(e.stderr, "pepa robustness: %s\n", msg)
		}
	}
}

func (a *robustnessCmd) solve(ctx context.Context, e *env, in []models.Input, derive deriver) (any, error) {
	req := a.req
	req.Derive = derive
	if a.o.verbose {
		req.Stage = func(i int, name, detail string) {
			if i < len(a.timers) {
				a.timers[i].mark(name, detail)
			}
		}
	}
	if e.stderrTerminal && req.Progress != nil {
		defer fmt.Fprint(e.stderr, "\r\033[K")
	}
	if a.recordFile != "" {
		return observe.Robustness(ctx, in, req, a.observed, a.recordFile, a.now)
	}
	return models.Robustness(ctx, in, req)
}
