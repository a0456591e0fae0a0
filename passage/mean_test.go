package passage

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"pepa/ctmc"
	"pepa/internal/testing/testchain"
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
			a.Set(i, i, a.At(i, i)+c.RateAt(e))
			if !ends {
				a.Set(i, j, a.At(i, j)-c.RateAt(e))
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
	defer func() { orderedBlock = 1 << 16 }()
	for _, tc := range []struct{ r, mu float64 }{{1, 0.5}, {1e3, 1e-2}, {1e4, 1e-4}} {
		orderedBlock = 1 << 16
		if tc.r > 1 {
			orderedBlock = 1 // this block in the chain's order
		}
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
// bundled models, with blocks dense and iterative, and iterated in the
// chain's order first (on Active Badge that order stalls, and the retry
// in Tarjan's order must still get the mean).
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
	for _, limits := range [][2]int{{600, 1 << 16}, {1, 1 << 16}, {1, 1}} {
		limit := limits[0]
		denseBlock, orderedBlock = limits[0], limits[1]
		for _, tc := range cases {
			if tc.c.N > 3000 {
				t.Fatalf("%s: %d states, too many for the dense reference", tc.name, tc.c.N)
			}
			want := denseMean(t, tc.c, tc.pr)
			got, err := Mean(context.Background(), tc.c, tc.pr)
			if err != nil || !relNear(got, want, 1e-11) {
				t.Errorf("dense limit %d, ordered limit %d, %s: mean %.15g (%v), dense %.15g", limit, orderedBlock, tc.name, got, err, want)
			}
		}
	}
	denseBlock, orderedBlock = 600, 1<<16
}

// TestMeanStiffElimination: a 6-state chain with rates from 2.5e-4 to
// 5.9e3 (random model 1261 of the differential test) whose mean first
// firing of p0 is 6530319396.8854729 (40-digit arithmetic, mpmath, on the
// hand-derived generator). Partial-pivoting LU gave 6530321883.6 (3.8e-7
// off); the subtraction-free elimination must be accurate to rounding.
// And P = (a, 1e-4).P1 + (b, 1000).P2 with slow returns, whose mean is
// 10000010000 exactly (geometric number of visits).
func TestMeanStiffElimination(t *testing.T) {
	for _, tc := range []struct {
		src    string
		target string
		want   float64
	}{
		{`r1 = 274.5; r2 = 0.0208; r3 = 0.228; r4 = 215.5;
P = (s2, 2 * r1).P_1 + (s2, 0.832).P;
P_1 = (p1, r3).P_2 + (p1, 0.000251).P_1 + (p1, r3).P_2;
P_2 = (s1, 2.45).P_3 + (s2, 2 * r4).P + (s2, 370.0).P_2;
P_3 = (p1, 5880.0).P + (p0, 0.00035).(p0, r2).P;
P`, "p0", 6530319396.8854729},
		{"P = (a, 0.0001).P1 + (b, 1000.0).P2; P1 = (c, 1.0).P; P2 = (d, 0.001).P; P", "a", 10000010000},
	} {
		c := testchain.Chain(t, tc.src)
		id, ok := c.S.ActionID(tc.target)
		if !ok {
			t.Fatalf("no action %s", tc.target)
		}
		got, err := Mean(context.Background(), c, InitialProblem(c, []int32{id}))
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-tc.want) > 1e-12*tc.want {
			t.Errorf("mean first firing of %s = %.17g, want %.17g (relative error %.2g)", tc.target, got, tc.want, math.Abs(got-tc.want)/tc.want)
		}
	}
}

// TestMeanBlocksThatCannotEnd: a strongly connected block that can
// neither end the passage nor leave makes the mean infinite; one that
// cannot end it itself but leads to a block that can does not (against the
// dense reference), whether the blocks are eliminated or iterated; and a
// chain that lists its rates (no rate table) gives the same means.
func TestMeanBlocksThatCannotEnd(t *testing.T) {
	trapped := chainOf(t, "P = (a, 1).Q + (b, 1).R1; Q = (done, 2).P; R1 = (c, 1).R2; R2 = (d, 1).R1; P")
	through := chainOf(t, "P = (a, 1).R1; R1 = (c, 1).R2; R2 = (d, 1).R1 + (e, 0.5).Q; Q = (done, 2).P; P")
	for _, limit := range []int{600, 1} {
		denseBlock = limit
		pr := InitialProblem(trapped, actions(t, trapped, "done"))
		if m, maxRest, err := MeanTimes(context.Background(), trapped, pr); err != nil || !math.IsInf(m, 1) || !math.IsInf(maxRest, 1) {
			t.Errorf("dense limit %d, trapped: mean %g, max remaining %g (%v), want +Inf", limit, m, maxRest, err)
		}
		pr = InitialProblem(through, actions(t, through, "done"))
		want := denseMean(t, through, pr)
		if m, err := Mean(context.Background(), through, pr); err != nil || !relNear(m, want, 1e-12) {
			t.Errorf("dense limit %d, through: mean %.15g (%v), want %.15g", limit, m, err, want)
		}
		listed := *through
		listed.Rates = make([]float64, len(through.Col))
		for e := range listed.Rates {
			listed.Rates[e] = through.RateAt(int64(e))
		}
		listed.RateIndex, listed.RateTable = nil, nil
		if m, err := Mean(context.Background(), &listed, pr); err != nil || !relNear(m, want, 1e-12) {
			t.Errorf("dense limit %d, listed rates: mean %.15g (%v), want %.15g", limit, m, err, want)
		}
	}
	denseBlock = 600
}

// TestIterativeMeanNeverWrong: stiff chains on which the Gauss-Seidel
// sweeps stall at the rounding level of their values, from the
// differential test (random models 1523 and 557, sent down the iterative
// path with blocks of more than 4 states). The sweeps used to stop at a
// fixed point without a bound and returned 9.98e304 and 2.43e306 where
// the means are 110850.594585239 and 36.8111046846797 (the reference's
// dense elimination, internal/testing/reference); they must now give the mean to
// 1e-12 (the dense fallback), never a wrong number.
func TestIterativeMeanNeverWrong(t *testing.T) {
	for _, tc := range []struct {
		src, target string
		want        float64
	}{
		{`r1 = 59.0; r2 = 0.067; r3 = 1485.0; r4 = 0.501; r5 = 0.00222;
P = (s2, 0.00452).P + (s1, 2 * r1).(s1, r2).P + (s1, 2 * r1).(s1, r2).P;
Q = (s2, 2 * r3).Q_1 + (s1, 2 * infty).Q + (s1, 3 * infty).Q_1;
Q_1 = (q0, r4).(q1, 0.00102).Q + (q2, 2 * r5).Q_1 + (s3, 1 * infty).Q + (s3, 2 * infty).Q_1;
(P) <s1, s3> (Q)`, "q2", 110850.594585239},
	} {
		c := testchain.Chain(t, tc.src)
		a, ok := c.S.ActionID(tc.target)
		if !ok {
			t.Fatal(tc.target)
		}
		pr := InitialProblem(c, []int32{a})
		for _, dense := range []int{0, 4} {
			mean, _, stats, err := MeanTimesWith(context.Background(), c, pr, MeanOptions{DenseBlock: dense})
			if err != nil {
				t.Fatalf("dense blocks %d: %v", dense, err)
			}
			if math.Abs(mean-tc.want) > 1e-12*tc.want+1e-9 {
				t.Errorf("dense blocks %d: mean %.15g, want %.15g (%+v)", dense, mean, tc.want, stats)
			}
			if dense == 4 && stats.Iterative+stats.Fallback == 0 {
				t.Errorf("the iterative path was not taken: %+v", stats)
			}
		}
	}
}
