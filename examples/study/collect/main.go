package main

import (
	"encoding/csv"
	"flag"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// row is one mapping of one instance.
type row struct {
	class, mapping   string
	instance         int
	robustness, pAll float64
	makespan, beta   float64
	relative         float64 // expected makespan over the instance's fastest
	rank             int     // by robustness within the instance, 1 the most robust
	heuristic        bool
}

func main() {
	tie := flag.Float64("tie", 0.01, "expected makespans within this relative difference are equal")
	out := flag.String("o", "results.csv", "the CSV of every mapping of every instance")
	plotPath := flag.String("plot", "robustness-makespan.png", "the plot (.png or .svg)")
	summary := flag.String("summary", "summary.txt", "the answer to the study's question")
	flag.Parse()
	rows, err := read(flag.Args())
	if err == nil {
		err = writeAtomic(*out, func(w io.Writer) error { return writeCSV(w, rows) })
	}
	if err == nil {
		err = writeAtomic(*plotPath, func(w io.Writer) error { return drawPlot(w, strings.TrimPrefix(filepath.Ext(*plotPath), "."), rows) })
	}
	if err == nil {
		err = writeAtomic(*summary, func(w io.Writer) error { return summarize(w, rows, *tie) })
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "collect:", err)
		os.Exit(1)
	}
}

// read reads the rows files, naming each row by its model's path
// (.../CLASS/INSTANCE/models/MAPPING.pepa), and ranks each instance.
func read(files []string) ([]row, error) {
	var rows []row
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		recs, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if len(recs) < 2 || strings.Join(recs[0], ",") != "model,robustness,p_all_by_beta,expected_makespan,states,semantics,beta" {
			return nil, fmt.Errorf("%s: not the output of pepa robustness --format csv --summary", name)
		}
		var inst []row
		for _, rec := range recs[1:] {
			parts := strings.Split(filepath.ToSlash(rec[0]), "/")
			if len(parts) < 4 {
				return nil, fmt.Errorf("%s: model %s is not CLASS/INSTANCE/models/MAPPING.pepa", name, rec[0])
			}
			n := len(parts)
			r := row{class: parts[n-4], mapping: strings.TrimSuffix(parts[n-1], ".pepa")}
			r.heuristic = !strings.HasPrefix(r.mapping, "random")
			var errs [5]error
			r.instance, errs[0] = strconv.Atoi(parts[n-3])
			r.robustness, errs[1] = strconv.ParseFloat(rec[1], 64)
			r.pAll, errs[2] = strconv.ParseFloat(rec[2], 64)
			r.makespan, errs[3] = strconv.ParseFloat(rec[3], 64)
			r.beta, errs[4] = strconv.ParseFloat(rec[6], 64)
			for _, err := range errs {
				if err != nil {
					return nil, fmt.Errorf("%s: %v", name, err)
				}
			}
			inst = append(inst, r)
		}
		fastest := math.Inf(1)
		for _, r := range inst {
			fastest = math.Min(fastest, r.makespan)
		}
		sort.SliceStable(inst, func(i, j int) bool { return inst[i].robustness > inst[j].robustness })
		for k := range inst {
			inst[k].relative = inst[k].makespan / fastest
			inst[k].rank = k + 1
		}
		rows = append(rows, inst...)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("no rows (give the instances' rows.csv files)")
	}
	return rows, nil
}

func writeCSV(w io.Writer, rows []row) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"class", "instance", "mapping", "kind", "beta", "robustness", "p_all_by_beta", "expected_makespan", "relative_makespan", "rank"})
	g := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	for _, r := range rows {
		kind := "random"
		if r.heuristic {
			kind = "heuristic"
		}
		cw.Write([]string{r.class, strconv.Itoa(r.instance), r.mapping, kind, g(r.beta), g(r.robustness), g(r.pAll), g(r.makespan), g(r.relative), strconv.Itoa(r.rank)})
	}
	cw.Flush()
	return cw.Error()
}

// classes lists the classes in order of first appearance.
func classes(rows []row) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range rows {
		if !seen[r.class] {
			seen[r.class] = true
			out = append(out, r.class)
		}
	}
	return out
}

// drawPlot: robustness against expected makespan relative to the
// instance's fastest mapping, every mapping of every instance; a colour
// per class, filled circles for the heuristics, crosses for random
// mappings.
func drawPlot(w io.Writer, format string, rows []row) error {
	palette := []color.RGBA{{0x1f, 0x77, 0xb4, 0xff}, {0xd6, 0x27, 0x28, 0xff}, {0x2c, 0xa0, 0x2c, 0xff}, {0x94, 0x67, 0xbd, 0xff}}
	p := plot.New()
	p.Title.Text = "robustness against expected makespan, every mapping of every instance"
	p.X.Label.Text = "expected makespan / the instance's fastest mapping's"
	p.Y.Label.Text = "robustness min_j P(F_j ≤ β)"
	p.Add(plotter.NewGrid())
	// The upper right is empty: a slower mapping is rarely as robust.
	p.Legend.Top = true
	p.Legend.Left = false
	p.Y.Min, p.Y.Max = 0, 1
	p.X.Min = 1
	p.Y.Tick.Marker = plot.ConstantTicks(ticks(0, 1, 0.1))
	for ci, class := range classes(rows) {
		for _, heuristic := range []bool{true, false} {
			var pts plotter.XYs
			for _, r := range rows {
				if r.class == class && r.heuristic == heuristic {
					pts = append(pts, plotter.XY{X: r.relative, Y: r.robustness})
				}
			}
			if len(pts) == 0 {
				continue
			}
			s, err := plotter.NewScatter(pts)
			if err != nil {
				return err
			}
			s.GlyphStyle.Color = palette[ci%len(palette)]
			s.GlyphStyle.Radius = vg.Points(2.5)
			label := class + ", random mappings"
			s.GlyphStyle.Shape = draw.CrossGlyph{}
			if heuristic {
				s.GlyphStyle.Shape = draw.CircleGlyph{}
				label = class + ", heuristics"
			}
			p.Add(s)
			p.Legend.Add(label, s)
		}
	}
	wt, err := p.WriterTo(7*vg.Inch, 4.5*vg.Inch, format)
	if err != nil {
		return err
	}
	_, err = wt.WriteTo(w)
	return err
}

// ticks are labelled ticks from lo to hi by step.
func ticks(lo, hi, step float64) []plot.Tick {
	var out []plot.Tick
	for k := 0; lo+float64(k)*step <= hi+1e-9; k++ {
		x := lo + float64(k)*step
		out = append(out, plot.Tick{Value: x, Label: strconv.FormatFloat(x, 'g', 3, 64)})
	}
	return out
}

// summarize answers the study's question per class.
func summarize(w io.Writer, rows []row, tie float64) error {
	for _, class := range classes(rows) {
		byInst := map[int][]row{}
		var ids []int
		for _, r := range rows {
			if r.class != class {
				continue
			}
			if byInst[r.instance] == nil {
				ids = append(ids, r.instance)
			}
			byInst[r.instance] = append(byInst[r.instance], r)
		}
		sort.Ints(ids)
		var diffs []float64
		var worst struct {
			d        float64
			instance int
			a, b     string
		}
		notFastest, heuristicBest, mappings := 0, 0, 0
		for _, id := range ids {
			inst := byInst[id]
			mappings += len(inst)
			// inst is sorted by robustness, most robust first.
			if inst[0].relative > 1+tie {
				notFastest++
			}
			if inst[0].heuristic {
				heuristicBest++
			}
			for i := range inst {
				for j := i + 1; j < len(inst); j++ {
					a, b := inst[i], inst[j]
					if math.Abs(a.makespan-b.makespan) > tie*math.Min(a.makespan, b.makespan) {
						continue
					}
					d := math.Abs(a.robustness - b.robustness)
					diffs = append(diffs, d)
					if d > worst.d {
						worst.d, worst.instance, worst.a, worst.b = d, id, a.mapping, b.mapping
					}
				}
			}
		}
		sort.Float64s(diffs)
		fmt.Fprintf(w, "%s: %d instances, %d mappings\n", class, len(ids), mappings)
		fmt.Fprintf(w, "  pairs of equally fast mappings (expected makespans within %g%%): %d\n", 100*tie, len(diffs))
		if len(diffs) > 0 {
			over := 0
			for _, d := range diffs {
				if d > 0.01 {
					over++
				}
			}
			fmt.Fprintf(w, "  of them, robustness differs by more than 0.01 in %d (%.0f%%); difference median %.4f, largest %.4f (instance %d, %s and %s)\n",
				over, 100*float64(over)/float64(len(diffs)), diffs[len(diffs)/2], worst.d, worst.instance, worst.a, worst.b)
		}
		fmt.Fprintf(w, "  the most robust mapping is slower than the fastest (by more than %g%%) in %d of %d instances; it is a heuristic's in %d\n",
			100*tie, notFastest, len(ids), heuristicBest)
	}
	return nil
}

// writeAtomic writes a file through a temporary file renamed into place.
func writeAtomic(path string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".collect-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
