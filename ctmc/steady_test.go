package ctmc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

func steady(t *testing.T, c *Chain) []float64 {
	t.Helper()
	r, err := Steady(context.Background(), c, SteadyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return r.Pi
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol*math.Max(1, math.Abs(b)) }

func throughputOf(c *Chain, pi []float64, action string) float64 {
	for _, tp := range Throughputs(c, pi) {
		if tp.Action == action {
			return tp.Value
		}
	}
	return 0
}

func utilisationOf(c *Chain, pi []float64, comp, state string) float64 {
	for _, u := range Utilisations(c, pi) {
		if u.Component == comp && u.State == state {
			return u.Value
		}
	}
	return math.NaN()
}

// TestMM1K: an M/M/1/K queue written as an arrival process cooperating with
// a passive queue. Closed form: pi_k = rho^k (1 - rho) / (1 - rho^(K+1)).
func TestMM1K(t *testing.T) {
	const K = 6
	lambda, mu := 1.5, 2.0
	var b strings.Builder
	fmt.Fprintf(&b, "lambda = %g; mu = %g;\nArr = (arrive, lambda).Arr;\n", lambda, mu)
	fmt.Fprintf(&b, "Q0 = (arrive, infty).Q1;\n")
	for k := 1; k < K; k++ {
		fmt.Fprintf(&b, "Q%d = (arrive, infty).Q%d + (serve, mu).Q%d;\n", k, k+1, k-1)
	}
	fmt.Fprintf(&b, "Q%d = (serve, mu).Q%d;\nArr <arrive> Q0\n", K, K-1)
	c := derive(t, b.String(), DefaultOptions)
	if c.N != K+1 {
		t.Fatalf("%d states, want %d", c.N, K+1)
	}
	pi := steady(t, c)
	rho := lambda / mu
	for k := 0; k <= K; k++ {
		want := math.Pow(rho, float64(k)) * (1 - rho) / (1 - math.Pow(rho, K+1))
		got := utilisationOf(c, pi, "Q0", fmt.Sprintf("Q%d", k))
		if !near(got, want, 1e-10) {
			t.Errorf("P(Q%d) = %.15g, want %.15g", k, got, want)
		}
	}
	p0 := (1 - rho) / (1 - math.Pow(rho, K+1))
	if got, want := throughputOf(c, pi, "serve"), mu*(1-p0); !near(got, want, 1e-10) {
		t.Errorf("throughput(serve) = %g, want %g", got, want)
	}
	// Arrivals are lost when the queue is full: throughput(arrive) = lambda (1 - pi_K).
	pK := math.Pow(rho, K) * p0
	if got, want := throughputOf(c, pi, "arrive"), lambda*(1-pK); !near(got, want, 1e-10) {
		t.Errorf("throughput(arrive) = %g, want %g", got, want)
	}
}

// TestIndependentProduct: two components that never synchronise have the
// product of their own steady states.
func TestIndependentProduct(t *testing.T) {
	c := derive(t, `
P = (a, 1).P2; P2 = (b, 3).P;
R = (c, 2).R2; R2 = (d, 0.5).R3; R3 = (e, 1).R;
P <> R`, DefaultOptions)
	if c.N != 6 {
		t.Fatalf("%d states, want 6", c.N)
	}
	pi := steady(t, c)
	// Cyclic components: P(state) is proportional to its mean sojourn time.
	pP := map[string]float64{"P": 1.0 / (1 + 1.0/3), "P2": (1.0 / 3) / (1 + 1.0/3)}
	sr := 0.5 + 2 + 1
	pR := map[string]float64{"R": 0.5 / sr, "R2": 2 / sr, "R3": 1 / sr}
	for i := 0; i < c.N; i++ {
		names := c.S.StateNames(c.State(i))
		want := pP[names[0]] * pR[names[1]]
		if !near(pi[i], want, 1e-12) {
			t.Errorf("pi(%v) = %g, want %g", names, pi[i], want)
		}
	}
}

// transitions returns the transitions of state i as "action->target-names:rate".
func transitions(c *Chain, i int) map[string]float64 {
	out := map[string]float64{}
	for k := c.RowPtr[i]; k < c.RowPtr[i+1]; k++ {
		key := c.S.Actions[c.Act[k]] + "->" + c.StateString(int(c.Col[k]))
		out[key] += c.RateAt(k)
	}
	return out
}

// TestCooperationRates checks the apparent-rate formula on examples worked
// by hand: rate = (r1 / r_a(P)) (r2 / r_a(Q)) min(r_a(P), r_a(Q)).
func TestCooperationRates(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want map[string]float64
	}{
		{"active/active, the slower wins",
			"X = (a, 2).X1; X1 = (b, 1).X; Y = (a, 3).Y1; Y1 = (c, 1).Y; X <a> Y",
			map[string]float64{"a->X1, Y1": 2}},
		{"active/active with a race on one side",
			// r_a(X) = 1 + 3 = 4, r_a(Y) = 2: each branch gets its share of min = 2.
			"X = (a, 1).X1 + (a, 3).X2; X1 = (b, 1).X; X2 = (b, 1).X; Y = (a, 2).Y1; Y1 = (c, 1).Y; X <a> Y",
			map[string]float64{"a->X1, Y1": 0.5, "a->X2, Y1": 1.5}},
		{"races on both sides",
			// r_a(X) = 4, r_a(Y) = 1 + 5 = 6, min 4: (1/4)(1/6)4, (1/4)(5/6)4, (3/4)(1/6)4, (3/4)(5/6)4.
			"X = (a, 1).X1 + (a, 3).X2; X1 = (b, 1).X; X2 = (b, 1).X; Y = (a, 1).Y1 + (a, 5).Y2; Y1 = (c, 1).Y; Y2 = (c, 1).Y; X <a> Y",
			map[string]float64{"a->X1, Y1": 1.0 / 6, "a->X1, Y2": 5.0 / 6, "a->X2, Y1": 0.5, "a->X2, Y2": 2.5}},
		{"passive weights share the active rate",
			"X = (a, 2*infty).X1 + (a, infty).X2; X1 = (b, 1).X; X2 = (b, 1).X; Y = (a, 3).Y; X <a> Y",
			map[string]float64{"a->X1, Y": 2, "a->X2, Y": 1}},
		{"passive on both sides, then active",
			// X <a> Y is passive with weight (1)(1) min(2, 1) = 1; with Z the rate is Z's, 5.
			"X = (a, 2*infty).X1; X1 = (b, 1).X; Y = (a, infty).Y1; Y1 = (c, 1).Y; Z = (a, 5).Z; (X <a> Y) <a> Z",
			map[string]float64{"a->X1, Y1, Z": 5}},
		{"parallel copies add their apparent rates",
			// r_a(P || P) = 2 + 2 = 4 against r_a(Q) = 1: each copy fires at 1/2.
			"P = (a, 2).P1; P1 = (b, 1).P; Q = (a, 1).Q1; Q1 = (c, 1).Q; (P <> P) <a> Q",
			map[string]float64{"a->P1, P, Q1": 0.5, "a->P, P1, Q1": 0.5}},
		{"hiding renames to tau",
			"P = (a, 2).P1; P1 = (b, 1).P; P/{a}",
			map[string]float64{"tau->P1": 2}},
		{"unsynchronised actions interleave",
			"P = (a, 2).P1; P1 = (b, 1).P; Q = (c, 3).Q1; Q1 = (d, 1).Q; P <b> Q",
			map[string]float64{"a->P1, Q": 2, "c->P, Q1": 3}},
		{"race to one target adds up",
			"P = (a, 2).P1 + (a, 3).P1; P1 = (b, 1).P; P",
			map[string]float64{"a->P1": 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, agg := range []bool{true, false} {
				c := derive(t, tt.src, Options{Aggregate: agg})
				got := transitions(c, 0)
				if len(got) != len(tt.want) {
					t.Errorf("state 0 (%s) has transitions %v, want %v", c.StateString(0), got, tt.want)
					continue
				}
				for k, w := range tt.want {
					if !near(got[k], w, 1e-14) {
						t.Errorf("%s: rate %g, want %g (all: %v)", k, got[k], w, got)
					}
				}
			}
		})
	}
}

// denseGenerator builds the dense generator matrix of a chain.
func denseGenerator(c *Chain) *mat.Dense {
	q := mat.NewDense(c.N, c.N, nil)
	for i := 0; i < c.N; i++ {
		for k := c.RowPtr[i]; k < c.RowPtr[i+1]; k++ {
			j := int(c.Col[k])
			if j != i {
				q.Set(i, j, q.At(i, j)+c.RateAt(k))
				q.Set(i, i, q.At(i, i)-c.RateAt(k))
			}
		}
	}
	return q
}

// TestGeneratorByHand compares a derived generator with one written out by
// hand for a small model: a worker that uses a tool, and a tool that breaks.
func TestGeneratorByHand(t *testing.T) {
	c := derive(t, `
w = 2; u = 3; f = 0.5; r = 4;
Worker = (get, w).Using; Using = (use, u).Worker;
Tool = (get, infty).Busy + (fail, f).Broken; Busy = (use, infty).Tool; Broken = (fix, r).Tool;
Worker <get, use> Tool`, DefaultOptions)
	// States in BFS order, unsynchronised activities first: 0 (Worker, Tool),
	// 1 (Worker, Broken), 2 (Using, Busy).
	names := []string{"Worker, Tool", "Worker, Broken", "Using, Busy"}
	for i, n := range names {
		if got := c.StateString(i); got != n {
			t.Fatalf("state %d is %q, want %q", i, got, n)
		}
	}
	want := mat.NewDense(3, 3, []float64{
		-2.5, 0.5, 2,
		4, -4, 0,
		3, 0, -3,
	})
	if got := denseGenerator(c); !mat.EqualApprox(got, want, 1e-15) {
		t.Fatalf("generator\n%v\nwant\n%v", mat.Formatted(got), mat.Formatted(want))
	}
}

// denseSteady solves pi Q = 0, sum pi = 1 by LU on the dense system with
// the last equation replaced by the normalisation.
func denseSteady(q *mat.Dense) []float64 {
	n, _ := q.Dims()
	a := mat.NewDense(n, n, nil)
	a.CloneFrom(q.T())
	for j := 0; j < n; j++ {
		a.Set(n-1, j, 1)
	}
	b := mat.NewVecDense(n, nil)
	b.SetVec(n-1, 1)
	var x mat.VecDense
	if err := x.SolveVec(a, b); err != nil {
		panic(err)
	}
	return x.RawVector().Data
}

// TestSteadyAgainstDense: on the bundled models, Gauss-Seidel agrees with a
// dense LU solve, aggregated or not, and throughputs and utilisations do
// not depend on aggregation.
func TestSteadyAgainstDense(t *testing.T) {
	for _, f := range []string{"pc-lan.pepa", "pc-lan-6.pepa", "active-badge.pepa", "arrays.pepa", "mapping-a.pepa"} {
		t.Run(f, func(t *testing.T) {
			var tps [][]Throughput
			var uts [][]Utilisation
			for _, agg := range []bool{true, false} {
				c := deriveFile(t, "../testdata/"+f, Options{Aggregate: agg})
				pi := steady(t, c)
				want := denseSteady(denseGenerator(c))
				for i := range pi {
					if !near(pi[i], want[i], 1e-9) {
						t.Fatalf("aggregate=%v: pi[%d] = %.15g, dense %.15g", agg, i, pi[i], want[i])
					}
				}
				tps = append(tps, Throughputs(c, pi))
				uts = append(uts, Utilisations(c, pi))
			}
			if len(tps[0]) != len(tps[1]) || len(uts[0]) != len(uts[1]) {
				t.Fatalf("measures differ in shape with aggregation: %v vs %v", tps, uts)
			}
			for i := range tps[0] {
				if tps[0][i].Action != tps[1][i].Action || !near(tps[0][i].Value, tps[1][i].Value, 1e-9) {
					t.Errorf("throughput %v vs %v", tps[0][i], tps[1][i])
				}
			}
			for i := range uts[0] {
				if uts[0][i] != uts[1][i] && !(uts[0][i].State == uts[1][i].State && near(uts[0][i].Value, uts[1][i].Value, 1e-9)) {
					t.Errorf("utilisation %v vs %v", uts[0][i], uts[1][i])
				}
			}
		})
	}
}

func TestNotIrreducible(t *testing.T) {
	c := derive(t, "P = (a, 1).Q; Q = (b, 1).R + (c, 1).S; R = (d, 1).R2; R2 = (e, 1).R; S = (f, 1).S2; S2 = (g, 1).S; P", DefaultOptions)
	_, err := Steady(context.Background(), c, SteadyOptions{SingleClass: true})
	var nie *NotIrreducibleError
	if !errors.As(err, &nie) {
		t.Fatalf("got %v, want a NotIrreducibleError", err)
	}
	if len(nie.Closed) != 2 || len(nie.Transient) != 2 {
		t.Fatalf("closed %v, transient %v", nie.Closed, nie.Transient)
	}
	if !strings.Contains(err.Error(), "2 closed classes") || !strings.Contains(err.Error(), "2 transient states (0, 1)") {
		t.Errorf("message: %v", err)
	}
}

func TestDeadlock(t *testing.T) {
	c := derive(t, `
Worker1 = (hammer, 1).(chisel, 1).Worker1; Worker2 = (chisel, 1).(hammer, 1).Worker2;
Hammer = (hammer, infty).Hammer_taken; Hammer_taken = (release, 1).Hammer;
Chisel = (chisel, infty).Chisel_taken; Chisel_taken = (release2, 1).Chisel;
(Worker1 <> Worker2) <hammer, chisel> (Hammer <> Chisel)`, DefaultOptions)
	if len(c.Deadlocks) != 0 {
		t.Fatalf("unexpected deadlocks %v", c.Deadlocks)
	}
	d := derive(t, "P = (a, 1).Stop; Stop = (b, infty).Stop; Q = (c, 1).Q; P <b> Q", DefaultOptions)
	if len(d.Deadlocks) != 0 {
		t.Fatalf("Q keeps going: no deadlock expected, got %v", d.Deadlocks)
	}
	e := derive(t, "P = (a, 1).Stop; Stop = (b, infty).Stop; R = (c, 1).R2; R2 = (d, 1).R2; P <b, d> R", DefaultOptions)
	if len(e.Deadlocks) != 1 {
		t.Fatalf("deadlocks %v, want one", e.Deadlocks)
	}
	_, err := Steady(context.Background(), e, SteadyOptions{})
	if err == nil || !strings.Contains(err.Error(), "deadlock in state") || !strings.Contains(err.Error(), "Stop, R2") {
		t.Fatalf("error %v", err)
	}
}

func TestMaxStates(t *testing.T) {
	m := deriveFile(t, "../testdata/pc-lan.pepa", DefaultOptions)
	_ = m
	c, err := deriveLimited(t, "../testdata/pc-lan.pepa", 100)
	if c != nil || !errors.Is(err, ErrTooManyStates) {
		t.Fatalf("got %v, %v", c, err)
	}
}

func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s := compileFile(t, "../testdata/pc-lan-6.pepa")
	if _, err := Derive(ctx, s, DeriveOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
}

// TestAutoHandsOverWhenSweepsFail: on chains whose probabilities span
// many orders of magnitude, the sweeps' pushed inflows cancel to 0 or
// below and Gauss-Seidel refuses (a forced gauss-seidel fails); auto must
// then go on to BiCGSTAB (and to GTH where BiCGSTAB cannot reach the
// tolerance) instead of refusing the model, and say why. The models were
// found by a random search over three cooperating-free components with
// rates spread over 10^-10 to 10^10 (the shape of the PEPA Eclipse
// Plug-in's tests/pasm/union-cpu.pepa, which auto refused); the
// throughputs are compared with GTH's.
func TestAutoHandsOverWhenSweepsFail(t *testing.T) {
	models := []struct{ name, src, via string }{
		{"bicgstab", `C0_0 = (a0_0, 3.81e+03).C0_1 + (b0_0_0, 8.28e-06).C0_2 + (b0_0_1, 0.000707).C0_2;
C0_1 = (a0_1, 1.13e+09).C0_2 + (b0_1_0, 1.45e+08).C0_2 + (b0_1_1, 0.0042).C0_0;
C0_2 = (a0_2, 8.53e-07).C0_3 + (b0_2_0, 2.3e-10).C0_5 + (b0_2_1, 44.7).C0_0;
C0_3 = (a0_3, 0.00229).C0_4 + (b0_3_0, 2.18e+07).C0_0;
C0_4 = (a0_4, 5.3e+06).C0_5 + (b0_4_1, 5.13e+09).C0_2;
C0_5 = (a0_5, 1.46e+04).C0_0 + (b0_5_0, 0.000353).C0_2 + (b0_5_1, 3.66).C0_1;
C1_0 = (a1_0, 3.87e+09).C1_1 + (b1_0_1, 64.5).C1_1;
C1_1 = (a1_1, 0.00886).C1_2 + (b1_1_0, 1.89e-05).C1_5 + (b1_1_1, 8.09e-09).C1_0;
C1_2 = (a1_2, 1.2).C1_3 + (b1_2_0, 1.4e-09).C1_5 + (b1_2_1, 0.000981).C1_4;
C1_3 = (a1_3, 2.11e-07).C1_4 + (b1_3_0, 9.11).C1_1 + (b1_3_1, 4.11e-05).C1_4;
C1_4 = (a1_4, 0.0475).C1_5 + (b1_4_0, 1.95e+06).C1_5 + (b1_4_1, 34.3).C1_2;
C1_5 = (a1_5, 1.24e+07).C1_0 + (b1_5_0, 4.16e+09).C1_3 + (b1_5_1, 1.22e-05).C1_1;
C2_0 = (a2_0, 2.35e+08).C2_1;
C2_1 = (a2_1, 2.2).C2_2 + (b2_1_0, 3.61e-07).C2_5 + (b2_1_1, 0.000155).C2_0;
C2_2 = (a2_2, 1.06e-07).C2_3 + (b2_2_0, 1.44e-07).C2_3 + (b2_2_1, 8.91e+08).C2_1;
C2_3 = (a2_3, 0.000282).C2_4 + (b2_3_0, 8.92e-09).C2_5 + (b2_3_1, 2.73e+05).C2_1;
C2_4 = (a2_4, 213).C2_5 + (b2_4_1, 1.5e-05).C2_2;
C2_5 = (a2_5, 1.57e+03).C2_0 + (b2_5_0, 1.23e-09).C2_4 + (b2_5_1, 0.0877).C2_3;
C0_0 <> C1_0 <> C2_0
`, MethodIterative},
		{"gth", `C0_0 = (a0_0, 4.96e-09).C0_1 + (b0_0_1, 6.33e-10).C0_2;
C0_1 = (a0_1, 43.5).C0_2 + (b0_1_0, 2.61e-06).C0_2 + (b0_1_1, 6.28e-06).C0_3;
C0_2 = (a0_2, 2.96e-10).C0_3 + (b0_2_0, 5.23e-05).C0_3 + (b0_2_1, 1.38e-10).C0_4;
C0_3 = (a0_3, 0.0271).C0_4 + (b0_3_1, 272).C0_2;
C0_4 = (a0_4, 2.12e-09).C0_0 + (b0_4_0, 1.31e+09).C0_2 + (b0_4_1, 1.15e-09).C0_2;
C1_0 = (a1_0, 6.15e-08).C1_1 + (b1_0_0, 1.08e+06).C1_2 + (b1_0_1, 0.00147).C1_3;
C1_1 = (a1_1, 4.61e+09).C1_2 + (b1_1_1, 9.84e-09).C1_4;
C1_2 = (a1_2, 0.000309).C1_3;
C1_3 = (a1_3, 3.63e+06).C1_4 + (b1_3_0, 0.000611).C1_1 + (b1_3_1, 2.64e+04).C1_1;
C1_4 = (a1_4, 1.59e-08).C1_0 + (b1_4_0, 2.46e+08).C1_0 + (b1_4_1, 2.67e-10).C1_3;
C2_0 = (a2_0, 0.0478).C2_1 + (b2_0_0, 6.75e+05).C2_2 + (b2_0_1, 3.61e+09).C2_1;
C2_1 = (a2_1, 1.69e+05).C2_2 + (b2_1_0, 0.351).C2_4 + (b2_1_1, 8.35e+07).C2_4;
C2_2 = (a2_2, 2.75e+04).C2_3 + (b2_2_0, 5.82e-06).C2_1 + (b2_2_1, 1.34e-07).C2_1;
C2_3 = (a2_3, 961).C2_4 + (b2_3_0, 0.0721).C2_1 + (b2_3_1, 2.06e-05).C2_1;
C2_4 = (a2_4, 2.51e-08).C2_0 + (b2_4_0, 110).C2_3 + (b2_4_1, 1.91e+09).C2_3;
C0_0 <> C1_0 <> C2_0
`, MethodDirect},
	}
	for _, m := range models {
		t.Run(m.name, func(t *testing.T) {
			c := derive(t, m.src, DefaultOptions)
			ctx := context.Background()
			if _, err := Steady(ctx, c, SteadyOptions{Method: MethodSweeps}); err == nil || !strings.Contains(err.Error(), "Gauss-Seidel gave state") {
				t.Fatalf("forced gauss-seidel: %v, want its refusal of a state (the case this test is for)", err)
			}
			// DirectLimit 2 sends the class to the sweeps first, as a
			// class above 2,000 states is.
			got, err := Steady(ctx, c, SteadyOptions{DirectLimit: 2})
			if err != nil {
				t.Fatalf("auto refused: %v", err)
			}
			if got.Method != m.via || !strings.Contains(got.Reason, "Gauss-Seidel gave state") {
				t.Errorf("auto ran %s (%s), want %s after the sweeps' refusal, named", got.Method, got.Reason, m.via)
			}
			want, err := Steady(ctx, c, SteadyOptions{Method: MethodDirect})
			if err != nil {
				t.Fatal(err)
			}
			gt, wt := Throughputs(c, got.Pi), Throughputs(c, want.Pi)
			for k := range wt {
				if math.Abs(gt[k].Value-wt[k].Value) > 1e-9*wt[k].Value {
					t.Errorf("throughput of %s: %.15g, gth %.15g", wt[k].Action, gt[k].Value, wt[k].Value)
				}
			}
		})
	}
}
