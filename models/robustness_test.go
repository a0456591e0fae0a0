package models

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"pepa/ctmc"
	"pepa/internal/testing/testchain"
	"pepa/passage"
)

func chainOf(t testing.TB, src string) *ctmc.Chain { return testchain.Chain(t, src) }

func chainOfFile(t testing.TB, name string) *ctmc.Chain { return testchain.ChainFile(t, name) }

var published = []struct {
	file    string
	initial []float64
	plugin  []float64
}{
	{"../../shared/examples/iccs2020-mapping-a.pepa",
		[]float64{0.9479664996, 0.9999999573, 0.9998649087, 0.8677076536, 0.9963294003},
		[]float64{0.9611916506, 0.9999999798, 0.9999157699, 0.8392089592, 0.9963099695}},
	{"../../shared/examples/iccs2020-mapping-b.pepa",
		[]float64{0.8960844473, 0.9831210805, 0.9939933862, 0.9906936458, 0.9163321694},
		[]float64{0.8915728832, 0.9856319205, 0.9951899774, 0.9920228500, 0.9071145601}},
}

// TestPublished: detected machines and both semantics give the published
// values to 1e-9.
func TestPublished(t *testing.T) {
	for _, pub := range published {
		c := chainOfFile(t, pub.file)
		for _, sem := range []struct {
			s    passage.Semantics
			want []float64
		}{{passage.Initial, pub.initial}, {passage.Plugin, pub.plugin}} {
			r, err := Analyze(context.Background(), c, Options{Question: Question{Beta: 45, Semantics: sem.s}})
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Machines) != 5 {
				t.Fatalf("%d machines found", len(r.Machines))
			}
			minWant := 1.0
			for j, m := range r.Machines {
				if math.Abs(m.PByBeta-sem.want[j]) > 1e-9 {
					t.Errorf("%s %s %s: %.10f, published %.10f", pub.file, sem.s, m.Name, m.PByBeta, sem.want[j])
				}
				minWant = math.Min(minWant, sem.want[j])
			}
			if math.Abs(r.Robustness-minWant) > 1e-9 || !r.Independent {
				t.Errorf("robustness %.10f, want %.10f (independent %v: %s)", r.Robustness, minWant, r.Independent, r.Dependence)
			}
		}
	}
}

// TestJointFigures: on an independent-machine model, P(max F <= beta) is the
// product of the machines' values, and E[max F] computed by integrating
// 1 - prod F_j agrees with the exact passage to "all finished" on the chain
// with completion flags (a linear solve).
func TestJointFigures(t *testing.T) {
	c := chainOfFile(t, "../testdata/mapping-a.pepa")
	r, err := Analyze(context.Background(), c, Options{Question: Question{Beta: 30}})
	if err != nil {
		t.Fatal(err)
	}
	machines, _ := FindMachines(c.S, nil)
	start := make([]float64, c.N)
	start[0] = 1
	fc, target, alpha, err := flagChain(context.Background(), c, machines, start, 0)
	if err != nil {
		t.Fatal(err)
	}
	pr := passage.Problem{Alpha: alpha, TargetStates: target}
	exact, err := passage.Mean(context.Background(), fc, pr)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(r.ExpectedMakespan-exact) > r.MakespanError || r.MakespanError > 1e-6*exact {
		t.Errorf("E[max F] = %.12g (bound %.3g), flag chain %.12g", r.ExpectedMakespan, r.MakespanError, exact)
	}
	rs, err := passage.Solve(context.Background(), fc, []passage.Problem{pr}, passage.Options{Horizon: 30})
	if err != nil {
		t.Fatal(err)
	}
	pAll, _ := rs[0].CDF(30)
	if math.Abs(pAll-r.PAllByBeta) > 1e-9 {
		t.Errorf("P(max F <= 30) = %.12g as a product, %.12g on the flag chain", r.PAllByBeta, pAll)
	}
}

// TestCoupledMachines: two machines that share a resource are not
// independent; the joint figures come from the chain with flags, and
// P(max <= beta) <= min_j P(F_j <= beta).
func TestCoupledMachines(t *testing.T) {
	c := chainOf(t, `
a = 1; b = 2;
M1 = (use, a).(work1, b).M1;
M2 = (use, a).(work2, b).M2;
Lock = (use, infty).(free, 5).Lock;
(M1 <> M2) <use> Lock`)
	r, err := Analyze(context.Background(), c, Options{Question: Question{Beta: 3}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Independent || len(r.Machines) != 2 {
		t.Fatalf("independent %v, machines %d", r.Independent, len(r.Machines))
	}
	if r.PAllByBeta > r.Robustness+1e-12 || r.PAllByBeta <= 0 {
		t.Errorf("P(all) %g, robustness %g", r.PAllByBeta, r.Robustness)
	}
	// E[max] comes from the flag chain's series; the linear solve on the
	// same chain is another way to it.
	machines, _ := FindMachines(c.S, nil)
	start := make([]float64, c.N)
	start[0] = 1
	fc, target, alpha, err := flagChain(context.Background(), c, machines, start, 0)
	if err != nil {
		t.Fatal(err)
	}
	exact, err := passage.Mean(context.Background(), fc, passage.Problem{Alpha: alpha, TargetStates: target})
	if err != nil {
		t.Fatal(err)
	}
	if d := math.Abs(r.ExpectedMakespan - exact); d > r.MakespanError+1e-12*exact || r.MakespanError > 1e-8*exact {
		t.Errorf("E[max F] = %.15g (error %.3g), linear solve %.15g", r.ExpectedMakespan, r.MakespanError, exact)
	}
	// Past MaxJointStates the joint figures are unavailable, with a
	// warning, and the machines' own figures are those above.
	capped, err := Analyze(context.Background(), c, Options{Question: Question{Beta: 3}, MaxJointStates: fc.N - 1})
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(capped.PAllByBeta) || !math.IsNaN(capped.ExpectedMakespan) || len(capped.Warnings) == 0 ||
		!strings.Contains(capped.Warnings[len(capped.Warnings)-1], "unavailable") {
		t.Errorf("capped joint: P %g, E %g, warnings %q", capped.PAllByBeta, capped.ExpectedMakespan, capped.Warnings)
	}
	for i := range r.Machines {
		if capped.Machines[i].PByBeta != r.Machines[i].PByBeta || capped.Machines[i].Mean != r.Machines[i].Mean {
			t.Errorf("machine %d changed with the joint capped", i)
		}
	}
	if _, _, _, err := flagChain(context.Background(), c, machines, start, 1); !errors.Is(err, ErrJointTooLarge) {
		t.Errorf("flag chain over a limit of 1: %v", err)
	}
	// With one machine selected, the makespan is that machine's
	// finishing time, coupled or not.
	one, err := Analyze(context.Background(), c, Options{Question: Question{Beta: 3, Machines: []string{"M2"}}})
	if err != nil {
		t.Fatal(err)
	}
	m2 := r.Machines[1]
	if one.PAllByBeta != m2.PByBeta || math.Abs(one.ExpectedMakespan-m2.Mean) > 1e-9*m2.Mean {
		t.Errorf("M2 alone: P(max <= 3) %.15g, E[max] %.15g; its own P %.15g, mean %.15g", one.PAllByBeta, one.ExpectedMakespan, m2.PByBeta, m2.Mean)
	}
}

func TestNoMachine(t *testing.T) {
	c := chainOf(t, "P = (a, 1).P2; P2 = (b, 1).P; Q = (c, 2).Q; P <> Q")
	if _, err := Analyze(context.Background(), c, Options{Question: Question{Beta: 1}}); err == nil {
		t.Fatal("a model without machines was analysed")
	}
}

func TestMaxMeanExponential(t *testing.T) {
	// Two independent exponentials: E[max] = 1/a + 1/b - 1/(a+b); the
	// remaining mean time of an exponential is its mean.
	a, b := 0.5, 2.0
	prod := func(t float64) float64 { return (1 - math.Exp(-a*t)) * (1 - math.Exp(-b*t)) }
	tail := func(T float64) float64 { return math.Exp(-a*T)/a + math.Exp(-b*T)/b }
	got, bound := MaxMean(prod, tail, 1/a, 1e-10, 0, QuadratureStart{})
	want := 1/a + 1/b - 1/(a+b)
	if math.Abs(got-want) > 1e-9 || bound > 1e-9 || math.Abs(got-want) > bound+1e-15 {
		t.Errorf("E[max] = %.15g (bound %g), want %.15g", got, bound, want)
	}
}

// TestQuestionCheck: Robustness refuses a question without meaning (its
// one validation, Question.check) and what a request adds to it.
func TestQuestionCheck(t *testing.T) {
	good := Question{Beta: 10, Semantics: passage.Initial}
	if err := good.check(); err != nil {
		t.Fatalf("a good question refused: %v", err)
	}
	for _, q := range []Question{
		{Beta: 0, Semantics: passage.Initial},
		{Beta: math.Inf(1), Semantics: passage.Initial},
		{Beta: 10, Semantics: "neither"},
		{Beta: 10, Semantics: passage.Plugin, Cycling: true},
		{Beta: 10, Semantics: passage.Initial, Transient: "no-such-engine"},
	} {
		if err := q.check(); err == nil {
			t.Errorf("%+v accepted", q)
		}
		if _, err := Robustness(context.Background(), []Input{{Name: "m"}}, Request{Question: q}); err == nil {
			t.Errorf("Robustness accepted %+v", q)
		}
	}
	if _, err := Robustness(context.Background(), []Input{{Name: "m"}}, Request{Question: good, Sensitivity: true, Level: 1}); err == nil {
		t.Error("Robustness accepted a sensitivity level of 1")
	}
	// Energy figures: initial semantics, finished machines stopped, a
	// budget of joules >= 0; refused before any model is read (the
	// input has none).
	plugin, cycling := good, good
	plugin.Semantics, cycling.Cycling = passage.Plugin, true
	for _, req := range []Request{
		{Question: plugin, Energy: &EnergyRequest{}},
		{Question: cycling, Energy: &EnergyRequest{Budget: 5}},
		{Question: good, Energy: &EnergyRequest{Budget: -1}},
		{Question: good, Energy: &EnergyRequest{Budget: math.NaN()}},
		{Question: good, Energy: &EnergyRequest{Budget: math.Inf(1)}},
	} {
		if _, err := Robustness(context.Background(), []Input{{Name: "m"}}, req); err == nil || !strings.Contains(err.Error(), "energy") {
			t.Errorf("Robustness on %+v, energy %+v: %v, want the energy request refused", req.Question, *req.Energy, err)
		}
	}
	// A good request of an input without a model: an error naming it, no panic.
	if _, err := Robustness(context.Background(), []Input{{Name: "m"}}, Request{Question: good}); err == nil || err.Error() != "m: no model" {
		t.Errorf("an input without a model: %v, want m: no model", err)
	}
}
