package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"
	"testing"

	"pepa/ctmc/sweep"
)

// flattenJSON is the oracle of the sweep's flatteners: it reads a verb's
// JSON output generically, knowing no verb, and names its numbers as
// cli.md says a sweep's measures are named: object keys (sorted) joined
// with ".", array elements named by their identifying field (model, name,
// action, component:state, t=T,p=P) or index, a pair of numbers [lo, hi]
// as NAME.lo and NAME.hi, the echoed settings left out. (It is what the
// sweep did itself before it read the typed results.)
func flattenJSON(data []byte) ([]sweep.Column, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("reading the verb's JSON: %w", err)
	}
	var out []sweep.Column
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		join := func(k string) string {
			if prefix == "" {
				return k
			}
			return prefix + "." + k
		}
		switch x := v.(type) {
		case json.Number:
			if f, err := x.Float64(); err == nil {
				out = append(out, sweep.Column{Name: prefix, Value: f})
			}
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if echoed[k] {
					continue
				}
				walk(join(k), x[k])
			}
		case []any:
			if len(x) == 2 {
				lo, okLo := x[0].(json.Number)
				hi, okHi := x[1].(json.Number)
				if okLo && okHi {
					walk(prefix+".lo", lo)
					walk(prefix+".hi", hi)
					return
				}
			}
			for i, el := range x {
				obj, ok := el.(map[string]any)
				if !ok {
					continue
				}
				id := identifyJSON(obj)
				if id == "" {
					id = fmt.Sprint(i)
				}
				walk(prefix+"["+id+"]", obj)
			}
		}
	}
	walk("", v)
	return out, nil
}

// identifyJSON names an array element by its identifying fields.
func identifyJSON(obj map[string]any) string {
	str := func(k string) string {
		switch x := obj[k].(type) {
		case string:
			return x
		case json.Number:
			return k + "=" + x.String()
		}
		return ""
	}
	for _, k := range []string{"model", "name", "action"} {
		if s := str(k); s != "" {
			return s
		}
	}
	if c, s := str("component"), str("state"); c != "" {
		return c + ":" + s
	}
	var parts []string
	for _, k := range []string{"t", "p"} {
		if s := str(k); s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, ",")
}

func TestFlattenJSON(t *testing.T) {
	cols, err := flattenJSON([]byte(`{"beta": 45, "mappings": [{"model": "b.pepa", "robustness": 0.7, "machines": [{"name": "M1", "p_by_beta": 0.9}]},
		{"model": "a.pepa", "robustness": 0.8, "ok": true, "ci": [0.1, 0.2]}], "points": [{"t": 5, "cdf": 0.5}], "throughput": [{"action": "go", "throughput": 2}],
		"utilisation": [{"component": "P", "state": "Q", "population": 0.25}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []sweep.Column{{Name: "mappings[b.pepa].machines[M1].p_by_beta", Value: 0.9}, {Name: "mappings[b.pepa].robustness", Value: 0.7},
		{Name: "mappings[a.pepa].ci.lo", Value: 0.1}, {Name: "mappings[a.pepa].ci.hi", Value: 0.2}, {Name: "mappings[a.pepa].robustness", Value: 0.8},
		{Name: "points[t=5].cdf", Value: 0.5}, {Name: "points[t=5].t", Value: 5}, {Name: "throughput[go].throughput", Value: 2},
		{Name: "utilisation[P:Q].population", Value: 0.25}}
	if !reflect.DeepEqual(cols, want) {
		t.Fatalf("got %v", cols)
	}
}

// TestSweepColumnsAreTheJSON checks each verb's flattener, which reads the
// typed result, against the generic reading of the JSON document the verb
// prints of the same result: the same names, in the same order, the same
// numbers bit for bit. The runs reach the branches the flatteners take
// (one mapping and a ranking, groups, energy with machines not in name
// order, sensitivity, availability, simulated intervals; closed classes;
// the density, quantiles, the Laplace engine; the three kinds of
// simulation).
func TestSweepColumnsAreTheJSON(t *testing.T) {
	// Two closed classes, one of two states (a pair of numbers in the
	// JSON, read as an interval).
	classes := writeTemp(t, "classes.pepa", "P = (a, 1).P1 + (b, 2).Q1;\nP1 = (c, 1).P2;\nP2 = (d, 3).P1;\nQ1 = (e, 1).Q2;\nQ2 = (f, 1).Q3;\nQ3 = (g, 1).Q1;\nP\n")
	runs := [][]string{
		{"steady", classes},
		{"states", "testdata/pc-lan.pepa"},
		{"states", "--aggregate", "testdata/arrays.pepa"},
		{"steady", "testdata/pc-lan.pepa"},
		{"steady", "testdata/coupled/shared-net-stopped.pepa"},
		{"steady", "testdata/outbreak.pepa"},
		{"passage", "--target-action", "compute9", "--times", "0:60:5", "--pdf", "testdata/mapping-a.pepa"},
		{"passage", "--target", "PC1 == PC1' && Token1 != Send1", "--quantile", "0.5,0.99", "testdata/pc-lan.pepa"},
		{"passage", "--target-action", "compute9", "--at", "1e-7,45", "--quantile", "0.5,0.999999", "--transient", "laplace", "testdata/mapping-a.pepa"},
		{"robustness", "--beta", "45", "testdata/mapping-a.pepa"},
		{"robustness", "--beta", "45", "--sensitivity", "testdata/mapping-a.pepa"},
		{"robustness", "--beta", "45", "--busy-power", "250,180,200,220", "--idle-power", "60,40,50,50", "--energy-budget", "30000", "testdata/mapping-a.pepa"},
		{"robustness", "--beta", "30", "testdata/cluster/paired.pepa", "testdata/cluster/uneven.pepa", "testdata/cluster/round-robin.pepa"},
		{"robustness", "--beta", "45", "testdata/coupled/shared-net.pepa"},
		{"robustness", "--beta", "45", "testdata/owners/desktops.pepa", "testdata/owners/spread.pepa"},
		{"robustness", "--beta", "45", "--busy-power", "250,180,200,220", "--idle-power", "60,40,50,50", "--energy-budget", "30000", "testdata/owners/desktops.pepa", "testdata/owners/spread.pepa"},
		{"robustness", "--beta", "30", "--flat", "--max-states", "100", "--simulate", "--replications", "300", "--seed", "3", "testdata/cluster/paired.pepa", "testdata/cluster/uneven.pepa"},
		{"robustness", "--beta", "45", "--simulate", "--replications", "300", "--seed", "3", "testdata/mapping-a.pepa", "testdata/mapping-b.pepa"},
		{"simulate", "--beta", "30", "--replications", "300", "--seed", "2", "testdata/cluster/paired.pepa"},
		{"simulate", "--beta", "45", "--replications", "300", "--seed", "2", "--busy-power", "250,180,200,220", "--idle-power", "60,40,50,50", "--energy-budget", "30000", "testdata/mapping-a.pepa"},
		{"simulate", "--target-action", "compute3", "--times", "0:40:10", "--quantile", "0.5,0.9999", "--replications", "300", "--seed", "2", "testdata/cluster/uneven.pepa"},
		{"simulate", "--max-batches", "10", "--seed", "2", "testdata/pc-lan.pepa"},
	}
	for _, args := range runs {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var stderr bytes.Buffer
			e := &env{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &stderr}
			verbArgs := append([]string{}, args[1:]...)
			for i, a := range verbArgs {
				if strings.HasPrefix(a, "testdata/") {
					verbArgs[i] = "../../" + a
				}
			}
			ctx := context.Background()
			a, ctx, code := sweepParsers[args[0]](ctx, e, verbArgs)
			if code >= 0 {
				t.Fatalf("parse: exit %d: %s", code, stderr.String())
			}
			in, code := loadInputs(e, a.base())
			if code >= 0 {
				t.Fatalf("load: exit %d: %s", code, stderr.String())
			}
			r, err := a.solve(ctx, e, in, cliDeriver(e, a.base()))
			if err != nil {
				t.Fatal(err)
			}
			doc, err := json.Marshal(a.document(r))
			if err != nil {
				t.Fatal(err)
			}
			want, err := flattenJSON(doc)
			if err != nil {
				t.Fatal(err)
			}
			got := a.columns(r)
			if len(got) == 0 {
				t.Fatal("no measures")
			}
			if len(got) != len(want) {
				t.Errorf("%d columns, the JSON has %d", len(got), len(want))
			}
			for i := 0; i < len(got) || i < len(want); i++ {
				var g, w sweep.Column
				if i < len(got) {
					g = got[i]
				}
				if i < len(want) {
					w = want[i]
				}
				if g.Name != w.Name || math.Float64bits(g.Value) != math.Float64bits(w.Value) {
					t.Fatalf("column %d: flattened %s = %v, the JSON's %s = %v", i, g.Name, g.Value, w.Name, w.Value)
				}
			}
		})
	}
}

// TestNumberID checks an element's identity from a number against
// encoding/json's writing of the number.
func TestNumberID(t *testing.T) {
	for _, x := range []float64{0, 1, -2.5, 0.1, 45, 1e-6, 9.99e-7, 1e-7, 1.5e-10, 1e20, 1e21, 1.2345e22, -3e-8, 123456789.125, math.SmallestNonzeroFloat64, math.MaxFloat64} {
		b, err := json.Marshal(x)
		if err != nil {
			t.Fatal(err)
		}
		if got := numberID("t", x); got != "t="+string(b) {
			t.Errorf("numberID(%v) = %s, encoding/json writes %s", x, got, b)
		}
	}
}

// BenchmarkSweepColumns times a point's flattening, the typed flattener
// against the JSON round trip the sweep made before (marshal the
// document, read it back), on a ranking of three mappings with energy.
func BenchmarkSweepColumns(b *testing.B) {
	e := &env{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
	args := []string{"--beta", "30", "--busy-power", "250,180,200,220", "--idle-power", "60,40,50,50", "--energy-budget", "30000",
		"../../testdata/cluster/paired.pepa", "../../testdata/cluster/uneven.pepa", "../../testdata/cluster/round-robin.pepa"}
	a, ctx, code := sweepParsers["robustness"](context.Background(), e, args)
	if code >= 0 {
		b.Fatalf("parse: exit %d", code)
	}
	in, code := loadInputs(e, a.base())
	if code >= 0 {
		b.Fatalf("load: exit %d", code)
	}
	r, err := a.solve(ctx, e, in, cliDeriver(e, a.base()))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("typed", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if len(a.columns(r)) == 0 {
				b.Fatal("no columns")
			}
		}
	})
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			doc, err := json.Marshal(a.document(r))
			if err != nil {
				b.Fatal(err)
			}
			if cols, err := flattenJSON(doc); err != nil || len(cols) == 0 {
				b.Fatal("no columns", err)
			}
		}
	})
}
