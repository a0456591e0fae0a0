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
	res, err := AnalyzeGroups(context.Background(), s, Options{Beta: beta, Epsilon: 1e-13})
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
