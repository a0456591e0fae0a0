package models

import (
	"context"
	"errors"
	"math"
	"testing"

	"pepa/ctmc"
	"pepa/ctmc/simulate"
	"pepa/internal/testing/testchain"
	"pepa/internal/testing/testmodels"
)

// TestSimulatedGroup: a group past MaxGroupStates (four machines sharing
// one network) is simulated alone, the two machines alone and the pair
// sharing another network exact; every simulated interval, the joint ones
// included, contains the exact figure (the same analysis without the
// limit), and the exact groups' figures are the exact analysis' own.
// Without Simulate the analysis fails with ctmc.ErrTooManyStates.
func TestSimulatedGroup(t *testing.T) {
	src := testmodels.Networked(16, 8, [][]int{{1, 2, 3, 4}, {5, 6}}, 0.5)
	s := testchain.Structure(t, src)
	opt := Options{Question: Question{Beta: 25}}
	exact, err := AnalyzeGroups(context.Background(), s, opt)
	if err != nil {
		t.Fatal(err)
	}
	big := 0
	for _, g := range exact.Groups {
		big = max(big, g.States)
	}
	opt.MaxGroupStates = big - 1
	if _, err := AnalyzeGroups(context.Background(), s, opt); !errors.Is(err, ctmc.ErrTooManyStates) {
		t.Fatalf("past the limit without Simulate: %v", err)
	}
	opt.Simulate = &simulate.Options{Seed: 5, Replications: 20000}
	r, err := AnalyzeGroups(context.Background(), s, opt)
	if err != nil {
		t.Fatal(err)
	}
	simulated := 0
	for k, g := range r.Groups {
		if g.Solved == "simulated" {
			simulated++
			if !(g.PAllLo <= exact.Groups[k].PAllByBeta && exact.Groups[k].PAllByBeta <= g.PAllHi) {
				t.Errorf("group %v: P(all) in [%g, %g], exact %g", g.Machines, g.PAllLo, g.PAllHi, exact.Groups[k].PAllByBeta)
			}
		} else if g.PAllByBeta != exact.Groups[k].PAllByBeta {
			t.Errorf("exact group %v: %g, without the limit %g", g.Machines, g.PAllByBeta, exact.Groups[k].PAllByBeta)
		}
	}
	if simulated != 1 {
		t.Fatalf("%d groups simulated, want 1", simulated)
	}
	for j, m := range r.Machines {
		e := exact.Machines[j]
		if !math.IsNaN(m.PByBetaLo) {
			if !(m.PByBetaLo <= e.PByBeta && e.PByBeta <= m.PByBetaHi) || !(m.MeanLo <= e.Mean && e.Mean <= m.MeanHi) {
				t.Errorf("%s: P [%g, %g] mean [%g, %g], exact %g %g", m.Name, m.PByBetaLo, m.PByBetaHi, m.MeanLo, m.MeanHi, e.PByBeta, e.Mean)
			}
		} else if m.PByBeta != e.PByBeta || m.Mean != e.Mean {
			t.Errorf("%s: exact figures %g %g changed to %g %g", m.Name, e.PByBeta, e.Mean, m.PByBeta, m.Mean)
		}
	}
	if !(r.PAllLo <= exact.PAllByBeta && exact.PAllByBeta <= r.PAllHi) {
		t.Errorf("P(all) in [%g, %g], exact %g", r.PAllLo, r.PAllHi, exact.PAllByBeta)
	}
	if !(r.MakespanLo <= exact.ExpectedMakespan && exact.ExpectedMakespan <= r.MakespanHi) {
		t.Errorf("E[makespan] in [%g, %g], exact %g", r.MakespanLo, r.MakespanHi, exact.ExpectedMakespan)
	}
	// The intervals are narrow enough to mean something: the simulated
	// group's P(all) within 0.02, E[makespan] within 1%.
	if r.PAllHi-r.PAllLo > 0.02 || r.MakespanHi-r.MakespanLo > 0.01*exact.ExpectedMakespan {
		t.Errorf("intervals [%g, %g] and [%g, %g] are too wide", r.PAllLo, r.PAllHi, r.MakespanLo, r.MakespanHi)
	}
}
