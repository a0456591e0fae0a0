package models

import (
	"context"
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"
	"testing"

	"pepa/ctmc"
	"pepa/lang"
)

// analyzeSource loads, decomposes and analyses a model with sensitivities.
func analyzeSource(t *testing.T, src string, beta float64) *Result {
	t.Helper()
	m, diags := lang.Load("m.pepa", []byte(src))
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	s, err := ctmc.Compile(m, ctmc.DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	parts, err := ctmc.Decompose(s)
	if err != nil {
		t.Fatal(err)
	}
	res, err := AnalyzeGroups(context.Background(), s, Options{Question: Question{Beta: beta, Epsilon: 1e-13}})
	if err != nil {
		t.Fatal(err)
	}
	if err := Sensitivities(m, s, parts, res, 0.9); err != nil {
		t.Fatal(err)
	}
	return res
}

// setRate rewrites the definition "name = value;" of a model's source.
func setRate(src, name string, value float64) string {
	re := regexp.MustCompile(`(?m)\b` + name + ` = [0-9.eE+-]+;`)
	return re.ReplaceAllString(src, fmt.Sprintf("%s = %s;", name, strconv.FormatFloat(value, 'g', -1, 64)))
}

// TestDerivativesAgainstFiniteDifferences: every machine's dP/d rate
// against central differences on the model with the rate moved by 1e-5
// (relative), and the robustness radius against the model with every rate
// of the machine slowed by it.
func TestDerivativesAgainstFiniteDifferences(t *testing.T) {
	b, err := os.ReadFile("../testdata/mapping-b.pepa")
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	const beta = 30
	res := analyzeSource(t, src, beta)
	checked := 0
	for j, mr := range res.Machines {
		if mr.Sensitivity == nil || len(mr.Sensitivity.Rates) == 0 {
			t.Fatalf("%s: no sensitivities", mr.Name)
		}
		for _, rs := range mr.Sensitivity.Rates {
			h := 1e-5 * rs.Value
			up := analyzeSource(t, setRate(src, rs.Rate, rs.Value+h), beta).Machines[j].PByBeta
			down := analyzeSource(t, setRate(src, rs.Rate, rs.Value-h), beta).Machines[j].PByBeta
			fd := (up - down) / (2 * h)
			if math.Abs(fd-rs.Derivative) > 1e-6*math.Max(1, math.Abs(fd)) {
				t.Errorf("%s d/d%s: %.10g, finite difference %.10g", mr.Name, rs.Rate, rs.Derivative, fd)
			}
			if rs.Application == "" {
				t.Errorf("%s: rate %s has no application", mr.Name, rs.Rate)
			}
			checked++
		}
		// Slow every rate of the machine by the radius: P falls to the level.
		slowed := src
		for _, rs := range mr.Sensitivity.Rates {
			slowed = setRate(slowed, rs.Rate, rs.Value/mr.Sensitivity.Radius)
		}
		if p := analyzeSource(t, slowed, beta).Machines[j].PByBeta; math.Abs(p-0.9) > 1e-8 {
			t.Errorf("%s: slowed by its radius %g, P = %.12g, want 0.9", mr.Name, mr.Sensitivity.Radius, p)
		}
	}
	if checked < 10 {
		t.Fatalf("only %d derivatives checked", checked)
	}
}

// TestBottleneck: the machine that sets the robustness is the first of
// those with the smallest P(F <= beta); machines not computed (NaN) never
// are; none computed, none.
func TestBottleneck(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		p    []float64
		want int
	}{
		{[]float64{0.9, nan, 0.5, 0.5, 0.7}, 2},
		{[]float64{nan, 0.3}, 1},
		{[]float64{0.3, 0.2, 0.1}, 2},
		{[]float64{nan, nan}, -1},
		{nil, -1},
	} {
		r := &Result{}
		for _, p := range c.p {
			r.Machines = append(r.Machines, MachineResult{PByBeta: p})
		}
		if got := r.Bottleneck(); got != c.want {
			t.Errorf("%v: bottleneck %d, want %d", c.p, got, c.want)
		}
	}
}

// TestSensitivitySummary: on hand-made sensitivities, the machine of the
// smallest radius (the first of equals) and the application whose
// elasticities sum highest (the first by name of equals), worked out by
// hand.
func TestSensitivitySummary(t *testing.T) {
	r := &Result{Machines: []MachineResult{
		{Name: "M1", Sensitivity: &Sensitivity{Radius: 1.5, Rates: []RateSensitivity{
			{Elasticity: 0.2, Application: "A1"}, {Elasticity: 0.3, Application: "A1"}, {Elasticity: 0.9}}}},
		{Name: "M2"}, // no sensitivity: not a candidate
		{Name: "M3", Sensitivity: &Sensitivity{Radius: 1.2, Rates: []RateSensitivity{
			{Elasticity: 0.5, Application: "A0"}, {Elasticity: 0.1, Application: "A2"}}}},
		{Name: "M4", Sensitivity: &Sensitivity{Radius: 1.2}},
	}}
	s := summarize(r)
	// A1: 0.2 + 0.3 = 0.5 on M1, A0: 0.5 on M3 (equal: A0 first by name),
	// A2: 0.1; the rate without an application counts for none.
	if s == nil || s.Bottleneck != 2 || s.Costliest != "A0" || s.Machine != "M3" || s.Cost != 0.5 {
		t.Fatalf("summary %+v, want bottleneck 2 (M3), A0 on M3 at 0.5", s)
	}
	r.Machines[2].Sensitivity.Rates[0].Elasticity = 0.4
	if s := summarize(r); s.Costliest != "A1" || s.Machine != "M1" || s.Cost != 0.5 {
		t.Fatalf("summary %+v, want A1 on M1 at 0.5", s)
	}
	if s := summarize(&Result{Machines: []MachineResult{{Name: "M1"}}}); s != nil {
		t.Fatalf("no sensitivities: summary %+v, want nil", s)
	}
}
