package fluid

import (
	"context"
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestPluginReference compares time series, steady states and
// throughputs with the PEPA Eclipse Plug-in's ODE analysis of the same
// models (testdata/fluid/plugin, README.md there says how the numbers
// were obtained; the plug-in's own models live in shared/fluid-plugin
// beside the project, being other people's files): every population within 1e-7 of its group's copies
// (both sides integrate at rtol 1e-10), the steady states within 1e-6
// (the plug-in's stops when a step changes the populations by less than
// its norm), every throughput within 1e-7 of the largest.
func TestPluginReference(t *testing.T) {
	files, err := filepath.Glob("../../testdata/fluid/plugin/*.series.csv")
	if err != nil || len(files) < 7 {
		t.Fatalf("reference files: %v %v", files, err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".series.csv")
		t.Run(name, func(t *testing.T) {
			src, err := pluginModel(name, f)
			if err != nil {
				t.Skip(err)
			}
			_, fm := load(t, string(src))
			head, series, steady := readReference(t, f)
			cols := pluginColumns(t, fm, head)
			var times []float64
			for _, r := range series {
				times = append(times, r[0])
			}
			s, err := fm.Series(context.Background(), times, 1, Options{RelTol: 1e-10, AbsTol: 1e-12})
			if err != nil {
				t.Fatal(err)
			}
			st, err := fm.SteadyState(context.Background(), 1, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if !st.Settled {
				t.Fatalf("not settled: %+v", st)
			}
			copies := func(i int) float64 { return float64(fm.Groups[fm.groupOf(i)].Copies) }
			top := 0.0
			for _, v := range steady[1:] {
				top = math.Max(top, v)
			}
			compared, worst, worstSteady := 0, 0.0, 0.0
			for j, c := range cols {
				for k, r := range series {
					want := r[j+1]
					got := 0.0
					if c.pop >= 0 {
						got = s.Populations[c.pop][k]
						worst = math.Max(worst, math.Abs(got-want)/copies(c.pop))
						if math.Abs(got-want) > 1e-7*copies(c.pop) {
							t.Errorf("t=%g %s: %.12g, plug-in %.12g", r[0], head[j+1], got, want)
						}
					} else {
						got = s.Throughputs[c.label][k]
						if math.Abs(got-want) > 1e-7*top {
							t.Errorf("t=%g %s: %.12g, plug-in %.12g", r[0], head[j+1], got, want)
						}
					}
					compared++
				}
				want := steady[j+1]
				if c.pop >= 0 {
					worstSteady = math.Max(worstSteady, math.Abs(st.Populations[c.pop]-want)/copies(c.pop))
					if got := st.Populations[c.pop]; math.Abs(got-want) > 1e-6*copies(c.pop) {
						t.Errorf("steady %s: %.12g, plug-in %.12g", head[j+1], got, want)
					}
				} else if got := st.Throughputs[c.label]; math.Abs(got-want) > 1e-6*top {
					t.Errorf("steady %s: %.12g, plug-in %.12g", head[j+1], got, want)
				}
			}
			t.Logf("%d figures over %d times, %d columns; populations within %.2g of their copies (steady %.2g)", compared, len(times), len(cols), worst, worstSteady)
		})
	}
}

// readReference reads a reference file: its header (from t on), the
// series rows and the steady row (t first).
func readReference(t *testing.T, path string) (head []string, series [][]float64, steady []float64) {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	head = rows[0][1:]
	for _, r := range rows[1:] {
		v := make([]float64, len(r)-1)
		for i, x := range r[1:] {
			if v[i], err = strconv.ParseFloat(x, 64); err != nil {
				t.Fatal(err)
			}
		}
		if r[0] == "steady" {
			steady = v
		} else {
			series = append(series, v)
		}
	}
	if steady == nil || len(series) < 2 {
		t.Fatalf("%s: no steady row or too few series rows", path)
	}
	return head, series, steady
}

// pluginModel reads the model beside a reference file, or, for the
// plug-in's own models, which are not the project's to commit, from
// shared/fluid-plugin beside the project ($PEPA_FLUID_PLUGIN elsewhere).
func pluginModel(name, csv string) ([]byte, error) {
	local := strings.TrimSuffix(csv, ".series.csv") + ".pepa"
	if src, err := os.ReadFile(local); err == nil {
		return src, nil
	}
	dirs := []string{os.Getenv("PEPA_FLUID_PLUGIN"), "../../../shared/fluid-plugin", "../../../../shared/fluid-plugin"}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if src, err := os.ReadFile(filepath.Join(d, name+".pepa")); err == nil {
			return src, nil
		}
	}
	return nil, fmt.Errorf("%s.pepa (the plug-in's own model) is in none of shared/fluid-plugin, $PEPA_FLUID_PLUGIN", name)
}

type pluginColumn struct{ pop, label int }

// pluginColumns maps the plug-in's columns to populations and labels:
// derivatives by name, anonymous ones by the plug-in's printing of them
// (rates as Java prints doubles), which is rebuilt from the activities.
func pluginColumns(t *testing.T, fm *Model, head []string) []pluginColumn {
	byName := map[string]int{}
	for i := 0; i < fm.Dim; i++ {
		g := fm.Groups[fm.groupOf(i)]
		byName[g.Component+":"+pluginName(fm, i)] = i
	}
	var out []pluginColumn
	for _, h := range head[1:] {
		if a, ok := strings.CutPrefix(h, "throughput:"); ok {
			li := -1
			for k, l := range fm.Labels {
				if l == a {
					li = k
				}
			}
			if li < 0 {
				t.Fatalf("no label %s (have %v)", a, fm.Labels)
			}
			out = append(out, pluginColumn{pop: -1, label: li})
			continue
		}
		i, ok := byName[h]
		if !ok {
			t.Fatalf("no population for the plug-in's %q (have %v)", h, byName)
		}
		out = append(out, pluginColumn{pop: i, label: -1})
	}
	if len(out) != fm.Dim+len(fm.Labels)-countTau(fm) {
		t.Fatalf("%d columns for %d populations and %d labels", len(out), fm.Dim, len(fm.Labels))
	}
	return out
}

func countTau(fm *Model) int {
	for _, l := range fm.Labels {
		if l == "tau" {
			return 1
		}
	}
	return 0
}

// pluginName prints population i's derivative as the plug-in does.
func pluginName(fm *Model, i int) string {
	g := fm.Groups[fm.groupOf(i)]
	s := g.States[i-g.Offset]
	if !strings.ContainsAny(s, "(.") {
		return s
	}
	var parts []string
	for _, a := range fm.acts {
		if int(a.src) == i {
			parts = append(parts, "("+a.action+", "+javaDouble(a.rate)+")."+pluginName(fm, int(a.dst)))
		}
	}
	return strings.Join(parts, " + ")
}

// javaDouble formats x as Java's Double.toString does for the rates here.
func javaDouble(x float64) string {
	if x >= 1e-3 && x < 1e7 {
		s := strconv.FormatFloat(x, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	e := int(math.Floor(math.Log10(x)))
	m := strconv.FormatFloat(x/math.Pow(10, float64(e)), 'f', -1, 64)
	if !strings.Contains(m, ".") {
		m += ".0"
	}
	return m + "E" + strconv.Itoa(e)
}
