package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"pepa/models"
	"pepa/models/optimize"
	"pepa/models/spec"
)

func runOptimize(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "optimize", "optimize SPEC --beta SECONDS [flags]",
		`  pepa optimize testdata/spec-example.json --beta 40 -o best.pepa
        the most robust mapping found in 10 s, written as PEPA
  pepa optimize testdata/spec-example.json --beta 45 --objective joint --budget 5s --seed 7 --mapping-out best.json
        maximise P(every machine finishes by 45) instead, and save the mapping
  pepa optimize testdata/spec-example.json --beta 45 --makespan-slack 0.05
        the most robust mapping whose expected makespan is within 5% of the fastest found
  pepa optimize testdata/spec-shared.json --beta 40 --budget 2s
        machines that stage input over a shared network: coupled mappings, solved by groups
  pepa optimize testdata/spec-energy.json --beta 40 --pareto --plot front.png
        the mappings no other beats on both robustness and expected energy (all 729 solved), and their plot
  pepa optimize testdata/spec-energy.json --beta 40 --pareto --idle-power 0,0,0 --format csv
        the same front with machines switched off when done
`)
	beta := fs.Float64("beta", 0, "makespan goal in `SECONDS` (required)")
	objective := fs.String("objective", "min", "min: maximise min_j P(F_j <= beta); joint: maximise P(max_j F_j <= beta)")
	budget := fs.Duration("budget", 10*time.Second, "time for the whole search: the exact optimum when it fits in half of it, else local search until it is spent")
	seed := fs.Uint64("seed", 1, "seed of the search order (same seed, same search)")
	slack := fs.Float64("makespan-slack", -1, "keep the expected makespan within (1 + `S`) times the fastest heuristic's (negative: no constraint)")
	out := fs.String("o", "", "write the best mapping as a PEPA model to `FILE`")
	mappingOut := fs.String("mapping-out", "", "write a specification of the best mapping (values resolved) to `FILE`")
	format := fs.String("format", "text", "output format: text or json (and csv with --pareto)")
	pareto := fs.Bool("pareto", false, "list the robustness/expected-energy front instead: the mappings no other mapping found beats on both\n"+
		"(every mapping when there are at most --max-enumerate, else those a search of --budget finds); needs the power")
	var power models.PowerFlags
	fs.StringVar(&power.Busy, "busy-power", "", "each machine's power while it computes, in watts: `LIST` in machine order (350,170,70) or NAME=WATTS pairs;\n"+
		"overrides the specification's \"power\" (--pareto)")
	fs.StringVar(&power.Idle, "idle-power", "", "each machine's power from when it has finished until the last one has, in watts: `LIST` as for --busy-power\n"+
		"(default: the specification's, else 0) (--pareto)")
	plotPath := fs.String("plot", "", "with --pareto, draw robustness against expected energy, the front and the heuristics to `FILE`: .png, .svg or .pdf")
	energyBudget := fs.Float64("energy-budget", 0, "with --pareto, add each front mapping's P(E <= B) and P(makespan <= beta and E <= B) for the budget `JOULES` (as robustness computes them)")
	maxEnum := fs.Int("max-enumerate", 0, "with --pareto, solve every mapping when there are at most `N` (default 100000, 2000 with shared resources or pools)")
	var mem memoryFlag
	mem.register(fs)
	files, code := parseFlags(e, fs, args)
	if code >= 0 {
		return code
	}
	if ctx, code = mem.resolve(ctx, e, "optimize"); code >= 0 {
		return code
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	c := &checker{e: e, verb: "optimize"}
	c.require(len(files) == 1, "need exactly one specification file")
	c.positiveSeconds("--beta", *beta, true)
	c.oneOf("--objective", *objective, "min", "joint")
	c.require(*budget > 0, "--budget must be positive")
	if *pareto {
		c.oneOf("--format", *format, "text", "json", "csv")
		for _, name := range []string{"--objective", "--makespan-slack", "-o"} {
			c.require(!set[strings.TrimLeft(name, "-")], "%s does not go with --pareto (the front is of robustness min_j P(F_j <= beta) and expected energy; --mapping-out writes its mappings)", name)
		}
		c.require(*maxEnum >= 0, "--max-enumerate must not be negative")
		c.require(*energyBudget >= 0 && !math.IsInf(*energyBudget, 0), "--energy-budget must be a finite number of joules >= 0")
	} else {
		c.oneOf("--format", *format, "text", "json")
		for _, name := range []string{"busy-power", "idle-power", "plot", "max-enumerate", "energy-budget"} {
			c.require(!set[name], "--%s goes with --pareto (the search for the most robust mapping does not use power)", name)
		}
	}
	plotFormat := c.plot(*plotPath)
	if c.failed() {
		return c.code
	}
	in, code := loadSpec(e, "optimize", files[0])
	if code >= 0 {
		return code
	}
	if *pareto {
		return runPareto(ctx, e, in, paretoArgs{spec: files[0], beta: *beta, power: power, budget: *budget, seed: *seed,
			maxEnumerate: *maxEnum, energyBudget: *energyBudget, format: *format, mappingOut: *mappingOut, plotPath: *plotPath, plotFormat: plotFormat})
	}
	return runSearch(ctx, e, in, searchArgs{spec: files[0], out: *out, mappingOut: *mappingOut, format: *format,
		opt: optimize.OptimizeOptions{Beta: *beta, Objective: *objective, Budget: *budget, Seed: *seed, MakespanSlack: *slack}})
}

// searchArgs are what optimize's search (without --pareto) was given.
type searchArgs struct {
	spec, out, mappingOut, format string
	opt                           optimize.OptimizeOptions
}

// runSearch runs the search for the most robust mapping (one call,
// optimize.Optimize), writes the best mapping where asked and prints the
// result.
func runSearch(ctx context.Context, e *env, in *spec.Instance, a searchArgs) int {
	// Outputs are checked before a search that may take the whole budget.
	for _, path := range []string{a.out, a.mappingOut} {
		if err := checkWritable(path); err != nil {
			fmt.Fprintf(e.stderr, "pepa optimize: %v\n", err)
			return exitInvalid
		}
	}
	opt := a.opt
	if e.stderrTerminal {
		opt.Progress = func(p optimize.OptimizeProgress) {
			bound := ""
			if p.Bound < 1 {
				bound = fmt.Sprintf(", bound %.6f", p.Bound)
			}
			fmt.Fprintf(e.stderr, "\r\033[Koptimize: %s, %.0f s: best %.6f%s, %d moves (%.0f/s)",
				p.Phase, p.Elapsed.Seconds(), p.Best, bound, p.Moves, float64(p.Moves)/p.Elapsed.Seconds())
		}
	}
	// The budget is the whole command's: reading the specification came
	// out of it already.
	opt.Budget = max(time.Millisecond, opt.Budget-time.Since(e.start))
	res, err := optimize.Optimize(ctx, in, opt)
	if e.stderrTerminal {
		fmt.Fprint(e.stderr, "\r\033[K")
	}
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(e.stderr, "pepa optimize: interrupted before any mapping was evaluated")
			return exitInterrupted
		}
		fmt.Fprintf(e.stderr, "%s: error: %v\n", a.spec, err)
		return exitInvalid
	}
	best := in.MappingOf("optimized", res.Best.Allocation)
	if a.out != "" {
		if err := writeOutput(e, a.out, func(w io.Writer) error { return in.Generate(w, best) }); err != nil {
			fmt.Fprintf(e.stderr, "pepa optimize: %v\n", err)
			return exitInvalid
		}
	}
	if a.mappingOut != "" {
		if err := writeOutput(e, a.mappingOut, func(w io.Writer) error { return in.WriteSpec(w, best) }); err != nil {
			fmt.Fprintf(e.stderr, "pepa optimize: %v\n", err)
			return exitInvalid
		}
	}
	if err := writeOutput(e, "", func(w io.Writer) error { return writeOptimize(w, in, res, best, opt.Beta, opt.Objective, a.format) }); err != nil {
		fmt.Fprintf(e.stderr, "pepa optimize: %v\n", err)
		return exitInvalid
	}
	if res.Stopped == optimize.StoppedInterrupted {
		fmt.Fprintln(e.stderr, "pepa optimize: interrupted: the best mapping found so far is written")
		return exitInterrupted
	}
	return exitOK
}

// writeOptimize prints a search's result: the heuristics' mappings and
// the best, how the search stopped and how far from optimal it may be.
func writeOptimize(w io.Writer, in *spec.Instance, res *optimize.OptimizeResult, best spec.Mapping, beta float64, objective, format string) error {
	bestHeuristic := math.Inf(-1)
	for _, h := range res.Heuristics {
		bestHeuristic = math.Max(bestHeuristic, h.Score)
	}
	movesPerSecond := float64(res.Moves) / res.Elapsed.Seconds()
	if format == "json" {
		type cand struct {
			Name       string              `json:"name"`
			Score      float64             `json:"score"`
			Robustness float64             `json:"robustness"`
			PAll       float64             `json:"p_all_by_beta"`
			Makespan   any                 `json:"expected_makespan"`
			Allocation map[string][]string `json:"allocation"`
		}
		mk := func(c optimize.Candidate) cand {
			return cand{c.Name, c.Score, c.Robustness, c.Joint, jsonFloat(c.Makespan), in.MappingOf(c.Name, c.Allocation).Allocation}
		}
		var hs []cand
		for _, h := range res.Heuristics {
			hs = append(hs, mk(h))
		}
		return writeJSON(w, map[string]any{"beta": beta, "objective": objective, "heuristics": hs, "best": mk(res.Best),
			"stopped": res.Stopped, "moves": res.Moves, "machine_solves": res.Evaluations, "group_solves": res.GroupSolves, "seconds": res.Elapsed.Seconds(),
			"proved": res.Proved, "upper_bound": res.Bound, "gap": res.Gap(), "restarts": res.Restarts,
			"moves_per_second": movesPerSecond, "gain_over_heuristics": res.Best.Score - bestHeuristic, "cut": nonNil(res.Cut)})
	}
	fmt.Fprintf(w, "goal: beta = %g; objective %s\n\n", beta, map[string]string{"min": "min_j P(F_j <= beta)", "joint": "P(max_j F_j <= beta)"}[objective])
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "mapping\trobustness\tP(all <= beta)\tE[makespan]")
	for _, c := range append(append([]optimize.Candidate{}, res.Heuristics...), res.Best) {
		fmt.Fprintf(tw, "%s\t%.6f\t%.6f\t%s\n", c.Name, c.Robustness, c.Joint, textFloat(c.Makespan, "%.4f"))
	}
	tw.Flush()
	fmt.Fprintln(w)
	switch {
	case res.Proved:
		fmt.Fprintf(w, "stopped: %s after %.1f s: no mapping scores above %.6f (each machine computing its applications in specification order)\n",
			res.Stopped, res.Elapsed.Seconds(), res.Best.Score)
	default:
		why := res.Stopped
		if why == optimize.StoppedBudget {
			why = "budget spent"
		}
		fmt.Fprintf(w, "stopped: %s after %.1f s; best %.6f, within %.6f of optimal (no mapping scores above %.6f)\n",
			why, res.Elapsed.Seconds(), res.Best.Score, res.Gap(), res.Bound)
	}
	for _, c := range res.Cut {
		fmt.Fprintf(w, "cut by the budget: %s\n", c)
	}
	if res.Exact && res.Moves == 0 {
		fmt.Fprintf(w, "method: every machine solved for every set of applications (%d solves), combined by dynamic programming; gain over the best heuristic %+.6f\n",
			res.Evaluations, res.Best.Score-bestHeuristic)
	} else {
		groups := ""
		if len(in.Resources) > 0 {
			// Coupled machines: each group solved once per content.
			groups = fmt.Sprintf(", %d group solves", res.GroupSolves)
		}
		fmt.Fprintf(w, "search: %d moves (%.0f per second), %d local searches, %d machine solves%s; gain over the best heuristic %+.6f\n",
			res.Moves, movesPerSecond, res.Restarts, res.Evaluations, groups, res.Best.Score-bestHeuristic)
	}
	fmt.Fprintln(w, "best mapping:")
	for _, m := range in.Machines {
		fmt.Fprintf(w, "  %s: %v\n", m, best.Allocation[m])
	}
	return nil
}

// checkWritable makes sure a file can be created at path (without leaving
// anything there), so that a long search does not end in a write error.
func checkWritable(path string) error {
	if path == "" || path == "-" {
		return nil
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("%s is a directory", path)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".check*")
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	f.Close()
	return os.Remove(f.Name())
}
