package passage

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"pepa/ctmc"
)

// denseMean is the mean passage time by one dense solve of
// (-S) m = 1 over every non-target state that can reach the target
// (the reference: no blocks, no iteration).
func denseMean(t *testing.T, c *ctmc.Chain, pr Problem) float64 {
	t.Helper()
	isTA := map[int32]bool{}
	for _, a := range pr.TargetActions {
		isTA[a] = true
	}
	n := c.N
	a := mat.NewDense(n, n, nil)
	b := mat.NewVecDense(n, nil)
	for i := 0; i < n; i++ {
		b.SetVec(i, 1)
		if pr.TargetStates != nil && pr.TargetStates[i] {
			a.Set(i, i, 1)
			b.SetVec(i, 0)
			continue
		}
		for e := c.RowPtr[i]; e < c.RowPtr[i+1]; e++ {
			j := int(c.Col[e])
			ends := isTA[c.Act[e]] || (pr.TargetStates != nil && pr.TargetStates[j])
			if j == i && !ends {
				continue
			}
			a.Set(i, i, a.At(i, i)+c.Rate[e])
			if !ends {
				a.Set(i, j, a.At(i, j)-c.Rate[e])
			}
		}
	}
	var m mat.VecDense
	if err := m.SolveVec(a, b); err != nil {
		t.Fatal(err)
	}
	mean := 0.0
	for i, x := range pr.Alpha {
		mean += x * m.AtVec(i)
	}
	return mean
}

func relNear(a, b, rel float64) bool { return math.Abs(a-b) <= rel*math.Abs(b) }

// TestMeanClosedForms: Erlang, hypoexponential and stiff chains, by the
// direct path and with every block sent down the iterative path.
func TestMeanClosedForms(t *testing.T) {
	cases := []struct {
		rates []float64
	}{
		{[]float64{2, 2, 2, 2}},
		{[]float64{1, 3, 0.5}},
		{[]float64{1e5, 1e-4}},
		{[]float64{1e-4, 1e5, 3}},
	}
	for _, limit := range []int{600, 1} {
		denseBlock = limit
		for _, tc := range cases {
			c := chainOf(t, erlangModel(len(tc.rates), tc.rates))
			want := 0.0
			for _, r := range tc.rates {
				want += 1 / r
			}
			m, err := Mean(context.Background(), c, InitialProblem(c, actions(t, c, "done")))
			if err != nil || !relNear(m, want, 1e-12) {
				t.Errorf("dense limit %d, rates %v: mean %.15g (%v), want %.15g", limit, tc.rates, m, err, want)
			}
		}
	}
	denseBlock = 600
}

// toggles is n independent two-state components toggling at rate r, in
// parallel with T whose done (rate mu) is a self-loop: 2^n states in one
// strongly connected block, left only by done, so the mean is 1/mu
// however fast the toggling (mean x fastest rate = n r / mu).
func toggles(n int, r, mu float64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "r = %g; mu = %g;\nX0 = (x, r).X1; X1 = (y, r).X0;\nTimer = (done, mu).Timer;\n", r, mu)
	b.WriteString("Timer")
	for i := 0; i < n; i++ {
		b.WriteString(" <> X0")
	}
	b.WriteString("\n")
	return b.String()
}

func TestMeanLargeStiffBlock(t *testing.T) {
	for _, tc := range []struct{ r, mu float64 }{{1, 0.5}, {1e3, 1e-2}, {1e4, 1e-4}} {
		c := chainOf(t, toggles(10, tc.r, tc.mu))
		if c.N != 1024 {
			t.Fatalf("%d states", c.N)
		}
		pr := InitialProblem(c, actions(t, c, "done"))
		m, maxRest, err := MeanTimes(context.Background(), c, pr)
		if err != nil || !relNear(m, 1/tc.mu, 1e-11) || !relNear(maxRest, 1/tc.mu, 1e-11) {
			t.Errorf("r %g mu %g: mean %.15g, max remaining %.15g (%v), want %.15g", tc.r, tc.mu, m, maxRest, err, 1/tc.mu)
		}
	}
}

// TestMeanAgainstDense: the blocked solve against one dense solve on the
// bundled models, with blocks dense and iterative.
func TestMeanAgainstDense(t *testing.T) {
	lan := chainOfFile(t, "../testdata/pc-lan.pepa")
	badge := chainOfFile(t, "../testdata/active-badge.pepa")
	mapping := chainOfFile(t, "../testdata/mapping-a.pepa")
	pred, err := ctmc.ParsePredicate(badge.S, "DB1 == DB3")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		c    *ctmc.Chain
		pr   Problem
	}{
		{"PC LAN transmit3", lan, InitialProblem(lan, actions(t, lan, "transmit3"))},
		{"Active Badge DB1 == DB3", badge, StateProblem(badge, ctmc.SelectStates(badge, pred))},
		{"mapping-a compute12", mapping, InitialProblem(mapping, actions(t, mapping, "compute9", "compute10", "compute11", "compute12"))},
	}
	for _, limit := range []int{600, 1} {
		denseBlock = limit
		for _, tc := range cases {
			if tc.c.N > 3000 {
				t.Fatalf("%s: %d states, too many for the dense reference", tc.name, tc.c.N)
			}
			want := denseMean(t, tc.c, tc.pr)
			got, err := Mean(context.Background(), tc.c, tc.pr)
			if err != nil || !relNear(got, want, 1e-11) {
				t.Errorf("dense limit %d, %s: mean %.15g (%v), dense %.15g", limit, tc.name, got, err, want)
			}
		}
	}
	denseBlock = 600
}
