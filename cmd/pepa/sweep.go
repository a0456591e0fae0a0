package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"text/tabwriter"

	"pepa/internal/membudget"
	"pepa/models/shard"
	"pepa/models/sweep"
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

// runVerb runs a verb by name; set in init, because the verb table
// refers to runSweep, which runs verbs.
var runVerb func(ctx context.Context, e *env, name string, args []string) int

func init() {
	runVerb = func(ctx context.Context, e *env, name string, args []string) int {
		return verbs[name].run(ctx, e, args)
	}
}

// sweepVerbs are the verbs whose JSON measures a sweep collects.
var sweepVerbs = map[string]bool{"states": true, "steady": true, "passage": true, "robustness": true, "simulate": true}

func runSweep(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "sweep", "sweep --vary NAME=RANGE [--vary NAME=RANGE] [flags] VERB [verb flags] FILE...",
		`  pepa sweep --vary 'r3=0.1:0.5:0.05' robustness --beta 30 testdata/cluster/paired.pepa testdata/cluster/uneven.pepa
        robustness of both mappings as application 3's ideal rate r3 varies, and where the ranking changes
  pepa sweep --vary 'r1=0.1,0.2,0.4' --vary 'r2=0.1:0.3:0.1' --format csv robustness --beta 30 testdata/cluster/paired.pepa
        every measure of robustness on a 3 x 3 grid, one CSV row per point
  pepa sweep --vary 'r1=0.1:1:0.1' --columns 'compute1]' steady testdata/cluster/uneven.pepa
        the throughput of compute1 as r1 varies (add --plot r1.png to draw it)

RANGE is START:STOP:STEP or V1,V2,...; NAME a rate constant defined in every
model (NAME = EXPRESSION;), whose definition is replaced by each value. The
model files are the VERB's arguments ending in .pepa. The measures are the
numbers of 'pepa VERB --format json', named by their JSON paths
(mappings[a.pepa].robustness, throughput[walk1].throughput).
`)
	var vary varyFlags
	fs.Var(&vary, "vary", "a rate constant and its values: `NAME=START:STOP:STEP` or NAME=V1,V2,... (once or twice)")
	format := fs.String("format", "text", "output format: text, json or csv")
	out := fs.String("o", "", "write the result to `FILE` (atomically) instead of standard output")
	plotPath := fs.String("plot", "", "draw the measures against the parameter (a heat map for two) to `FILE`.png or .svg")
	columns := fs.String("columns", "", "comma-separated substrings: keep the measures whose names contain one (default for text and plots: the verb's headline measures)")
	workers := fs.Int("workers", 0, "points solved at once (default: every core)")
	tol := fs.Float64("crossing-tolerance", 1e-6, "refine each crossing to this fraction of the grid step")
	var mem memoryFlag
	mem.register(fs)
	shardArg := fs.String("shard", "", shardUsage+" (the grid's points; a shard also evaluates the points past its range that its last crossing needs)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printUsage(fs, e.stdout)
			return exitOK
		}
		fmt.Fprintf(e.stderr, "pepa sweep: %v\n", err)
		printUsage(fs, e.stderr)
		return exitUsage
	}
	rest := fs.Args()
	switch {
	case len(vary) == 0:
		return usageError(e, "sweep", "give --vary NAME=RANGE")
	case len(vary) > 2:
		return usageError(e, "sweep", "at most two --vary parameters")
	case len(vary) == 2 && vary[0].Name == vary[1].Name:
		return usageError(e, "sweep", "--vary %s given twice", vary[0].Name)
	case *format != "text" && *format != "json" && *format != "csv":
		return usageError(e, "sweep", "unknown --format %q (want text, json or csv)", *format)
	case !(*tol > 0 && *tol < 1):
		return usageError(e, "sweep", "--crossing-tolerance must be in (0, 1)")
	case len(rest) == 0:
		return usageError(e, "sweep", "no verb given (one of robustness, steady, passage, simulate, states)")
	case !sweepVerbs[rest[0]]:
		return usageError(e, "sweep", "cannot sweep verb %q (want robustness, steady, passage, simulate or states)", rest[0])
	}
	if *plotPath != "" {
		if code := checkSweepPlot(e, "sweep", *plotPath); code >= 0 {
			return code
		}
	}
	var ix shard.Index
	if *shardArg != "" {
		var err error
		if ix, err = shard.Parse(*shardArg); err != nil {
			return usageError(e, "sweep", "%v", err)
		}
		if *plotPath != "" {
			return usageError(e, "sweep", "--plot draws the whole sweep: give it to pepa merge")
		}
	}
	verb, verbArgs := rest[0], rest[1:]
	var fileIdx []int
	for i, a := range verbArgs {
		for _, bad := range []string{"--format", "-format", "-o", "--o", "--plot", "-plot", "--shard", "-shard"} {
			if a == bad || strings.HasPrefix(a, bad+"=") {
				return usageError(e, "sweep", "%s belongs to sweep, not to the verb", bad)
			}
		}
		if !strings.HasPrefix(a, "-") && strings.HasSuffix(strings.ToLower(a), ".pepa") {
			fileIdx = append(fileIdx, i)
		}
	}
	if len(fileIdx) == 0 {
		return usageError(e, "sweep", "no model file (an argument ending in .pepa) among the verb's arguments")
	}
	names := make([]string, len(vary))
	for i, p := range vary {
		names[i] = p.Name
	}
	srcs := make([][]byte, len(fileIdx))
	for k, i := range fileIdx {
		b, err := readInput(e, verbArgs[i])
		if err != nil {
			fmt.Fprintf(e.stderr, "pepa sweep: %v\n", err)
			return exitUsage
		}
		srcs[k] = b
		// Every model must define every varied constant.
		if _, err := sweep.EditSource(verbArgs[i], b, names, make([]float64, len(names))); err != nil {
			fmt.Fprintf(e.stderr, "%v\n", err)
			return exitInvalid
		}
	}
	tmp, err := os.MkdirTemp("", "pepa-sweep-")
	if err != nil {
		fmt.Fprintf(e.stderr, "pepa sweep: %v\n", err)
		return exitInvalid
	}
	defer os.RemoveAll(tmp)
	// Each model's chain is derived once, at the first point that needs
	// it, and rerated at the others.
	chains := &sweep.ChainCache{}
	var counter atomic.Int64
	// evaluate runs the verb on the models edited for one point and
	// returns its measures.
	evaluate := func(ctx context.Context, values []float64) ([]sweep.Column, error) {
		dir := filepath.Join(tmp, fmt.Sprint(counter.Add(1)))
		a := append([]string{}, verbArgs...)
		var replace []string
		keys := map[string]string{}
		for k, i := range fileIdx {
			edited, err := sweep.EditSource(verbArgs[i], srcs[k], names, values)
			if err != nil {
				return nil, err
			}
			d := filepath.Join(dir, fmt.Sprint(k))
			if err := os.MkdirAll(d, 0o755); err != nil {
				return nil, err
			}
			p := filepath.Join(d, filepath.Base(verbArgs[i]))
			if err := os.WriteFile(p, edited, 0o644); err != nil {
				return nil, err
			}
			a[i] = p
			keys[p] = fmt.Sprint(k)
			replace = append(replace, jsonQuoted(p), jsonQuoted(verbArgs[i]), p, verbArgs[i])
		}
		defer os.RemoveAll(dir)
		var stdout, stderr bytes.Buffer
		pe := &env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, chains: chains, chainKey: keys}
		code := runVerb(ctx, pe, verb, append(a, "--format", "json"))
		fix := strings.NewReplacer(replace...)
		if code != exitOK {
			return nil, fmt.Errorf("at %s: pepa %s failed:\n%s", pointString(names, values), verb, strings.TrimSpace(fix.Replace(stderr.String())))
		}
		return sweep.Flatten([]byte(fix.Replace(stdout.String())))
	}
	// One budget for the whole sweep: its points run at once in this
	// process and share it.
	ctx, code := mem.resolve(ctx, e, "sweep")
	if code >= 0 {
		return code
	}
	params := []sweep.Param(vary)
	npoints := int64(1)
	for _, p := range params {
		npoints *= int64(len(p.Values))
	}
	if err := membudget.Check(ctx, fmt.Sprintf("sweep: the grid and results of %d points", npoints), membudget.Bytes(npoints, sweepPointBytes), "fewer --vary values"); err != nil {
		fmt.Fprintf(e.stderr, "pepa sweep: %v\n", err)
		return exitInvalid
	}
	points := sweep.Grid(params)
	first, count := 0, len(points)
	if ix.N > 0 {
		first, count = ix.Range(len(points))
	}
	if e.stderrTerminal {
		fmt.Fprintf(e.stderr, "\rsweeping: %d points   ", count)
	}
	rows, err := sweep.Run(ctx, count, *workers, func(ctx context.Context, i int) ([]sweep.Column, error) {
		return evaluate(ctx, points[first+i])
	})
	if e.stderrTerminal {
		fmt.Fprint(e.stderr, "\r\033[K")
	}
	if err != nil {
		if ctx.Err() != nil {
			return exitInterrupted
		}
		fmt.Fprintf(e.stderr, "pepa sweep: %v\n", err)
		return exitInvalid
	}
	res := &sweep.Result{Verb: verb, Params: params, Series: []string{}, First: first, Rows: rows, Crossings: []sweep.Crossing{}}

	// Crossings: where one mapping's robustness overtakes another's.
	if len(params) == 1 && len(fileIdx) >= 2 && verb == "robustness" {
		for _, i := range fileIdx {
			res.Series = append(res.Series, verbArgs[i])
		}
		seriesOf := func(r []sweep.Column) []float64 {
			out := make([]float64, len(res.Series))
			for k, s := range res.Series {
				out[k] = math.NaN()
				for _, c := range r {
					if c.Name == "mappings["+s+"].robustness" {
						out[k] = c.Value
					}
				}
			}
			return out
		}
		// Points past the range are evaluated as far as a bracket that
		// starts in it needs (a shard's last crossing), once each.
		beyond := map[int][]float64{}
		at := func(ctx context.Context, k int) ([]float64, error) {
			if k < first+count {
				return seriesOf(rows[k-first]), nil
			}
			if v, ok := beyond[k]; ok {
				return v, nil
			}
			r, err := evaluate(ctx, points[k])
			if err != nil {
				return nil, err
			}
			beyond[k] = seriesOf(r)
			return beyond[k], nil
		}
		refine := func(ctx context.Context, x float64) ([]float64, error) {
			r, err := evaluate(ctx, []float64{x})
			if err != nil {
				return nil, err
			}
			return seriesOf(r), nil
		}
		cs, err := sweep.CrossingsFrom(ctx, params[0].Values, res.Series, at, first, first+count, refine, *tol)
		if err != nil {
			if ctx.Err() != nil {
				return exitInterrupted
			}
			fmt.Fprintf(e.stderr, "pepa sweep: refining a crossing: %v\n", err)
			return exitInvalid
		}
		sweep.SortCrossings(cs)
		res.Crossings = append(res.Crossings, cs...)
	}
	if st := chains.Stats(); st.Derived+st.Rerated+st.Changed > 0 {
		fmt.Fprintf(e.stderr, "pepa sweep: chains: %d derived (%.3g s), %d rerated from them (%.3g s)", st.Derived+st.Changed, st.DeriveTime.Seconds(), st.Rerated, st.RerateTime.Seconds())
		if st.Changed > 0 {
			fmt.Fprintf(e.stderr, ", %d of the derived at points whose values change the chain's structure", st.Changed)
		}
		fmt.Fprintln(e.stderr)
	}
	if ix.N > 0 {
		var models []shard.Model
		for k, i := range fileIdx {
			models = append(models, shard.Hash(verbArgs[i], srcs[k]))
		}
		skip := map[string]bool{"shard": true, "o": true, "format": true, "columns": true, "plot": true, "workers": true}
		h := shard.Header{Verb: "sweep", Command: shardCommand(fs, skip, rest), Models: models, Shard: ix.K, Shards: ix.N,
			Units: "points", Total: len(points), First: first, Count: count, Render: map[string]string{"format": *format, "columns": *columns}}
		return writeShard(e, "sweep", *out, h, res)
	}
	return writeSweep(e, res, *format, *columns, *plotPath, *out)
}

// writeSweep prints a sweep's result (and draws its plot): what sweep
// prints, and merge for a sweep's shards.
func writeSweep(e *env, res *sweep.Result, format, columns, plotPath, out string) int {
	verb, params, names, points := res.Verb, res.Params, res.Names(), res.Points()
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
		plotFormat := strings.TrimPrefix(strings.ToLower(filepath.Ext(plotPath)), ".")
		err := writeOutput(e, plotPath, func(w io.Writer) error {
			if len(params) == 1 {
				var series []sweep.Series
				for _, j := range limitInts(headline, 12) {
					y := make([]float64, len(table))
					for p := range table {
						y[p] = table[p][j]
					}
					series = append(series, sweep.Series{Name: plotLabel(cols[j]), Y: y})
				}
				return sweep.PlotLines(w, plotFormat, params[0].Name, params[0].Values, series, crossings)
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
			return sweep.PlotHeat(w, plotFormat, params[0].Name, params[1].Name, params[0].Values, params[1].Values, hn, z)
		})
		if err != nil {
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

func jsonQuoted(s string) string {
	var b bytes.Buffer
	writeJSONString(&b, s)
	return b.String()
}

func writeJSONString(b *bytes.Buffer, s string) {
	q := fmt.Sprintf("%q", s) // the same as JSON for the paths we write
	b.WriteString(q)
}

func pointString(names []string, values []float64) string {
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + " = " + sweep.FormatValue(values[i])
	}
	return strings.Join(parts, ", ")
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

// checkSweepPlot checks a sweep plot's file name (PNG or SVG).
func checkSweepPlot(e *env, verb, path string) int {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".png", ".svg":
		return -1
	}
	return usageError(e, verb, "--plot wants a .png or .svg file name")
}
