package models

import (
	"context"
	"errors"
	"os"
	"testing"

	"pepa/ctmc"
	"pepa/ctmc/shard"
	"pepa/ctmc/simulate"
	"pepa/lang"
)

func loadInput(t *testing.T, path string) Input {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m, diags := lang.Load(path, src)
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	return Input{Name: path, Model: m}
}

// TestSimulateRobustnessAgainstExact: the simulated P(F_j <= beta) of
// every machine of a coupled mapping contains the exact figure (by
// groups, uniformization) within its interval (Clopper-Pearson at 0.999,
// a fixed seed); the kind and the statistics are the robustness run's.
func TestSimulateRobustnessAgainstExact(t *testing.T) {
	in := loadInput(t, "../testdata/cluster/paired.pepa")
	rep, err := Simulate(context.Background(), in, SimulationRequest{Compile: ctmc.DefaultOptions,
		Options: simulate.Options{Seed: 3, Confidence: 0.999, Replications: 20000}, Beta: 30})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Kind != "robustness" || rep.Robustness == nil || rep.Passage != nil || rep.Stats.Replications != 20000 {
		t.Fatalf("kind %q, robustness %v, passage %v, %d replications", rep.Kind, rep.Robustness != nil, rep.Passage != nil, rep.Stats.Replications)
	}
	exact, err := Robustness(context.Background(), []Input{in}, Request{Question: Question{Beta: 30}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{}
	for _, m := range exact.Results[0].Machines {
		want[m.Name] = m.PByBeta
	}
	if len(rep.Robustness.Machines) != len(want) || len(want) == 0 {
		t.Fatalf("%d simulated machines, %d exact", len(rep.Robustness.Machines), len(want))
	}
	for _, m := range rep.Robustness.Machines {
		if p := want[m.Name]; !(m.PByBeta.Lo <= p && p <= m.PByBeta.Hi) {
			t.Errorf("%s: exact P(F <= 30) = %.6f outside the simulated [%.6f, %.6f]", m.Name, p, m.PByBeta.Lo, m.PByBeta.Hi)
		}
	}
}

// TestSimulateKinds: a passage names its target; a target action the
// model lacks is a TargetActionsError; the steady state's shard counts
// streams (16 by default, shard 2 of 4: streams 4-7) and keeps a record,
// not figures.
func TestSimulateKinds(t *testing.T) {
	in := loadInput(t, "../testdata/pc-lan.pepa")
	opt := simulate.Options{Seed: 1, Confidence: 0.95, Replications: 200}
	rep, err := Simulate(context.Background(), in, SimulationRequest{Compile: ctmc.DefaultOptions, Options: opt,
		TargetActions: []string{"transmit1"}, Times: []float64{5}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Kind != "passage" || rep.Passage == nil || rep.What != "the first firing of transmit1" {
		t.Fatalf("kind %q, passage %v, what %q", rep.Kind, rep.Passage != nil, rep.What)
	}
	_, err = Simulate(context.Background(), in, SimulationRequest{Compile: ctmc.DefaultOptions, Options: opt, TargetActions: []string{"nosuch"}})
	var te *TargetActionsError
	if !errors.As(err, &te) {
		t.Fatalf("unknown target action: %v, want a TargetActionsError", err)
	}
	rep, err = Simulate(context.Background(), in, SimulationRequest{Compile: ctmc.DefaultOptions,
		Options: simulate.Options{Seed: 1, Confidence: 0.95}, Steady: simulate.SteadySpec{BatchEvents: 1000, MaxBatches: 3},
		Shard: shard.Index{K: 2, N: 4}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Kind != "steady" || rep.Steady != nil || rep.SteadyRecord == nil || rep.Units != "streams" || rep.Total != simulate.DefaultStreams || rep.First != 4 || rep.Count != 4 {
		t.Fatalf("steady shard: kind %q, figures %v, record %v, %s %d, range %d+%d", rep.Kind, rep.Steady != nil, rep.SteadyRecord != nil, rep.Units, rep.Total, rep.First, rep.Count)
	}
}
