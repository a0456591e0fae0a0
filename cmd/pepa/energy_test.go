package main

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// TestEnergyVerb: robustness with the machines' power on the command line
// adds the "energy" key with every field the documentation names, E[E]
// equal to the closed form from the printed means and makespan, the text
// and CSV columns, and --rank-by joint orders mappings by the joint
// figure; --busy-power by name overrides the model's //pepa:power.
func TestEnergyVerb(t *testing.T) {
	args := []string{"robustness", "--beta", "45", "--busy-power", "250,180,200,220", "--idle-power", "M1=60,M2=40,M3=50,M4=50",
		"--energy-budget", "30000", "--replications", "20000", "--format", "json", "../../testdata/mapping-a.pepa"}
	code, out, stderr := runPepa(t, "", args...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r struct {
		Machines []struct {
			Name string  `json:"name"`
			Mean float64 `json:"mean"`
		} `json:"machines"`
		Makespan float64                    `json:"expected_makespan"`
		PAll     float64                    `json:"p_all_by_beta"`
		Energy   map[string]json.RawMessage `json:"energy"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, k := range []string{"expected", "expected_error", "budget", "p_by_budget", "p_all_by_beta_within_budget", "how", "power", "p_all_by_beta_within_budget_ci", "confidence"} {
		if _, ok := r.Energy[k]; !ok {
			t.Errorf("energy has no %q: %s", k, out)
		}
	}
	var expected, pb, joint float64
	json.Unmarshal(r.Energy["expected"], &expected)
	json.Unmarshal(r.Energy["p_by_budget"], &pb)
	json.Unmarshal(r.Energy["p_all_by_beta_within_budget"], &joint)
	busy := []float64{250, 180, 200, 220}
	idle := []float64{60, 40, 50, 50}
	want := 0.0
	for j, m := range r.Machines {
		want += (busy[j] - idle[j]) * m.Mean
	}
	want += 200 * r.Makespan
	if math.Abs(expected-want) > 1e-9*want {
		t.Errorf("E[E] %.12g, closed form from the printed means %.12g", expected, want)
	}
	if !(joint <= math.Min(pb, r.PAll)+1e-9) || !(joint >= pb+r.PAll-1-1e-9) {
		t.Errorf("joint %.6f outside its Frechet bounds (P(E <= B) %.6f, P(all) %.6f)", joint, pb, r.PAll)
	}

	// Text and CSV of a ranking, by the joint figure.
	rank := []string{"robustness", "--beta", "45", "--busy-power", "250,180,200,220", "--energy-budget", "12000", "--rank-by", "joint",
		"--replications", "20000", "../../testdata/mapping-a.pepa", "../../testdata/mapping-b.pepa"}
	code, out, stderr = runPepa(t, "", rank...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, "E[energy] (J)") || !strings.Contains(out, "P(E <= B)") || !strings.Contains(out, "P(both)") {
		t.Errorf("ranking text without the energy columns:\n%s", out)
	}
	code, out, stderr = runPepa(t, "", append(rank, "--format", "csv")...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if lines[0] != "rank,model,robustness,p_all_by_beta,expected_makespan,group,states,expected_energy,p_by_budget,p_all_by_beta_within_budget" || len(lines) != 3 {
		t.Fatalf("CSV:\n%s", out)
	}
	var joints []float64
	for _, l := range lines[1:] {
		f := strings.Split(l, ",")
		var x float64
		json.Unmarshal([]byte(f[len(f)-1]), &x)
		joints = append(joints, x)
	}
	if joints[0] < joints[1] {
		t.Errorf("--rank-by joint: %v not in decreasing order\n%s", joints, out)
	}

	// The model's //pepa:power, overridden by name.
	model := writeTemp(t, "p.pepa", "//pepa:power M1 busy=100 idle=10\n//pepa:power M2 busy=100 idle=10\nA1 = (c1, infty).A1; A2 = (c2, infty).A2;\nM1 = (c1, 1).M1; M2 = (c2, 2).M2;\n(A1 <> A2) <c1, c2> (M1 <> M2)\n")
	code, out, stderr = runPepa(t, "", "robustness", "--beta", "2", "--busy-power", "M2=300", "--format", "json", model)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, `"M2":{"busy":300,"idle":10}`) && !strings.Contains(out, `"M2": {`) {
		t.Errorf("override not applied:\n%s", out)
	}
	var one struct {
		Energy struct {
			Expected float64 `json:"expected"`
		} `json:"energy"`
		Makespan float64 `json:"expected_makespan"`
	}
	json.Unmarshal([]byte(out), &one)
	// E[E] = 90 * 1 + 290 * 0.5 + 20 * E[max(F1, F2)], E[max] = 1 + 1/2 - 1/3.
	if w := 90 + 290*0.5 + 20*(1+0.5-1.0/3); math.Abs(one.Energy.Expected-w) > 1e-7 {
		t.Errorf("E[E] %.9g, by hand %.9g", one.Energy.Expected, w)
	}
}

// TestEnergyFlagErrors: a wrong power list, a budget without power or
// under plug-in semantics, and --rank-by joint without a budget are
// refused with a message and exit 2 (nothing computed).
func TestEnergyFlagErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--busy-power", "250,180"}, "--busy-power \"250,180\": 2 values for 4 machines"},
		{[]string{"--busy-power", "M9=3,M1=2"}, `--busy-power: no machine "M9"`},
		{[]string{"--energy-budget", "100"}, "no power"},
		{[]string{"--rank-by", "joint"}, "--rank-by joint ranks by P(makespan <= beta and E <= B): give --energy-budget"},
		{[]string{"--busy-power", "1,2,3,4", "--semantics", "plugin"}, "energy figures are defined under --semantics initial"},
		{[]string{"--idle-power", "1,2,3,4"}, "--idle-power needs the machines' busy power too"},
	} {
		args := append([]string{"robustness", "--beta", "45"}, tt.args...)
		code, _, stderr := runPepa(t, "", append(args, "../../testdata/mapping-a.pepa")...)
		if code == exitOK || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want %q", tt.args, code, stderr, tt.want)
		}
	}
}

// TestEnergySimulateVerb: simulate's energy figures (each run's energy
// from its finishing times) hold robustness's exact E[E] and P(E <= B)
// within their intervals.
func TestEnergySimulateVerb(t *testing.T) {
	flags := []string{"--beta", "45", "--busy-power", "250,180,200,220", "--idle-power", "60,40,50,50", "--energy-budget", "16000", "--format", "json"}
	type doc struct {
		Energy struct {
			Expected float64   `json:"expected"`
			Err      float64   `json:"expected_error"`
			PB       float64   `json:"p_by_budget"`
			PBCI     []float64 `json:"p_by_budget_ci"`
		} `json:"energy"`
	}
	var exact, sim doc
	for _, x := range []struct {
		verb string
		into *doc
	}{{"robustness", &exact}, {"simulate", &sim}} {
		args := append([]string{x.verb}, flags...)
		if x.verb == "simulate" {
			args = append(args, "--replications", "40000", "--confidence", "0.999")
		}
		code, out, stderr := runPepa(t, "", append(args, "../../testdata/mapping-a.pepa")...)
		if code != exitOK {
			t.Fatalf("%s: exit %d: %s", x.verb, code, stderr)
		}
		if err := json.Unmarshal([]byte(out), x.into); err != nil {
			t.Fatal(err)
		}
	}
	if math.Abs(sim.Energy.Expected-exact.Energy.Expected) > sim.Energy.Err {
		t.Errorf("simulated E[E] %.3f +- %.3f misses the exact %.6f", sim.Energy.Expected, sim.Energy.Err, exact.Energy.Expected)
	}
	if len(sim.Energy.PBCI) != 2 || exact.Energy.PB < sim.Energy.PBCI[0] || exact.Energy.PB > sim.Energy.PBCI[1] {
		t.Errorf("simulated P(E <= B) %v misses the exact %.9f", sim.Energy.PBCI, exact.Energy.PB)
	}
}

// TestObservedVerb: robustness --observed --now conditions the figures on
// a record: a machine whose cycle the record completes is finished at its
// recorded time, the others' means are after now, and an impossible row
// is reported at its line (exit 1).
func TestObservedVerb(t *testing.T) {
	rec := writeTemp(t, "rec.csv", "time,machine,action\n3.2,M1,compute1\n5,M1,compute5\n9.5,M1,compute9\n")
	code, out, stderr := runPepa(t, "", "robustness", "--beta", "45", "--observed", rec, "--now", "12", "--format", "json", "../../testdata/mapping-a.pepa")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r struct {
		Machines []struct {
			Name    string  `json:"name"`
			PByBeta float64 `json:"p_by_beta"`
			Mean    float64 `json:"mean"`
		} `json:"machines"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	for _, m := range r.Machines {
		switch {
		case m.Name == "M1" && (m.PByBeta != 1 || m.Mean != 9.5):
			t.Errorf("M1 finished at 9.5: P %g mean %g", m.PByBeta, m.Mean)
		case m.Name != "M1" && !(m.Mean > 12):
			t.Errorf("%s: mean %g, not after now (12)", m.Name, m.Mean)
		}
	}
	bad := writeTemp(t, "bad.csv", "time,machine,action\n3.2,M1,compute5\n")
	code, _, stderr = runPepa(t, "", "robustness", "--beta", "45", "--observed", bad, "../../testdata/mapping-a.pepa")
	if code != exitInvalid || !strings.Contains(stderr, "bad.csv:2: error: impossible: machine M1 cannot complete compute5 at 3.2") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

// TestParetoEnergyBudget: optimize --pareto --energy-budget gives every
// front mapping the figures robustness computes for its model: E[E] equal
// to the front's to 1e-9, and P(E <= B) and the joint figure within their
// bounds.
func TestParetoEnergyBudget(t *testing.T) {
	code, out, stderr := runPepa(t, "", "optimize", "../../testdata/spec-energy.json", "--beta", "40", "--pareto", "--energy-budget", "15000", "--format", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r struct {
		Front []struct {
			Expected float64 `json:"expected_energy"`
			PAll     float64 `json:"p_all_by_beta"`
			Energy   struct {
				Expected float64 `json:"expected"`
				PB       float64 `json:"p_by_budget"`
				Joint    float64 `json:"p_all_by_beta_within_budget"`
			} `json:"energy"`
		} `json:"front"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Front) == 0 {
		t.Fatalf("no front:\n%s", out)
	}
	for k, p := range r.Front {
		if math.Abs(p.Energy.Expected-p.Expected) > 1e-9*p.Expected {
			t.Errorf("front %d: E[E] %.12g from its model, %.12g on the front", k+1, p.Energy.Expected, p.Expected)
		}
		if !(p.Energy.PB > 0 && p.Energy.PB < 1) || p.Energy.Joint > math.Min(p.Energy.PB, p.PAll)+1e-9 {
			t.Errorf("front %d: P(E <= B) %g, joint %g, P(all) %g", k+1, p.Energy.PB, p.Energy.Joint, p.PAll)
		}
	}
	code, _, stderr = runPepa(t, "", "optimize", "../../testdata/spec-energy.json", "--beta", "40", "--energy-budget", "15000")
	if code != exitUsage || !strings.Contains(stderr, "--energy-budget goes with --pareto") {
		t.Errorf("--energy-budget without --pareto: exit %d, %q", code, stderr)
	}
}
