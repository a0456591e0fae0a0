package main

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"pepa/ctmc"
	"pepa/models"
	"pepa/passage"
)

// passageCmd is 'pepa passage': a passage.Query on one model.
type passageCmd struct {
	analysisBase
	query  passage.Query
	source string // --source-action and --target-action as given
	target string
	eps    float64
	// transient is --transient.
	transient string
}

func runPassage(ctx context.Context, e *env, args []string) int {
	a, ctx, code := parsePassage(ctx, e, args)
	if code >= 0 {
		return code
	}
	return runAnalysis(ctx, e, a)
}

func parsePassage(ctx context.Context, e *env, args []string) (*passageCmd, context.Context, int) {
	fs := newFlags(e, "passage", "passage [flags] FILE",
		`  pepa passage --target-action compute9 --at 45 testdata/mapping-a.pepa
        P(first firing of compute9 <= 45) from the initial state
  pepa passage --source-action compute1 --target-action compute9 --times 0:60:5 testdata/mapping-a.pepa
        the PEPA Eclipse Plug-in's passage from compute1 to compute9, t = 0, 5, ..., 60
  pepa passage --target "PC1 == PC1' && Token1 != Send1" --quantile 0.5,0.99 --pdf testdata/pc-lan.pepa
        passage into states where component PC1 is in local state PC1' and Token1 is not in Send1
  pepa passage --flat --target-action compute9 --at 45 --mean=false testdata/mapping-a.pepa
        the probability alone, on the whole product chain: on a chain of millions of states
        the mean can cost more than the CDF (--verbose shows the stages)

State predicates: COMPONENT == STATE, COMPONENT != STATE, combined with &&, ||,
! and parentheses; quote names with spaces or brackets: M1 == "(b, r).M1".
Components are named as in 'pepa states' (M1, Client[2]).
`)
	a := &passageCmd{analysisBase: analysisBase{verb: "passage"}}
	a.o.register(fs)
	fs.StringVar(&a.source, "source-action", "", "comma-separated source actions: plug-in semantics (states entered by them, steady-state weighted)")
	fs.StringVar(&a.target, "target-action", "", "comma-separated target actions: the passage ends when one fires (or, with a source, enters)")
	fs.StringVar(&a.query.Target, "target", "", "state predicate: the passage ends on entering a state where it holds")
	times := fs.String("times", "", "time grid `START:STOP:STEP`")
	at := fs.String("at", "", "comma-separated times `t1,t2,...`")
	fs.BoolVar(&a.query.PDF, "pdf", false, "also print the density")
	quant := fs.String("quantile", "", "comma-separated probabilities `p1,p2` whose quantiles to print")
	fs.Float64Var(&a.eps, "epsilon", 1e-10, "bound on the error of every CDF value (raised, with a warning, to what float64 can keep over the series' steps)")
	fs.BoolVar(&a.query.Flat, "flat", false, "solve on the whole product chain even where the passage concerns one independent part")
	fs.StringVar(&a.transient, "transient", "auto", "the transient engine: auto (by predicted cost), uniformization, or laplace (Laplace-transform inversion, for a passage from the start whose chain with the target absorbing is acyclic or has small blocks: stiff chains); --verbose says which ran and why")
	wantMean := fs.Bool("mean", true, "compute the mean passage time; --mean=false skips it (on a big chain it can cost more than the CDF; the JSON mean is then null, mean_unavailable \"not asked\")")
	files, code := parseFlags(e, fs, args)
	if code >= 0 {
		return nil, ctx, code
	}
	a.files = files
	if ctx, code = a.o.validate(ctx, e, "passage"); code >= 0 {
		return nil, ctx, code
	}
	c := &checker{e: e, verb: "passage"}
	c.require(len(files) == 1, "need exactly one model file")
	c.epsilon(a.eps)
	c.require((a.target == "") != (a.query.Target == ""), "give exactly one of --target-action and --target")
	c.require(a.source == "" || a.target != "", "--source-action (plug-in semantics) needs --target-action")
	c.oneOf("--transient", a.transient, "auto", "uniformization", "laplace")
	a.query.Times = c.grid(*times, *at)
	a.query.Quantiles = c.probabilities("--quantile", *quant)
	if c.failed() {
		return nil, ctx, c.code
	}
	a.query.SourceActions, a.query.TargetActions = splitList(a.source), splitList(a.target)
	a.query.NoMean = !*wantMean
	return a, ctx, -1
}

func (a *passageCmd) solve(ctx context.Context, e *env, in []models.Input, derive deriver) (any, error) {
	timer := a.timer()
	aopt := passage.AnalyzeOptions{Epsilon: a.eps, Transient: a.transient}
	aopt.Derive = func(ctx context.Context, s *ctmc.Structure) (*ctmc.Chain, error) {
		timer.mark("compile", "")
		return derive(ctx, 0, s)
	}
	if timer != nil {
		aopt.Stage = timer.mark
	}
	if e.stderrTerminal {
		aopt.Progress = func(step, max int) {
			if max > 0 {
				fmt.Fprintf(e.stderr, "\runiformization: step %d of at most %d   ", step, max)
			} else {
				fmt.Fprintf(e.stderr, "\runiformization: step %d   ", step)
			}
		}
		defer fmt.Fprint(e.stderr, "\r\033[K")
	}
	return passage.AnalyzeModel(ctx, in[0].Model, ctmc.Options{Aggregate: a.o.aggregate, MaxStates: a.o.maxStates}, a.query, aopt)
}

// timer is the model's stage timer (nil: none).
func (b *analysisBase) timer() *stageTimer {
	if len(b.timers) == 0 {
		return nil
	}
	return b.timers[0]
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// maxGridPoints bounds a --times grid.
const maxGridPoints = 1_000_000

// gridPoint snaps a computed grid point to 15 significant digits: the
// user wrote decimals, and 3*0.1 is 0.30000000000000004 in binary, which
// would otherwise be printed and computed as such (the change is below
// one part in 1e15).
func gridPoint(t float64) float64 {
	r, err := strconv.ParseFloat(strconv.FormatFloat(t, 'g', 15, 64), 64)
	if err != nil {
		return t
	}
	return r
}

// parseGrid reads --times START:STOP:STEP and --at t1,t2 into one sorted
// list of times.
func parseGrid(times, at string) ([]float64, error) {
	var grid []float64
	if times != "" {
		parts := strings.Split(times, ":")
		if len(parts) != 3 {
			return nil, fmt.Errorf("--times wants START:STOP:STEP, got %q", times)
		}
		var v [3]float64
		for i, p := range parts {
			x, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
			if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, fmt.Errorf("--times: %q is not a number", p)
			}
			v[i] = x
		}
		start, stop, step := v[0], v[1], v[2]
		if start < 0 || stop < start || step <= 0 {
			return nil, fmt.Errorf("--times wants 0 <= START <= STOP and STEP > 0, got %q", times)
		}
		n := int(math.Floor((stop-start)/step+1e-9)) + 1
		if n > maxGridPoints {
			return nil, fmt.Errorf("--times gives %d points, more than %d", n, maxGridPoints)
		}
		for i := 0; i < n; i++ {
			grid = append(grid, gridPoint(start+float64(i)*step))
		}
	}
	pts, err := parseFloats(at)
	if err != nil {
		return nil, fmt.Errorf("--at: %v", err)
	}
	for _, t := range pts {
		if t < 0 {
			return nil, fmt.Errorf("--at: time %g is negative", t)
		}
	}
	grid = append(grid, pts...)
	sort.Float64s(grid)
	out := grid[:0]
	for i, t := range grid {
		if i == 0 || t != grid[i-1] {
			out = append(out, t)
		}
	}
	return out, nil
}
