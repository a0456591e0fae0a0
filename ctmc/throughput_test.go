package ctmc_test

import (
	"context"
	"math"
	"testing"

	"pepa/ctmc"
	"pepa/ctmc/steady"
	"pepa/internal/testing/testchain"
)

// Throughputs of derived chains, worked out by hand or compared between
// chains that are lumpings of one another: the steady-state solver is the
// oracle, so these tests live outside the package (ctmc/steady imports it).

func solve(t *testing.T, c *ctmc.Chain) []float64 {
	t.Helper()
	r, err := steady.Solve(context.Background(), c, steady.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r.Pi
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol*math.Max(1, math.Abs(b)) }

func throughputOf(c *ctmc.Chain, pi []float64, action string) float64 {
	for _, tp := range ctmc.Throughputs(c, pi) {
		if tp.Action == action {
			return tp.Value
		}
	}
	return 0
}

// TestProcessorResourceArrays: n processors Proc with two tasks, each
// followed by the same term (use, 1.0).Proc (r is 1.0, so the two
// continuations are one term), sharing m resources. Derivatives: Proc, U;
// Res, Z = (reset, 3.0).Res.
//
// Aggregated: states are (k waiting processors, j resetting resources),
// all (n+1)(m+1) reachable. Transitions: task1 and task2 (one each, to the
// same target) when k < n; use when k > 0 and j < m; reset when j > 0.
//
// Unaggregated: every processor idle or waiting, every resource idle or
// resetting, all 2^(n+m) reachable. Transitions from a state: 2 per idle
// processor, one per (waiting processor, idle resource) pair, one per
// resetting resource; summed over all states with each copy in each of its
// two states in half of them: 2^(n+m) (2 n/2 + (n/2)(m/2) + m/2).
func TestProcessorResourceArrays(t *testing.T) {
	const n, m = 3, 2
	src := `r = 1.0;
Proc = (task1, 0.5).(use, r).Proc + (task2, 0.25).(use, 1.0).Proc;
Res = (use, infty).(reset, 3.0).Res;
Proc[3] <use> Res[2]`
	aggStates := (n + 1) * (m + 1)
	aggTrans := 2*n*(m+1) + n*m + (n+1)*m
	full := 1 << (n + m)
	fullTrans := full * (2*n + n*m/2 + m) / 2 // 2^(n+m) (n + nm/4 + m/2)
	ca := testchain.ChainWith(t, src, ctmc.Options{Aggregate: true})
	if ca.N != aggStates || ca.NumTransitions() != aggTrans {
		t.Errorf("aggregated: %d states, %d transitions; want %d, %d", ca.N, ca.NumTransitions(), aggStates, aggTrans)
	}
	cu := testchain.ChainWith(t, src, ctmc.Options{Aggregate: false})
	if cu.N != full || cu.NumTransitions() != fullTrans {
		t.Errorf("unaggregated: %d states, %d transitions; want %d, %d", cu.N, cu.NumTransitions(), full, fullTrans)
	}
	// The aggregated chain is a lumping of the unaggregated one, and both
	// are lumpings of the chain with the two continuations kept apart
	// (written with two constants): every throughput agrees.
	apart := testchain.ChainWith(t, `Proc = (task1, 0.5).U1 + (task2, 0.25).U2; U1 = (use, 1.0).Proc; U2 = (use, 1.0).Proc;
Res = (use, infty).(reset, 3.0).Res;
Proc[3] <use> Res[2]`, ctmc.Options{Aggregate: false})
	if apart.N != 3*3*3*2*2 {
		t.Errorf("apart: %d states, want 108", apart.N)
	}
	sameThroughputs(t, apart, ca, cu)
}

// tightSteady solves to a residual well below the 1e-12 the comparisons
// need.
func tightSteady(t *testing.T, c *ctmc.Chain) []float64 {
	t.Helper()
	r, err := steady.Solve(context.Background(), c, steady.Options{Tolerance: 1e-15})
	if err != nil {
		t.Fatal(err)
	}
	return r.Pi
}

// sameThroughputs checks that chains that should be lumpings of one
// another have the same throughputs.
func sameThroughputs(t *testing.T, ref *ctmc.Chain, others ...*ctmc.Chain) {
	t.Helper()
	pr := tightSteady(t, ref)
	want := map[string]float64{}
	for _, tp := range ctmc.Throughputs(ref, pr) {
		want[tp.Action] = tp.Value
	}
	for _, c := range others {
		pi := tightSteady(t, c)
		got := ctmc.Throughputs(c, pi)
		if len(got) != len(want) {
			t.Errorf("%d throughputs, want %d", len(got), len(want))
		}
		for _, tp := range got {
			if !near(tp.Value, want[tp.Action], 1e-12) {
				t.Errorf("throughput of %s %.15g, want %.15g", tp.Action, tp.Value, want[tp.Action])
			}
		}
	}
}

// TestTermIdentityThroughputs: closed forms for the small models, and the
// merged chains against the same models written with every occurrence kept
// apart by constants.
func TestTermIdentityThroughputs(t *testing.T) {
	// P -a,1-> R; R -b,2-> P, -c,3-> Q; Q -a,1-> R: pi_R = 1/6.
	c := testchain.ChainWith(t, "P = Q; Q = (a, 1.0).R; R = (b, 2.0).P + (c, 3.0).Q; P", ctmc.DefaultOptions)
	pi := solve(t, c)
	for action, want := range map[string]float64{"a": 5.0 / 6, "b": 2.0 / 6, "c": 3.0 / 6} {
		if got := throughputOf(c, pi, action); !near(got, want, 1e-12) {
			t.Errorf("a constant as a derivative: throughput of %s %g, want %g", action, got, want)
		}
	}
	// One state, a at rate 1 + 1.
	c = testchain.ChainWith(t, "P = Q + Q; Q = (a, 1.0).P; P", ctmc.DefaultOptions)
	if got := throughputOf(c, solve(t, c), "a"); !near(got, 2, 1e-12) {
		t.Errorf("Q + Q: throughput of a %g, want 2", got)
	}
	// P -a,1-> X; X -b,2-> P, -c,3-> P: pi_P = 5/6.
	c = testchain.ChainWith(t, "P = (a, 1.0).(Q + (b, 2.0).P); Q = (c, 3.0).P; P", ctmc.DefaultOptions)
	pi = solve(t, c)
	for action, want := range map[string]float64{"a": 5.0 / 6, "b": 2.0 / 6, "c": 3.0 / 6} {
		if got := throughputOf(c, pi, action); !near(got, want, 1e-12) {
			t.Errorf("constant in a choice: throughput of %s %g, want %g", action, got, want)
		}
	}
	// A cycle of mean 1 + 1/2 + 1/3 = 11/6.
	c = testchain.ChainWith(t, "P = (a, 1.0).((b, 2.0).((c, 3.0).P)); P", ctmc.DefaultOptions)
	if got := throughputOf(c, solve(t, c), "b"); !near(got, 6.0/11, 1e-12) {
		t.Errorf("nested: throughput of b %g, want 6/11", got)
	}

	pairs := [][2]string{
		{"P = (a, 1.0).(c, 2.0).P + (b, 1.0).(c, 2.0).P; P",
			"P = (a, 1.0).P1 + (b, 1.0).P2; P1 = (c, 2.0).P; P2 = (c, 2.0).P; P"},
		{`S = (send0, 1.0).S + (send1, 1.0).S;
Ch = (send0, infty).(deliver0, 5.0).Ch + (send1, infty).(deliver1, 5.0).Ch;
R = (deliver0, infty).(ack, 2.0).R + (deliver1, infty).(ack, 2.0).R;
(S <send0, send1> Ch) <deliver0, deliver1> R`, `S = (send0, 1.0).S + (send1, 1.0).S;
Ch = (send0, infty).(deliver0, 5.0).Ch + (send1, infty).(deliver1, 5.0).Ch;
R = (deliver0, infty).K0 + (deliver1, infty).K1; K0 = (ack, 2.0).R; K1 = (ack, 2.0).R;
(S <send0, send1> Ch) <deliver0, deliver1> R`},
		// An array of a component with a merged derivative, cooperating.
		{`W = (go, 1.0).(work, 2.0).W + (stay, 0.5).(work, 2.0).W; Z = (work, infty).(rest, 4.0).Z; W[4] <work> Z`,
			`W = (go, 1.0).W1 + (stay, 0.5).W2; W1 = (work, 2.0).W; W2 = (work, 2.0).W; Z = (work, infty).(rest, 4.0).Z; W[4] <work> Z`},
	}
	for _, p := range pairs {
		apart := testchain.ChainWith(t, p[1], ctmc.Options{Aggregate: false})
		merged := testchain.ChainWith(t, p[0], ctmc.Options{Aggregate: false})
		mergedAgg := testchain.ChainWith(t, p[0], ctmc.Options{Aggregate: true})
		if merged.N >= apart.N {
			t.Errorf("%d states merged, %d apart: nothing merged", merged.N, apart.N)
		}
		sameThroughputs(t, apart, merged, mergedAgg)
	}
}

// TestPassiveInOneDerivative: passive on h in one derivative and active in
// the other is valid PEPA. (P0, Q0) -h, 2-> (P1, Q1) (P passive, Q at 2);
// (P1, Q1) -h, 1-> (P0, Q0) (Q passive): pi = (1/3, 2/3), throughput of h
// 2/3 + 2/3 = 4/3.
func TestPassiveInOneDerivative(t *testing.T) {
	c := testchain.ChainWith(t, "P = (h, infty).(h, 1.0).P; Q = (h, 2.0).(h, infty).Q; P <h> Q", ctmc.DefaultOptions)
	if c.N != 2 || c.NumTransitions() != 2 {
		t.Fatalf("%d states, %d transitions; want 2, 2", c.N, c.NumTransitions())
	}
	if got := throughputOf(c, solve(t, c), "h"); !near(got, 4.0/3, 1e-12) {
		t.Errorf("throughput of h %g, want 4/3", got)
	}
	// Mixed across derivatives, resolved by the choice of state: (P0, Q0)
	// -a, min(1, 2)-> (P1, Q1) -a, 3-> (P0, Q0): pi = (3/4, 1/4),
	// throughput 3/4 + 3/4.
	c = testchain.ChainWith(t, "P = (a, 1.0).(a, infty).P; Q = (a, 2.0).(a, 3.0).Q; P <a> Q", ctmc.DefaultOptions)
	if got := throughputOf(c, solve(t, c), "a"); c.N != 2 || !near(got, 1.5, 1e-12) {
		t.Errorf("%d states, throughput of a %g; want 2, 1.5", c.N, got)
	}
}
