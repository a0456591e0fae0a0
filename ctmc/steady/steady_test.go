package steady

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"pepa/ctmc"
	"pepa/internal/testing/testchain"
)

func solve(t *testing.T, c *ctmc.Chain) []float64 {
	t.Helper()
	r, err := Solve(context.Background(), c, Options{})
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

func utilisationOf(c *ctmc.Chain, pi []float64, comp, state string) float64 {
	for _, u := range ctmc.Utilisations(c, pi) {
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
	c := testchain.Chain(t, b.String())
	if c.N != K+1 {
		t.Fatalf("%d states, want %d", c.N, K+1)
	}
	pi := solve(t, c)
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
	c := testchain.Chain(t, `
P = (a, 1).P2; P2 = (b, 3).P;
R = (c, 2).R2; R2 = (d, 0.5).R3; R3 = (e, 1).R;
P <> R`)
	if c.N != 6 {
		t.Fatalf("%d states, want 6", c.N)
	}
	pi := solve(t, c)
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

// denseSteady solves pi Q = 0, sum pi = 1 for c's generator Q by LU on
// the dense transposed system, its last equation replaced by the
// normalisation.
func denseSteady(c *ctmc.Chain) []float64 {
	n := c.N
	a := mat.NewDense(n, n, nil) // Q transposed: row j is the balance of state j
	for i := 0; i < n; i++ {
		for k := c.RowPtr[i]; k < c.RowPtr[i+1]; k++ {
			if j := int(c.Col[k]); j != i {
				a.Set(j, i, a.At(j, i)+c.RateAt(k))
				a.Set(i, i, a.At(i, i)-c.RateAt(k))
			}
		}
	}
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
			var tps [][]ctmc.Throughput
			var uts [][]ctmc.Utilisation
			for _, agg := range []bool{true, false} {
				src, err := os.ReadFile("../../testdata/" + f)
				if err != nil {
					t.Fatal(err)
				}
				c := testchain.ChainWith(t, string(src), ctmc.Options{Aggregate: agg})
				pi := solve(t, c)
				want := denseSteady(c)
				for i := range pi {
					if !near(pi[i], want[i], 1e-9) {
						t.Fatalf("aggregate=%v: pi[%d] = %.15g, dense %.15g", agg, i, pi[i], want[i])
					}
				}
				tps = append(tps, ctmc.Throughputs(c, pi))
				uts = append(uts, ctmc.Utilisations(c, pi))
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
	c := testchain.Chain(t, "P = (a, 1).Q; Q = (b, 1).R + (c, 1).S; R = (d, 1).R2; R2 = (e, 1).R; S = (f, 1).S2; S2 = (g, 1).S; P")
	_, err := Solve(context.Background(), c, Options{SingleClass: true})
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

// TestDeadlockRefused: a chain with a deadlock has no steady state; the
// error names the state.
func TestDeadlockRefused(t *testing.T) {
	c := testchain.Chain(t, "P = (a, 1).Stop; Stop = (b, infty).Stop; R = (c, 1).R2; R2 = (d, 1).R2; P <b, d> R")
	_, err := Solve(context.Background(), c, Options{})
	if err == nil || !strings.Contains(err.Error(), "deadlock in state") || !strings.Contains(err.Error(), "Stop, R2") {
		t.Fatalf("error %v", err)
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
`, MethodSparse},
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
`, MethodSparse},
	}
	for _, m := range models {
		t.Run(m.name, func(t *testing.T) {
			c := testchain.Chain(t, m.src)
			ctx := context.Background()
			if _, err := Solve(ctx, c, Options{Method: MethodSweeps}); err == nil || !strings.Contains(err.Error(), "Gauss-Seidel gave state") {
				t.Fatalf("forced gauss-seidel: %v, want its refusal of a state (the case this test is for)", err)
			}
			// DirectLimit 2 sends the class to the sweeps first (sparse
			// GTH not first: SparseEarlyWork negative), as a large
			// class whose sparse reduction costs much is; sparse GTH
			// comes next.
			got, err := Solve(ctx, c, Options{DirectLimit: 2, SparseEarlyWork: -1})
			if err != nil {
				t.Fatalf("auto refused: %v", err)
			}
			if got.Method != m.via || !strings.Contains(got.Reason, "Gauss-Seidel gave state") {
				t.Errorf("auto ran %s (%s), want %s after the sweeps' refusal, named", got.Method, got.Reason, m.via)
			}
			want, err := Solve(ctx, c, Options{Method: MethodDirect})
			if err != nil {
				t.Fatal(err)
			}
			gt, wt := ctmc.Throughputs(c, got.Pi), ctmc.Throughputs(c, want.Pi)
			for k := range wt {
				if math.Abs(gt[k].Value-wt[k].Value) > 1e-9*wt[k].Value {
					t.Errorf("throughput of %s: %.15g, gth %.15g", wt[k].Action, gt[k].Value, wt[k].Value)
				}
			}
		})
	}
}
