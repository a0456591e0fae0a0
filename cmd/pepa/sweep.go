package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"pepa/ctmc"
	"pepa/ctmc/shard"
	"pepa/ctmc/sweep"
	"pepa/internal/membudget"
	"pepa/models"
	"pepa/models/plot"
)

// varyFlags collects repeated --vary flags.
type varyFlags []sweep.Param

func (v *varyFlags) String() string { return "" }
func (v *varyFlags) Set(s string) error {
	p, err := sweep.ParseVary(s)
	if err != nil {
		return err
	}
	*v = append(*v, p)
	return nil
}

// sweepable is an analysis a sweep runs at its points: the verb's solve,
// and its result's measures, named by their paths in the verb's JSON
// (sweep_columns.go).
type sweepable interface {
	analysis
	columns(result any) []sweep.Column
}

// sweepParsers parse the flags of the verbs a sweep runs at its points.
var sweepParsers = map[string]func(ctx context.Context, e *env, args []string) (sweepable, context.Context, int){
	"states": func(ctx context.Context, e *env, args []string) (sweepable, context.Context, int) {
		return parseStates(ctx, e, args)
	},
	"steady": func(ctx context.Context, e *env, args []string) (sweepable, context.Context, int) {
		return parseSteady(ctx, e, args)
	},
	"passage": func(ctx context.Context, e *env, args []string) (sweepable, context.Context, int) {
		return parsePassage(ctx, e, args)
	},
	"robustness": func(ctx context.Context, e *env, args []string) (sweepable, context.Context, int) {
		return parseRobustness(ctx, e, args)
	},
	"simulate": func(ctx context.Context, e *env, args []string) (sweepable, context.Context, int) {
		return parseSimulate(ctx, e, args)
	},
}

// sweepCmd is 'pepa sweep': the grid, the verb (parsed as the verb parses
// its flags) and how to show the result.
type sweepCmd struct {
	fs          *flag.FlagSet
	params      []sweep.Param
	format, out string
	plotPath    string
	columns     string
	workers     int
	tol         float64
	shard       shard.Index
	mem         memoryFlag
	verb        string
	verbArgs    []string // the verb and its arguments, as given
	a           sweepable
}

// sweepPoint is one point's measures, named by their paths in the verb's
// JSON, and the series whose crossings are found.
type sweepPoint struct {
	cols   []sweep.Column
	series []float64
}

func runSweep(ctx context.Context, e *env, args []string) int {
	s, ctx, code := parseSweep(ctx, e, args)
	if code >= 0 {
		return code
	}
	res, code := s.run(ctx, e)
	if code >= 0 {
		return code
	}
	if s.shard.N > 0 {
		return s.writeShard(e, res)
	}
	return writeSweep(e, res, s.format, s.columns, s.plotPath, s.out)
}

func parseSweep(ctx context.Context, e *env, args []string) (*sweepCmd, context.Context, int) {
	fs := newFlags(e, "sweep", "sweep --vary NAME=RANGE [--vary NAME=RANGE] [flags] VERB [verb flags] FILE...",
		`  pepa sweep --vary 'r3=0.1:0.5:0.05' robustness --beta 30 testdata/cluster/paired.pepa testdata/cluster/uneven.pepa
        robustness of both mappings as application 3's ideal rate r3 varies, and where the ranking changes
  pepa sweep --vary 'r1=0.1,0.2,0.4' --vary 'r2=0.1:0.3:0.1' --format csv robustness --beta 30 testdata/cluster/paired.pepa
        every measure of robustness on a 3 x 3 grid, one CSV row per point
  pepa sweep --vary 'r1=0.1:1:0.1' --columns 'compute1]' steady testdata/cluster/uneven.pepa
        the throughput of compute1 as r1 varies (add --plot r1.png to draw it)

RANGE is START:STOP:STEP or V1,V2,...; NAME a rate constant defined in every
model (NAME = EXPRESSION;), whose definition is replaced by each value. The
model files are the VERB's. The measures are the numbers of
'pepa VERB --format json', named by their JSON paths
(mappings[a.pepa].robustness, throughput[walk1].throughput).
`)
	s := &sweepCmd{fs: fs}
	var vary varyFlags
	fs.Var(&vary, "vary", "a rate constant and its values: `NAME=START:STOP:STEP` or NAME=V1,V2,... (once or twice)")
	fs.StringVar(&s.format, "format", "text", "output format: text, json or csv")
	fs.StringVar(&s.out, "o", "", "write the result to `FILE` (atomically) instead of standard output")
	fs.StringVar(&s.plotPath, "plot", "", "draw the measures against the parameter (a heat map for two) to `FILE`.png or .svg")
	fs.StringVar(&s.columns, "columns", "", "comma-separated substrings: keep the measures whose names contain one (default for text and plots: the verb's headline measures)")
	fs.IntVar(&s.workers, "workers", 0, "points solved at once (default: every core)")
	fs.Float64Var(&s.tol, "crossing-tolerance", 1e-6, "refine each crossing to this fraction of the grid step")
	s.mem.register(fs)
	shardArg := fs.String("shard", "", shardUsage+" (the grid's points; a shard also evaluates the points past its range that its last crossing needs)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printUsage(fs, e.stdout)
			return nil, ctx, exitOK
		}
		fmt.Fprintf(e.stderr, "pepa sweep: %v\n", err)
		printUsage(fs, e.stderr)
		return nil, ctx, exitUsage
	}
	rest := fs.Args()
	s.params = vary
	c := &checker{e: e, verb: "sweep"}
	c.require(len(vary) > 0, "give --vary NAME=RANGE")
	c.require(len(vary) <= 2, "at most two --vary parameters")
	c.require(len(vary) != 2 || vary[0].Name != vary[1].Name, "--vary %s given twice", firstName(vary))
	c.oneOf("--format", s.format, "text", "json", "csv")
	c.require(s.tol > 0 && s.tol < 1, "--crossing-tolerance must be in (0, 1)")
	c.require(len(rest) > 0, "no verb given (one of robustness, steady, passage, simulate, states)")
	if len(rest) > 0 {
		c.require(sweepParsers[rest[0]] != nil, "cannot sweep verb %q (want robustness, steady, passage, simulate or states)", rest[0])
	}
	if s.plotPath != "" {
		c.require(isSweepPlot(s.plotPath), "--plot wants a .png or .svg file name")
	}
	if *shardArg != "" && !c.failed() {
		var err error
		s.shard, err = shard.Parse(*shardArg)
		c.require(err == nil, "%v", err)
		c.require(s.plotPath == "", "--plot draws the whole sweep: give it to pepa merge")
	}
	if !c.failed() {
		for _, a := range rest[1:] {
			for _, bad := range []string{"--format", "-format", "-o", "--o", "--plot", "-plot", "--shard", "-shard"} {
				c.require(a != bad && !strings.HasPrefix(a, bad+"="), "%s belongs to sweep, not to the verb", bad)
			}
		}
	}
	if c.failed() {
		return nil, ctx, c.code
	}
	s.verb, s.verbArgs = rest[0], rest
	// One budget for the whole sweep: its points run at once in this
	// process and share it (the verb's flags may not set another).
	ctx, code := s.mem.resolve(ctx, e, "sweep")
	if code >= 0 {
		return nil, ctx, code
	}
	a, ctx, code := sweepParsers[s.verb](ctx, e, rest[1:])
	if code >= 0 {
		return nil, ctx, code
	}
	s.a = a
	return s, ctx, -1
}

func firstName(v varyFlags) string {
	if len(v) == 0 {
		return ""
	}
	return v[0].Name
}

// run is the sweep's one library call: the verb's solve at every point of
// the range, each model's chain derived once.
func (s *sweepCmd) run(ctx context.Context, e *env) (*sweep.Result, int) {
	b := s.a.base()
	spec := sweep.Spec{Params: s.params, Workers: s.workers, Tolerance: s.tol}
	for _, f := range b.files {
		text, err := readInput(e, f)
		if err != nil {
			fmt.Fprintf(e.stderr, "pepa sweep: %v\n", err)
			return nil, exitUsage
		}
		b.sources = append(b.sources, text)
		spec.Models = append(spec.Models, sweep.Source{Name: displayName(f), Text: text})
	}
	npoints := int64(1)
	for _, p := range s.params {
		npoints *= int64(len(p.Values))
	}
	if err := membudget.Check(ctx, fmt.Sprintf("sweep: the grid and results of %d points", npoints), membudget.Bytes(npoints, sweepPointBytes), "fewer --vary values"); err != nil {
		fmt.Fprintf(e.stderr, "pepa sweep: %v\n", err)
		return nil, exitInvalid
	}
	spec.Shard = s.shard
	spec.Derive = func(ctx context.Context, st *ctmc.Structure) (*ctmc.Chain, error) {
		return ctmc.Derive(ctx, st, ctmc.DeriveOptions{MaxStates: b.o.maxStates})
	}
	series, hasSeries := s.a.(interface{ series(any) []float64 })
	if hasSeries && len(s.params) == 1 && len(b.files) >= 2 {
		for _, f := range b.files {
			spec.Series = append(spec.Series, f)
		}
	}
	if e.stderrTerminal {
		fmt.Fprintf(e.stderr, "\rsweeping: %d points   ", npoints)
	}
	out, err := sweep.Run(ctx, spec, func(ctx context.Context, p *sweep.Point) (sweepPoint, error) {
		return s.point(ctx, e, p, series)
	}, func(p sweepPoint) []float64 { return p.series })
	if e.stderrTerminal {
		fmt.Fprint(e.stderr, "\r\033[K")
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, exitInterrupted
		}
		fmt.Fprintf(e.stderr, "pepa sweep: %v\n", err)
		return nil, exitInvalid
	}
	if st := out.Chains; st.Derived+st.Rerated+st.Changed > 0 {
		fmt.Fprintf(e.stderr, "pepa sweep: chains: %d derived (%.3g s), %d rerated from them (%.3g s)", st.Derived+st.Changed, st.DeriveTime.Seconds(), st.Rerated, st.RerateTime.Seconds())
		if st.Changed > 0 {
			fmt.Fprintf(e.stderr, ", %d of the derived at points whose values change the chain's structure", st.Changed)
		}
		fmt.Fprintln(e.stderr)
	}
	res := &sweep.Result{Verb: s.verb, Params: s.params, Series: append([]string{}, spec.Series...), First: out.First, Crossings: out.Crossings}
	for _, p := range out.Results {
		res.Rows = append(res.Rows, p.cols)
	}
	return res, -1
}

// point solves the verb at one point and flattens its result into the
// sweep's columns.
func (s *sweepCmd) point(ctx context.Context, e *env, p *sweep.Point, series interface{ series(any) []float64 }) (sweepPoint, error) {
	b := s.a.base()
	in := make([]models.Input, len(p.Models))
	for k, m := range p.Models {
		in[k] = models.Input{Name: displayName(b.files[k]), Model: m}
	}
	r, err := s.a.solve(ctx, e, in, func(ctx context.Context, k int, st *ctmc.Structure) (*ctmc.Chain, error) {
		return p.Chain(ctx, k, st)
	})
	if err != nil {
		if ctx.Err() != nil {
			return sweepPoint{}, err
		}
		return sweepPoint{}, fmt.Errorf("pepa %s failed:\n%s", s.verb, b.message(err))
	}
	pt := sweepPoint{cols: s.a.columns(r)}
	if series != nil {
		pt.series = series.series(r)
	}
	return pt, nil
}

// writeShard writes a sweep shard: the header names the whole run (the
// canonical command, the models' content) and the range.
func (s *sweepCmd) writeShard(e *env, res *sweep.Result) int {
	b := s.a.base()
	var ms []shard.Model
	for k, f := range b.files {
		ms = append(ms, shard.Hash(f, b.sources[k]))
	}
	total := len(res.Points())
	first, count := s.shard.Range(total)
	skip := map[string]bool{"shard": true, "o": true, "format": true, "columns": true, "plot": true, "workers": true}
	h := shard.Header{Verb: "sweep", Command: shardCommand(s.fs, skip, s.verbArgs), Models: ms, Shard: s.shard.K, Shards: s.shard.N,
		Units: "points", Total: total, First: first, Count: count, Render: map[string]string{"format": s.format, "columns": s.columns}}
	return writeShard(e, "sweep", s.out, h, res)
}

// writeSweep prints a sweep's result (and draws its plot): what sweep
// prints, and merge for a sweep's shards.
func writeSweep(e *env, res *sweep.Result, format, columns, plotPath, out string) int {
	verb, names, points := res.Verb, res.Names(), res.Points()
	cols, table := res.Table()
	crossings := res.Crossings
	headline := selectColumns(cols, splitList(columns), verb)
	all := headline
	if columns == "" {
		all = make([]int, len(cols))
		for j := range all {
			all[j] = j
		}
	}
	if plotPath != "" {
		if err := writeOutput(e, plotPath, func(w io.Writer) error { return plotSweep(w, plotPath, res, cols, table, headline) }); err != nil {
			fmt.Fprintf(e.stderr, "pepa sweep: %v\n", err)
			return exitInvalid
		}
	}

	err := writeOutput(e, out, func(w io.Writer) error {
		switch format {
		case "json":
			var pts []map[string]any
			for i, p := range points {
				vals := map[string]any{}
				for k, n := range names {
					vals[n] = p[k]
				}
				ms := map[string]any{}
				for _, j := range all {
					ms[cols[j]] = jsonFloat(table[i][j])
				}
				pts = append(pts, map[string]any{"values": vals, "measures": ms})
			}
			var cs []map[string]any
			for _, c := range crossings {
				cs = append(cs, map[string]any{"parameter": names[0], "at": c.X, "between": []float64{c.Lo, c.Hi},
					"value": c.Value, "overtaking": overtaker(c), "overtaken": overtaken(c)})
			}
			return writeJSON(w, map[string]any{"verb": verb, "vary": names, "points": pts, "crossings": nonNilMaps(cs)})
		case "csv":
			header := append([]string{}, names...)
			for _, j := range all {
				header = append(header, csvQuote(cols[j]))
			}
			fmt.Fprintln(w, strings.Join(header, ","))
			for i, p := range points {
				var f []string
				for _, v := range p {
					f = append(f, fmtFloat(v))
				}
				for _, j := range all {
					f = append(f, csvFloat(table[i][j]))
				}
				fmt.Fprintln(w, strings.Join(f, ","))
			}
			return nil
		}
		fmt.Fprintf(w, "sweep of pepa %s over %s (%d points)\n\n", verb, strings.Join(names, " x "), len(points))
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
		header := strings.Join(names, "\t") + "\t"
		for _, j := range headline {
			header += cols[j] + "\t"
		}
		fmt.Fprintln(tw, header)
		for i, p := range points {
			row := ""
			for _, v := range p {
				row += fmt.Sprintf("%g\t", v)
			}
			for _, j := range headline {
				row += textFloat(table[i][j], "%.6f") + "\t"
			}
			fmt.Fprintln(tw, row)
		}
		tw.Flush()
		if len(crossings) > 0 {
			fmt.Fprintln(w)
		}
		for _, c := range crossings {
			fmt.Fprintf(w, "crossing: %s overtakes %s at %s = %.6g (robustness %.6f; between %g and %g)\n",
				overtaker(c), overtaken(c), names[0], c.X, c.Value, c.Lo, c.Hi)
		}
		if len(res.Series) >= 2 && len(crossings) == 0 {
			fmt.Fprintln(w, "\nno crossing: the ranking by robustness is the same at every point")
		}
		return nil
	})
	if err != nil {
		fmt.Fprintf(e.stderr, "pepa sweep: %v\n", err)
		return exitInvalid
	}
	return exitOK
}

// plotSweep draws a sweep's headline measures: lines against the
// parameter (with the crossings) for one, heat maps for two.
func plotSweep(w io.Writer, plotPath string, res *sweep.Result, cols []string, table [][]float64, headline []int) error {
	params := res.Params
	plotFormat := strings.TrimPrefix(strings.ToLower(filepath.Ext(plotPath)), ".")
	if len(params) == 1 {
		var series []plot.SweepSeries
		for _, j := range limitInts(headline, 12) {
			y := make([]float64, len(table))
			for p := range table {
				y[p] = table[p][j]
			}
			series = append(series, plot.SweepSeries{Name: plotLabel(cols[j]), Y: y})
		}
		return plot.SweepLines(w, plotFormat, params[0].Name, params[0].Values, series, res.Crossings)
	}
	nx, ny := len(params[0].Values), len(params[1].Values)
	var hn []string
	var z [][][]float64
	for _, j := range limitInts(headline, 4) {
		g := make([][]float64, nx)
		for a := range g {
			g[a] = make([]float64, ny)
			for b := range g[a] {
				g[a][b] = table[a*ny+b][j]
			}
		}
		hn = append(hn, plotLabel(cols[j]))
		z = append(z, g)
	}
	return plot.SweepHeat(w, plotFormat, params[0].Name, params[1].Name, params[0].Values, params[1].Values, hn, z)
}

func overtaker(c sweep.Crossing) string {
	if c.AOvertakes {
		return c.A
	}
	return c.B
}

func overtaken(c sweep.Crossing) string {
	if c.AOvertakes {
		return c.B
	}
	return c.A
}

func nonNilMaps(m []map[string]any) []map[string]any {
	if m == nil {
		return []map[string]any{}
	}
	return m
}

func limitInts(s []int, n int) []int {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// selectColumns picks the columns whose names contain one of the
// substrings, or by default the verb's headline measures.
func selectColumns(cols, subs []string, verb string) []int {
	var out []int
	for j, c := range cols {
		keep := false
		if len(subs) > 0 {
			for _, s := range subs {
				keep = keep || strings.Contains(c, s)
			}
		} else {
			switch verb {
			case "robustness":
				keep = c == "robustness" || strings.HasSuffix(c, "].robustness")
			case "steady":
				keep = strings.HasPrefix(c, "throughput[")
			case "passage":
				keep = strings.HasPrefix(c, "points[") && strings.HasSuffix(c, ".cdf")
			case "simulate":
				keep = c == "robustness" || strings.HasPrefix(c, "throughput[") && strings.HasSuffix(c, ".throughput") ||
					strings.HasPrefix(c, "points[") && strings.HasSuffix(c, ".cdf")
			case "states":
				keep = c == "states" || c == "transitions"
			}
		}
		if keep {
			out = append(out, j)
		}
	}
	return out
}

// sweepPointBytes bounds what a point of the grid holds: its values and the
// measures of its verb, names included (a robustness point of a few
// machines: about 40 measures of 50 bytes).
const sweepPointBytes = 4096

// plotLabel shortens a column name for a legend: mappings[DIR/a.pepa].X
// becomes "a.pepa X".
func plotLabel(col string) string {
	if rest, ok := strings.CutPrefix(col, "mappings["); ok {
		if i := strings.Index(rest, "]."); i >= 0 {
			return filepath.Base(rest[:i]) + " " + rest[i+2:]
		}
	}
	return col
}

// isSweepPlot reports whether a sweep plot's file name is PNG or SVG.
func isSweepPlot(path string) bool {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".png", ".svg":
		return true
	}
	return false
}

// checkSweepPlot checks a sweep plot's file name (PNG or SVG).
func checkSweepPlot(e *env, verb, path string) int {
	if isSweepPlot(path) {
		return -1
	}
	return usageError(e, verb, "--plot wants a .png or .svg file name")
}
