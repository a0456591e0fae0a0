package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"pepa/ctmc"
	"pepa/passage"
)

func runPassage(ctx context.Context, e *env, args []string) int {
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
	var o outputFlags
	o.register(fs)
	source := fs.String("source-action", "", "comma-separated source actions: plug-in semantics (states entered by them, steady-state weighted)")
	target := fs.String("target-action", "", "comma-separated target actions: the passage ends when one fires (or, with a source, enters)")
	pred := fs.String("target", "", "state predicate: the passage ends on entering a state where it holds")
	times := fs.String("times", "", "time grid `START:STOP:STEP`")
	at := fs.String("at", "", "comma-separated times `t1,t2,...`")
	pdf := fs.Bool("pdf", false, "also print the density")
	quant := fs.String("quantile", "", "comma-separated probabilities `p1,p2` whose quantiles to print")
	eps := fs.Float64("epsilon", 1e-10, "bound on the error of every CDF value (raised, with a warning, to what float64 can keep over the series' steps)")
	flat := fs.Bool("flat", false, "solve on the whole product chain even where the passage concerns one independent part")
	wantMean := fs.Bool("mean", true, "compute the mean passage time; --mean=false skips it (on a big chain it can cost more than the CDF; the JSON mean is then null, mean_unavailable \"not asked\")")
	files, code := parseFlags(e, fs, args)
	if code >= 0 {
		return code
	}
	ctx, code = o.validate(ctx, e, "passage")
	if code >= 0 {
		return code
	}
	if len(files) != 1 {
		return usageError(e, "passage", "need exactly one model file")
	}
	if !(*eps > 0 && *eps < 0.1) {
		return usageError(e, "passage", "--epsilon must be in (0, 0.1)")
	}
	if (*target == "") == (*pred == "") {
		return usageError(e, "passage", "give exactly one of --target-action and --target")
	}
	if *source != "" && *target == "" {
		return usageError(e, "passage", "--source-action (plug-in semantics) needs --target-action")
	}
	grid, err := parseGrid(*times, *at)
	if err != nil {
		return usageError(e, "passage", "%v", err)
	}
	quantiles, err := parseFloats(*quant)
	if err != nil {
		return usageError(e, "passage", "--quantile: %v", err)
	}
	for _, p := range quantiles {
		if !(p > 0 && p < 1) {
			return usageError(e, "passage", "--quantile: %g is not a probability in (0, 1)", p)
		}
	}
	name := files[0]
	timer := newStageTimer(o.verbose)
	m, code := loadModel(e, "passage", name)
	if code >= 0 {
		return code
	}
	timer.mark("load", "")
	fail := func(err error) int {
		if ctx.Err() != nil {
			return exitInterrupted
		}
		fmt.Fprintf(e.stderr, "%s: error: %v\n", displayName(name), err)
		return exitInvalid
	}
	s, code := compileModel(e, name, m, &o)
	if code >= 0 {
		return code
	}
	srcNames, tgtNames := splitList(*source), splitList(*target)
	query := passage.Query{SourceActions: srcNames, TargetActions: tgtNames, Target: *pred, Times: grid, Quantiles: quantiles, PDF: *pdf, Flat: *flat, NoMean: !*wantMean}
	aopt := passage.AnalyzeOptions{Epsilon: *eps}
	deriveCode := -1
	aopt.Derive = func(ctx context.Context, s *ctmc.Structure) (*ctmc.Chain, error) {
		timer.mark("compile", "")
		c, code := deriveStructure(ctx, e, "passage", name, s, &o)
		if code >= 0 {
			deriveCode = code
			return nil, errDerivationReported
		}
		timer.mark("derive", derivedDetail(c, timer))
		return c, nil
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
	}
	an, err := passage.Analyze(ctx, s, query, aopt)
	if e.stderrTerminal {
		fmt.Fprint(e.stderr, "\r\033[K")
	}
	if deriveCode >= 0 {
		return deriveCode
	}
	if err != nil {
		return fail(err)
	}
	timer.print(e.stderr, "passage", displayName(name))
	c, r, semantics, solved, why := an.Chain, an.Result, an.Semantics, an.Solved, an.SolvedWhy
	if !r.Reachable {
		fmt.Fprintf(e.stderr, "%s: warning: the target cannot be reached from the start: every CDF value is 0\n", displayName(name))
	}
	if r.Epsilon > *eps {
		fmt.Fprintf(e.stderr, "%s: warning: --epsilon %g is below what float64 can keep over %d steps; every CDF value is within %.2g instead\n", displayName(name), *eps, r.Iterations(), r.Epsilon)
	}
	mean := an.Mean
	if an.MeanErr != nil {
		fmt.Fprintf(e.stderr, "%s: warning: %v\n", displayName(name), an.MeanErr)
	}
	type point struct {
		T   float64  `json:"t"`
		CDF float64  `json:"cdf"`
		PDF *float64 `json:"pdf,omitempty"`
	}
	var points []point
	for _, p := range an.Points {
		pt := point{T: p.T, CDF: p.CDF}
		if *pdf {
			d := p.PDF
			pt.PDF = &d
		}
		points = append(points, pt)
	}
	type qpoint struct {
		P float64  `json:"p"`
		T *float64 `json:"t"` // null: the target is reached with a smaller probability
	}
	var qs []qpoint
	for _, q := range an.Quantiles {
		qp := qpoint{P: q.P}
		if !math.IsInf(q.T, 1) {
			t := q.T
			qp.T = &t
		}
		qs = append(qs, qp)
	}
	var meanPtr *float64
	if !math.IsInf(mean, 1) && !math.IsNaN(mean) {
		meanPtr = &mean
	}
	meanUnavailable := ""
	switch {
	case an.MeanErr != nil:
		meanUnavailable = an.MeanErr.Error()
	case an.MeanFrom == "not asked":
		meanUnavailable = "not asked (--mean=false)"
	}
	err = writeOutput(e, o.out, func(w io.Writer) error {
		switch o.format {
		case "json":
			out := struct {
				Model         string   `json:"model"`
				Semantics     string   `json:"semantics"`
				Solved        string   `json:"solved"`
				SolvedWhy     string   `json:"solved_why"`
				SourceActions []string `json:"source_actions"`
				TargetActions []string `json:"target_actions"`
				Target        string   `json:"target,omitempty"`
				States        int      `json:"states"`
				Epsilon       float64  `json:"epsilon"`
				Q             float64  `json:"uniformization_rate"`
				Iterations    int      `json:"iterations"`
				Method        string   `json:"method"`
				Reachable     bool     `json:"reachable"`
				Mean          *float64 `json:"mean"`
				// MeanUnavailable says why the mean is null although the
				// passage ends: it could not be computed (the CDF is exact).
				MeanUnavailable string   `json:"mean_unavailable,omitempty"`
				Points          []point  `json:"points"`
				Quantiles       []qpoint `json:"quantiles,omitempty"`
			}{displayName(name), string(semantics), solved, why, nonNil(srcNames), nonNil(tgtNames), *pred, c.N, r.Epsilon, r.Q, r.Iterations(), r.Method, r.Reachable, meanPtr, meanUnavailable, points, qs}
			return writeJSON(w, out)
		case "csv":
			if len(points) > 0 {
				if *pdf {
					fmt.Fprintln(w, "t,cdf,pdf")
				} else {
					fmt.Fprintln(w, "t,cdf")
				}
				for _, p := range points {
					if p.PDF != nil {
						fmt.Fprintf(w, "%s,%s,%s\n", fmtFloat(p.T), fmtFloat(p.CDF), fmtFloat(*p.PDF))
					} else {
						fmt.Fprintf(w, "%s,%s\n", fmtFloat(p.T), fmtFloat(p.CDF))
					}
				}
			}
			return nil
		}
		fmt.Fprintf(w, "model:      %s (%d states, solved %s: %s)\n", displayName(name), c.N, solved, why)
		switch {
		case *pred != "":
			fmt.Fprintf(w, "passage:    from the initial state into states where %s\n", *pred)
		case semantics == passage.Plugin:
			fmt.Fprintf(w, "passage:    plug-in semantics, from states entered by %s to states entered by %s\n", *source, *target)
		default:
			fmt.Fprintf(w, "passage:    from the initial state to the first firing of %s\n", *target)
		}
		if meanPtr != nil {
			fmt.Fprintf(w, "mean:       %.10g\n", mean)
		} else if an.MeanFrom == "not asked" {
			fmt.Fprintf(w, "mean:       not asked (--mean=false)\n")
		} else if an.MeanErr != nil {
			fmt.Fprintf(w, "mean:       unavailable (%v)\n", an.MeanErr)
		} else {
			fmt.Fprintf(w, "mean:       infinite (the passage may never end)\n")
		}
		if r.Method == "uniformization" {
			fmt.Fprintf(w, "accuracy:   every CDF value within %.2g of the exact one (uniformization, q = %.6g, %d steps)\n\n", r.Epsilon, r.Q, r.Iterations())
		} else {
			fmt.Fprintf(w, "accuracy:   every CDF value within %.2g of the exact one (%s: the series would need more than %d steps at q = %.6g)\n\n", r.Epsilon, r.Method, passage.DenseSwitchSteps, r.Q)
		}
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
		if *pdf {
			fmt.Fprintln(tw, "t\tcdf\tpdf\t")
		} else {
			fmt.Fprintln(tw, "t\tcdf\t")
		}
		for _, p := range points {
			if p.PDF != nil {
				fmt.Fprintf(tw, "%g\t%.10f\t%.10g\t\n", p.T, p.CDF, *p.PDF)
			} else {
				fmt.Fprintf(tw, "%g\t%.10f\t\n", p.T, p.CDF)
			}
		}
		tw.Flush()
		if len(qs) > 0 {
			fmt.Fprintln(w)
			tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(tw, "quantile\tt\t")
			for _, q := range qs {
				if q.T == nil {
					fmt.Fprintf(tw, "%g\tinfinite\t\n", q.P)
				} else {
					fmt.Fprintf(tw, "%g\t%.10g\t\n", q.P, *q.T)
				}
			}
			tw.Flush()
		}
		return nil
	})
	if err != nil {
		fmt.Fprintf(e.stderr, "pepa passage: %v\n", err)
		return exitInvalid
	}
	return exitOK
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func parseFloats(s string) ([]float64, error) {
	var out []float64
	for _, f := range splitList(s) {
		x, err := strconv.ParseFloat(f, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("%q is not a number", f)
		}
		out = append(out, x)
	}
	return out, nil
}

// maxGridPoints bounds a --times grid.
const maxGridPoints = 1_000_000

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
			grid = append(grid, start+float64(i)*step)
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

// errDerivationReported stands for a derivation failure already printed
// (with its own exit code) by deriveStructure.
var errDerivationReported = errors.New("derivation failed")
