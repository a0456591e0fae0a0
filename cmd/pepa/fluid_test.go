package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The fluid verb's contract (cli.md): the JSON keys, CSV rows, the
// approximation notice, exit codes, and figures checked against closed
// forms (the fluid steady state of P1[5] <a> Q1[2] is P1 = 10/3, Q1 =
// 7/6, throughputs 10/3; a tagged P's first b is hypoexponential).

const fluidArray0 = "P1 = (a,1).P2; P2 = (b,2).P1; Q1 = (a,3).Q2; Q2 = (d,4).Q1; P1[5] <a> Q1[2]\n"

func TestFluidJSON(t *testing.T) {
	model := writeTemp(t, "array0.pepa", fluidArray0)
	code, out, stderr := runPepa(t, "", "fluid", "--steady", "--times", "0:2:1", "--check", "--format", "json", model)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var doc struct {
		Model         string               `json:"model"`
		Approximation string               `json:"approximation"`
		Times         []float64            `json:"times"`
		Populations   map[string][]float64 `json:"populations"`
		Throughputs   map[string][]float64 `json:"throughputs"`
		Steady        struct {
			Populations map[string]float64 `json:"populations"`
			Throughputs map[string]float64 `json:"throughputs"`
			Residual    float64            `json:"residual"`
			Settled     bool               `json:"settled"`
		} `json:"steady"`
		Check struct {
			Against          string   `json:"against"`
			SteadyPopulation *float64 `json:"steady_population_distance"`
			SeriesPopulation *float64 `json:"series_population_distance"`
		} `json:"check"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if doc.Approximation != "fluid" || doc.Model != model || len(doc.Times) != 3 {
		t.Errorf("model %q approximation %q times %v", doc.Model, doc.Approximation, doc.Times)
	}
	if p := doc.Populations["P1"]; len(p) != 3 || p[0] != 5 {
		t.Errorf("populations[P1] = %v", p)
	}
	if len(doc.Throughputs["a"]) != 3 {
		t.Errorf("throughputs %v", doc.Throughputs)
	}
	want := map[string]float64{"P1": 10. / 3, "P2": 5. / 3, "Q1": 7. / 6, "Q2": 5. / 6}
	for k, w := range want {
		if math.Abs(doc.Steady.Populations[k]-w) > 1e-10 {
			t.Errorf("steady %s = %g, want %g", k, doc.Steady.Populations[k], w)
		}
	}
	for _, a := range []string{"a", "b", "d"} {
		if math.Abs(doc.Steady.Throughputs[a]-10./3) > 1e-10 {
			t.Errorf("steady throughput %s = %g", a, doc.Steady.Throughputs[a])
		}
	}
	if !doc.Steady.Settled || doc.Steady.Residual > 1e-10 {
		t.Errorf("settled %v residual %g", doc.Steady.Settled, doc.Steady.Residual)
	}
	if doc.Check.Against != "exact" || doc.Check.SteadyPopulation == nil || doc.Check.SeriesPopulation == nil {
		t.Errorf("check %+v", doc.Check)
	}
}

func TestFluidTextCSVAndPassage(t *testing.T) {
	model := writeTemp(t, "p.pepa", "P = (a, 2).P2; P2 = (b, 3).P; P[50]\n")
	code, out, stderr := runPepa(t, "", "fluid", "--target-action", "b", "--at", "1", "--pdf", model)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"approximation", "tagged passage", "mean:     0.8333333333"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runPepa(t, "", "fluid", "--target-action", "b", "--at", "1", "--format", "csv", model)
	if code != exitOK || !strings.HasPrefix(out, "measure,component,name,t,value\n") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	cdf := 1 - 3*math.Exp(-2) + 2*math.Exp(-3)
	found := false
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Split(line, ","); len(f) == 5 && f[0] == "passage_cdf" {
			found = true
			if v := parseF(t, f[4]); math.Abs(v-cdf) > 1e-8 {
				t.Errorf("passage_cdf %g, want %g", v, cdf)
			}
		}
	}
	if !found {
		t.Errorf("no passage_cdf row:\n%s", out)
	}
}

func parseF(t *testing.T, s string) float64 {
	var v float64
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestFluidUsageAndErrors(t *testing.T) {
	model := writeTemp(t, "array0.pepa", fluidArray0)
	shared := writeTemp(t, "shared.pepa", "C = (req, 1).C2; C2 = (think, 1).C; S = (req, 2).S2; S2 = (rest, 1).S; C[10] <req> S[3]\n")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"fluid", "--moments", "3", model}, exitUsage, "--moments must be 1 or 2"},
		{[]string{"fluid", "--passage", model}, exitUsage, "--passage needs --target-action or --target"},
		{[]string{"fluid", "--target-action", "a", "--target", "P1 == P2", model}, exitUsage, "give one of"},
		{[]string{"fluid", "--method", "euler", model}, exitUsage, "--method must be"},
		{[]string{"fluid", "--steady", "--plot", "x.png", model}, exitUsage, "--plot draws a time series"},
		{[]string{"fluid", "--target-action", "req", "--at", "1", shared}, exitInvalid, "name the component whose copy to follow (--tag)"},
		{[]string{"fluid", "--tag", "C", "--target-action", "rest", "--at", "1", shared}, exitInvalid, "C does not perform rest"},
	} {
		code, _, stderr := runPepa(t, "", tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("pepa %v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
	// A model of single components: computed, with the warning.
	single := writeTemp(t, "single.pepa", "P = (a, 1).P2; P2 = (b, 1).P; Q = (a, 2).Q2; Q2 = (c, 1).Q; P <a> Q\n")
	code, _, stderr := runPepa(t, "", "fluid", "--steady", single)
	if code != exitOK || !strings.Contains(stderr, "population 1") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

func TestFluidPlotAndOutput(t *testing.T) {
	model := writeTemp(t, "array0.pepa", fluidArray0)
	dir := t.TempDir()
	png, js := filepath.Join(dir, "f.png"), filepath.Join(dir, "f.json")
	code, out, stderr := runPepa(t, "", "fluid", "--times", "0:3:0.5", "--format", "json", "-o", js, "--plot", png, model)
	if code != exitOK || out != "" {
		t.Fatalf("exit %d, stdout %q, stderr %s", code, out, stderr)
	}
	b, err := os.ReadFile(png)
	if err != nil || len(b) < 1000 || string(b[1:4]) != "PNG" {
		t.Errorf("plot: %v, %d bytes", err, len(b))
	}
	if b, err := os.ReadFile(js); err != nil || !json.Valid(b) {
		t.Errorf("json output: %v", err)
	}
}
