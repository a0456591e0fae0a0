package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"regexp"
	"testing"
)

// TestSensitivityWithCoincidentRates: when an ideal and a perturbed rate
// have the same value (p5 = r5, p9 = r9), the two paths of M1 are the same
// terms by value, and merging them would make dP/dp9 wrong; --sensitivity
// keeps them apart. Checked against central differences of P(F <= beta)
// computed without --sensitivity.
func TestSensitivityWithCoincidentRates(t *testing.T) {
	b, err := os.ReadFile("../../testdata/mapping-a.pepa")
	if err != nil {
		t.Fatal(err)
	}
	setRate := func(src, name string, v float64) string {
		re := regexp.MustCompile(`\b` + name + ` = [0-9.]+;`)
		return re.ReplaceAllString(src, fmt.Sprintf("%s = %.17g;", name, v))
	}
	src := setRate(setRate(string(b), "p5", 0.300), "p9", 0.125)
	type machine struct {
		Name        string  `json:"name"`
		PByBeta     float64 `json:"p_by_beta"`
		Sensitivity struct {
			Rates []struct {
				Rate       string  `json:"rate"`
				Derivative float64 `json:"derivative"`
			} `json:"rates"`
		} `json:"sensitivity"`
	}
	solve := func(src string, args ...string) machine {
		path := writeTemp(t, "m.pepa", src)
		code, out, stderr := runPepa(t, "", append(append([]string{"robustness", "--beta", "30", "--format", "json", "--epsilon", "1e-13"}, args...), path)...)
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var r struct {
			Machines []machine `json:"machines"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		return r.Machines[0]
	}
	m := solve(src, "--sensitivity")
	checked := 0
	for _, rs := range m.Sensitivity.Rates {
		if rs.Rate != "p5" && rs.Rate != "p9" && rs.Rate != "r9" {
			continue
		}
		v := map[string]float64{"p5": 0.300, "p9": 0.125, "r9": 0.125}[rs.Rate]
		h := 1e-5 * v
		fd := (solve(setRate(src, rs.Rate, v+h)).PByBeta - solve(setRate(src, rs.Rate, v-h)).PByBeta) / (2 * h)
		if math.Abs(fd-rs.Derivative) > 1e-6*math.Max(1, math.Abs(fd)) {
			t.Errorf("%s d/d%s: %.10g, finite difference %.10g", m.Name, rs.Rate, rs.Derivative, fd)
		}
		checked++
	}
	if checked != 3 {
		t.Errorf("%d rates checked, want 3", checked)
	}
}
