package models

import (
	"context"
	"errors"
	"math"
	"os"
	"strings"
	"testing"

	"pepa/ctmc"
	"pepa/internal/testing/testchain"
	"pepa/internal/testing/testmodels"
	"pepa/passage"
)

func structureOf(t testing.TB, src string) *ctmc.Structure { return testchain.Structure(t, src) }

// TestDecomposedEqualsFlat: on mapping models of up to 6 machines, some
// coupled through shared networks, the analysis by groups gives the flat
// product chain's figures to 1e-12, under both semantics and with finished
// machines stopped or cycling.
func TestDecomposedEqualsFlat(t *testing.T) {
	sources := map[string]string{
		"six machines":            testmodels.Mapping(18, 6, 1.5),
		"three share a network":   testmodels.Networked(12, 4, [][]int{{1, 2, 3}}, 0.4),
		"two pairs":               testmodels.Networked(9, 5, [][]int{{1, 2}, {4, 5}}, 0.7),
		"every machine its own":   testmodels.Networked(8, 3, [][]int{{1}, {2}, {3}}, 1.1),
		"a store for every cycle": testmodels.Store(8, 3),
	}
	for _, f := range []string{"../testdata/mapping-a.pepa", "../testdata/mapping-b.pepa", "../testdata/cluster/uneven.pepa",
		"../../shared/examples/iccs2020-mapping-a.pepa", "../../shared/examples/case1-mapping-b.pepa"} {
		if b, err := os.ReadFile(f); err == nil {
			sources[f] = string(b)
		}
	}
	for name, src := range sources {
		s := structureOf(t, src)
		for _, run := range []struct {
			sem     passage.Semantics
			cycling bool
		}{{passage.Initial, false}, {passage.Initial, true}, {passage.Plugin, false}} {
			sem := run.sem
			if run.cycling && (name == "six machines" || name == "two pairs" || strings.Contains(name, "shared/examples")) {
				continue // the flag chain's 2^m would take long; the smaller models check the same
			}
			// Both sides within 1e-14 of the exact values, so 1e-12 apart at most.
			opt := Options{Question: Question{Beta: 30, Semantics: sem, Epsilon: 1e-14, Cycling: run.cycling}}
			dec, err := AnalyzeGroups(context.Background(), s, opt)
			if err != nil {
				t.Fatalf("%s %s: %v", name, sem, err)
			}
			fs, err := Stopped(structureOf(t, src), opt)
			if err != nil {
				t.Fatal(err)
			}
			flatChain, err := ctmc.Derive(context.Background(), fs, ctmc.DeriveOptions{})
			if err != nil {
				t.Fatal(err)
			}
			flat, err := Analyze(context.Background(), flatChain, opt)
			if err != nil {
				t.Fatalf("%s %s: %v", name, sem, err)
			}
			if len(dec.Machines) != len(flat.Machines) || dec.Solved != "decomposed" {
				t.Fatalf("%s: %d machines decomposed, %d flat", name, len(dec.Machines), len(flat.Machines))
			}
			for j := range dec.Machines {
				d, f := dec.Machines[j], flat.Machines[j]
				for _, v := range [][3]any{{"P(F <= beta)", d.PByBeta, f.PByBeta}, {"mean", d.Mean, f.Mean}, {"q99", d.Quantile, f.Quantile}} {
					x, y := v[1].(float64), v[2].(float64)
					tol := 1e-12
					if v[0] != "P(F <= beta)" {
						tol = 1e-9 * math.Max(1, math.Abs(y)) // means: solver tolerance; quantiles: bisection
					}
					if math.Abs(x-y) > tol {
						t.Errorf("%s %s %s %s: decomposed %.15g, flat %.15g", name, sem, d.Name, v[0], x, y)
					}
				}
			}
			if math.Abs(dec.Robustness-flat.Robustness) > 1e-12 || math.Abs(dec.PAllByBeta-flat.PAllByBeta) > 1e-12 ||
				math.Abs(dec.ExpectedMakespan-flat.ExpectedMakespan) > 1e-8*flat.ExpectedMakespan {
				t.Errorf("%s %s (cycling %v): decomposed %.12g %.12g %.12g, flat %.12g %.12g %.12g", name, sem, run.cycling,
					dec.Robustness, dec.PAllByBeta, dec.ExpectedMakespan, flat.Robustness, flat.PAllByBeta, flat.ExpectedMakespan)
			}
		}
	}
}

// TestCoupledRefused: two machines that synchronise with each other are
// not decomposed (and the flat analysis handles them).
func TestCoupledRefused(t *testing.T) {
	s := structureOf(t, `
r = 1;
A1 = (c1, infty).A1; A2 = (c2, infty).A2;
M1 = (c1, r).(sync, r).M1;
M2 = (c2, r).(sync, r).M2;
(A1 <> A2) <c1, c2> (M1 <sync> M2)`)
	_, err := ctmc.Decompose(s)
	var nd *ctmc.NotDecomposableError
	if !errors.As(err, &nd) || !strings.Contains(err.Error(), "M1 and M2 both perform action sync") {
		t.Fatalf("got %v", err)
	}
	s2 := structureOf(t, `
a = 1; b = 2;
M1 = (use, a).(work1, b).M1;
Lock = (use, infty).(free, 5).Lock;
M1 <use> Lock`)
	if _, err := ctmc.Decompose(s2); err == nil || !strings.Contains(err.Error(), "performs use passively") {
		t.Fatalf("stateful passive partner: %v", err)
	}
}

// TestBlockedAndHidden: a machine action that its partner never enables is
// blocked in the part's chain as in the product; hiding renames.
func TestBlockedAndHidden(t *testing.T) {
	src := `
A1 = (c1, infty).A1;
M1 = (c1, 1).(c2, 2).M1 + (c3, 3).M1;
M2 = (d1, 1).(d2, 2).M2;
B = (d1, infty).B;
((A1 <c1, c3> M1) <> ((B <d1> M2)/{d2}))`
	s := structureOf(t, src)
	parts, err := ctmc.Decompose(s)
	if err != nil {
		t.Fatal(err)
	}
	flat, err := ctmc.Derive(context.Background(), structureOf(t, src), ctmc.DeriveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := parts[0].Blocked; len(got) != 1 || got[0] != "c3" {
		t.Errorf("M1 blocked %v, want [c3]", got)
	}
	// Product of the parts' state counts equals the flat chain's.
	if n := parts[0].Chain.N * parts[1].Chain.N; n != flat.N {
		t.Errorf("parts %d x %d, flat %d", parts[0].Chain.N, parts[1].Chain.N, flat.N)
	}
	for e, a := range parts[1].Chain.Act {
		if name := s.Actions[a]; name == "d2" {
			t.Errorf("transition %d of M2's part still labelled d2, hidden above", e)
		}
	}
}

// TestGroupProbabilitiesEqualAnalyzeGroups: SolveGroupProbabilities
// (every group to beta only) gives AnalyzeGroups' P(F_j <= beta) and
// P(all <= beta) within epsilon, on models of machines alone and of
// machines coupled through networks, and counts every group's states.
func TestGroupProbabilitiesEqualAnalyzeGroups(t *testing.T) {
	for name, src := range map[string]string{
		"two pairs":             testmodels.Networked(9, 5, [][]int{{1, 2}, {4, 5}}, 0.7),
		"every machine its own": testmodels.Networked(8, 3, [][]int{{1}, {2}, {3}}, 1.1),
		"three share a network": testmodels.Networked(12, 4, [][]int{{1, 2, 3}}, 0.4),
	} {
		s := structureOf(t, src)
		const beta, eps = 20, 1e-12
		gp, err := SolveGroupProbabilities(context.Background(), s, nil, beta, eps, 0)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		res, err := AnalyzeGroups(context.Background(), s, Options{Question: Question{Beta: beta, Epsilon: eps}})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(gp.Machines) != len(res.Machines) {
			t.Fatalf("%s: %d machines, AnalyzeGroups %d", name, len(gp.Machines), len(res.Machines))
		}
		for i, mr := range res.Machines {
			if gp.Machines[i].Name != mr.Name || math.Abs(gp.PByBeta[i]-mr.PByBeta) > 1e-10 {
				t.Errorf("%s: %s P(F <= %g) = %.15g, AnalyzeGroups %s %.15g", name, gp.Machines[i].Name, float64(beta), gp.PByBeta[i], mr.Name, mr.PByBeta)
			}
		}
		if math.Abs(gp.PAll-res.PAllByBeta) > 1e-10 {
			t.Errorf("%s: P(all <= %g) = %.15g, AnalyzeGroups %.15g", name, float64(beta), gp.PAll, res.PAllByBeta)
		}
		if gp.States != res.States {
			t.Errorf("%s: %d states, AnalyzeGroups %d", name, gp.States, res.States)
		}
	}
}
