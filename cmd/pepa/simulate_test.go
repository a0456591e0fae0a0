package main

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"pepa/ctmc/simulate"
	"pepa/internal/testing/testchain"
	"pepa/models"
)

// TestSimulateOutputIndependentOfWorkers: the same seed and replications
// give the same bytes on one worker and on three.
func TestSimulateOutputIndependentOfWorkers(t *testing.T) {
	for _, args := range [][]string{
		{"--beta", "30", "--replications", "700"},
		{"--target-action", "compute3", "--at", "5,10,20", "--replications", "700", "--quantile", "0.5"},
		{"--max-batches", "3", "--batch-events", "300", "--replications", "5"},
	} {
		var outs []string
		for _, w := range []string{"1", "3"} {
			a := append([]string{"simulate", "--seed", "7", "--workers", w, "--format", "json"}, args...)
			a = append(a, "../../testdata/cluster/uneven.pepa")
			code, out, stderr := runPepa(t, "", a...)
			if code != exitOK {
				t.Fatalf("%v: exit %d: %s", a, code, stderr)
			}
			outs = append(outs, out)
		}
		if outs[0] != outs[1] {
			t.Fatalf("%v: output differs between 1 and 3 workers:\n%s\n%s", args, outs[0], outs[1])
		}
	}
}

// TestSimulateMatchesLibrary: the verb prints what the library computes
// for the same seed (the library's figures are checked against the exact
// solvers in package simulate).
func TestSimulateMatchesLibrary(t *testing.T) {
	code, out, stderr := runPepa(t, "", "simulate", "--seed", "3", "--replications", "900", "--beta", "30", "--format", "json", "../../testdata/cluster/paired.pepa")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got struct {
		Robustness   float64    `json:"robustness"`
		RobustnessCI [2]float64 `json:"robustness_ci"`
		Simulation   struct {
			Replications int `json:"replications"`
		} `json:"simulation"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	c := testchain.ChainFile(t, "../../testdata/cluster/paired.pepa")
	spec, _, err := models.SimulationSpec(c.S, 30, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	r, err := simulate.Robustness(context.Background(), c.S, spec, simulate.Options{Seed: 3, Replications: 900})
	if err != nil {
		t.Fatal(err)
	}
	if got.Robustness != r.Robustness.Value || got.RobustnessCI != [2]float64{r.Robustness.Lo, r.Robustness.Hi} || got.Simulation.Replications != 900 {
		t.Fatalf("verb: %+v; library: %+v", got, r.Robustness)
	}
}

// TestRobustnessSimulateFallback: robustness --simulate simulates a model
// whose chain does not fit --max-states and says so; without --simulate
// the same run fails; a model that fits is solved exactly.
func TestRobustnessSimulateFallback(t *testing.T) {
	model := "../../testdata/cluster/paired.pepa"
	code, out, stderr := runPepa(t, "", "robustness", "--beta", "30", "--flat", "--max-states", "100", "--simulate", "--replications", "600", model)
	if code != exitOK || !strings.Contains(out, "simulated: 95% CI robustness [") {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	if code, _, _ := runPepa(t, "", "robustness", "--beta", "30", "--flat", "--max-states", "100", model); code != exitInvalid {
		t.Fatalf("without --simulate: exit %d", code)
	}
	code, out, _ = runPepa(t, "", "robustness", "--beta", "30", "--flat", "--simulate", "--format", "json", model)
	var r struct {
		Solved     string  `json:"solved"`
		Robustness float64 `json:"robustness"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &r) != nil || r.Solved != "flat" || math.Abs(r.Robustness-0.6333024530) > 1e-9 {
		t.Fatalf("a chain that fits was not solved exactly: exit %d, %+v", code, r)
	}
}

func TestSimulateUsage(t *testing.T) {
	for _, args := range [][]string{
		{"simulate"},
		{"simulate", "--confidence", "1.5", "m.pepa"},
		{"simulate", "--target-action", "a", "--target", "P == Q", "m.pepa"},
		{"simulate", "--beta", "-3", "m.pepa"},
		{"simulate", "--quantile", "2", "--target-action", "a", "m.pepa"},
	} {
		if code, _, _ := runPepa(t, "", args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
	m := writeTemp(t, "m.pepa", "P = (a, 1).(b, 2).P; P\n")
	if code, _, stderr := runPepa(t, "", "simulate", "--target-action", "nosuch", m); code != exitInvalid || !strings.Contains(stderr, "nosuch") {
		t.Errorf("unknown action: exit %d, %s", code, stderr)
	}
	dead := writeTemp(t, "d.pepa", "P = (a, 1).Q; Q = (b, 1).Q; R = (c, 1).R; P <b, c> R\n")
	if code, _, stderr := runPepa(t, "", "simulate", "--max-batches", "2", dead); code != exitInvalid || !strings.Contains(stderr, "deadlock") {
		t.Errorf("steady state of a deadlocking model: exit %d, %s", code, stderr)
	}
}

func TestSimulateSweepHelp(t *testing.T) {
	for _, verb := range []string{"simulate", "sweep"} {
		code, out, _ := runPepa(t, "", verb, "--help")
		if code != exitOK || !strings.Contains(out, "Examples:") || !strings.Contains(out, "pepa "+verb) {
			t.Errorf("pepa %s --help: exit %d\n%s", verb, code, out)
		}
	}
}

// TestRobustnessSimulatesAGroup: with --simulate, the coupled group of
// shared-net.pepa (1,023 states) past --max-states 500 is simulated alone,
// M4 stays exact (its figures those of the exact run), and the joint
// figures carry intervals containing the exact ones.
func TestRobustnessSimulatesAGroup(t *testing.T) {
	model := "../../testdata/coupled/shared-net.pepa"
	type result struct {
		Machines []struct {
			Name string      `json:"name"`
			P    float64     `json:"p_by_beta"`
			PCI  *[2]float64 `json:"p_by_beta_ci"`
		} `json:"machines"`
		PAll   float64    `json:"p_all_by_beta"`
		PAllCI [2]float64 `json:"p_all_by_beta_ci"`
		Span   float64    `json:"expected_makespan"`
		SpanCI [2]float64 `json:"expected_makespan_ci"`
		Groups []struct {
			Solved string `json:"solved"`
		} `json:"groups"`
	}
	run := func(args ...string) result {
		t.Helper()
		code, out, stderr := runPepa(t, "", append([]string{"robustness", "--beta", "20", "--format", "json"}, append(args, model)...)...)
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var r result
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	exact := run()
	code, _, stderr := runPepa(t, "", "robustness", "--beta", "20", "--max-states", "500", model)
	if code != exitInvalid || !strings.Contains(stderr, "model too large") {
		t.Fatalf("past --max-states without --simulate: exit %d, %s", code, stderr)
	}
	sim := run("--max-states", "500", "--simulate", "--replications", "20000")
	if len(sim.Groups) != 2 || sim.Groups[0].Solved != "simulated" || sim.Groups[1].Solved != "alone" {
		t.Fatalf("groups %+v", sim.Groups)
	}
	if sim.Machines[3].PCI != nil || sim.Machines[3].P != exact.Machines[3].P {
		t.Errorf("M4 %+v, exact %g", sim.Machines[3], exact.Machines[3].P)
	}
	for j := 0; j < 3; j++ {
		ci := sim.Machines[j].PCI
		if ci == nil || !(ci[0] <= exact.Machines[j].P && exact.Machines[j].P <= ci[1]) {
			t.Errorf("%s: interval %v, exact %g", sim.Machines[j].Name, ci, exact.Machines[j].P)
		}
	}
	if !(sim.PAllCI[0] <= exact.PAll && exact.PAll <= sim.PAllCI[1]) || !(sim.SpanCI[0] <= exact.Span && exact.Span <= sim.SpanCI[1]) {
		t.Errorf("joint intervals %v %v, exact %g %g", sim.PAllCI, sim.SpanCI, exact.PAll, exact.Span)
	}
}
