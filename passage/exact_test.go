package passage

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"pepa/ctmc"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// erlangModel is k phases at rate lambda; the last one is "done".
func erlangModel(k int, rates []float64) string {
	var b strings.Builder
	for i := 0; i < k; i++ {
		fmt.Fprintf(&b, "r%d = %g;\n", i, rates[i])
	}
	for i := 0; i < k; i++ {
		act := "step"
		if i == k-1 {
			act = "done"
		}
		next := fmt.Sprintf("P%d", (i+1)%k)
		fmt.Fprintf(&b, "P%d = (%s, r%d).%s;\n", i, act, i, next)
	}
	b.WriteString("P0\n")
	return b.String()
}

func erlangCDF(k int, lambda, t float64) float64 {
	s, term := 0.0, 1.0
	for n := 0; n < k; n++ {
		if n > 0 {
			term *= lambda * t / float64(n)
		}
		s += term
	}
	return 1 - math.Exp(-lambda*t)*s
}

// hypoCDF is the CDF of a sum of exponentials with distinct rates:
// 1 - sum_i (prod_{j != i} l_j / (l_j - l_i)) exp(-l_i t).
func hypoCDF(l []float64, t float64) float64 {
	s := 0.0
	for i := range l {
		c := 1.0
		for j := range l {
			if j != i {
				c *= l[j] / (l[j] - l[i])
			}
		}
		s += c * math.Exp(-l[i]*t)
	}
	return 1 - s
}

func TestErlang(t *testing.T) {
	const k, lambda = 5, 2.0
	rates := []float64{lambda, lambda, lambda, lambda, lambda}
	c := chainOf(t, erlangModel(k, rates))
	pr := InitialProblem(c, actions(t, c, "done"))
	r := solveOne(t, c, pr, Options{Complete: true})
	for _, at := range []float64{0, 0.1, 0.5, 1, 2, 2.5, 4, 8, 20} {
		got, want := cdf(t, r, at), erlangCDF(k, lambda, at)
		if !near(got, want, 1e-10) {
			t.Errorf("F(%g) = %.15g, Erlang %.15g", at, got, want)
		}
		d, err := r.PDF(at)
		if err != nil {
			t.Fatal(err)
		}
		wantD := math.Pow(lambda, k) * math.Pow(at, k-1) * math.Exp(-lambda*at) / 24
		if !near(d, wantD, 1e-9) {
			t.Errorf("f(%g) = %.15g, Erlang density %.15g", at, d, wantD)
		}
	}
	mean, err := Mean(context.Background(), c, pr)
	if err != nil || !near(mean, k/lambda, 1e-12) {
		t.Errorf("mean %.15g (%v), want %g", mean, err, k/lambda)
	}
	for _, p := range []float64{0.01, 0.5, 0.99} {
		q, err := r.Quantile(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := erlangCDF(k, lambda, q); !near(got, p, 1e-9) {
			t.Errorf("quantile %g = %g, where the Erlang CDF is %g", p, q, got)
		}
	}
}

func TestHypoexponential(t *testing.T) {
	rates := []float64{0.5, 1.5, 3, 7}
	c := chainOf(t, erlangModel(len(rates), rates))
	r := solveOne(t, c, InitialProblem(c, actions(t, c, "done")), Options{Horizon: 30})
	for _, at := range []float64{0.01, 0.3, 1, 3, 10, 30} {
		if got, want := cdf(t, r, at), hypoCDF(rates, at); !near(got, want, 1e-10) {
			t.Errorf("F(%g) = %.15g, want %.15g", at, got, want)
		}
	}
	if _, err := r.CDF(100); err == nil {
		t.Errorf("t beyond the horizon gave no error")
	}
}

// TestStiffAndLong: rates 1e4 and 1e-4 in one chain, and q*t of 1e6.
func TestStiffAndLong(t *testing.T) {
	rates := []float64{1e4, 1e-4}
	c := chainOf(t, erlangModel(2, rates))
	r := solveOne(t, c, InitialProblem(c, actions(t, c, "done")), Options{Horizon: 100})
	if q := r.Q * 100; q < 1e6 {
		t.Fatalf("q*t = %g, want at least 1e6", q)
	}
	for _, at := range []float64{1e-5, 1e-3, 1, 50, 100} {
		if got, want := cdf(t, r, at), hypoCDF(rates, at); !near(got, want, 1e-10) {
			t.Errorf("F(%g) = %.15g, want %.15g", at, got, want)
		}
	}
}

// TestOwnerPreemption: a task of Exp(mu) work on a machine whose owner
// comes (rate a) and goes (rate b) and preempts the task while present.
// From the owner absent, the completion time is phase-type with
// S = [[-(mu+a), a], [b, -b]]: survival c1 e^{s1 t} + c2 e^{s2 t} with s1, s2
// the roots of s^2 + (mu+a+b) s + mu b = 0, c1 + c2 = 1 and
// c1 s1 + c2 s2 = -mu (the survival's slope at 0); mean (1/mu)(1 + a/b).
func TestOwnerPreemption(t *testing.T) {
	mu, a, b := 0.5, 0.3, 1.2
	c := chainOf(t, fmt.Sprintf(`mu = %g; a = %g; b = %g;
Task = (work, mu).Task;
Off = (work, infty).Off + (arrive, a).On;
On = (leave, b).Off;
Task <work> Off`, mu, a, b))
	pr := InitialProblem(c, actions(t, c, "work"))
	r := solveOne(t, c, pr, Options{Horizon: 40})
	sum, prod := mu+a+b, mu*b
	disc := math.Sqrt(sum*sum - 4*prod)
	s1, s2 := (-sum+disc)/2, (-sum-disc)/2
	c1 := (-mu - s2) / (s1 - s2)
	c2 := 1 - c1
	for _, at := range []float64{0.5, 1, 2, 5, 10, 40} {
		want := 1 - c1*math.Exp(s1*at) - c2*math.Exp(s2*at)
		if got := cdf(t, r, at); !near(got, want, 1e-10) {
			t.Errorf("F(%g) = %.15g, closed form %.15g", at, got, want)
		}
	}
	mean, err := Mean(context.Background(), c, pr)
	if want := (1 / mu) * (1 + a/b); err != nil || !near(mean, want, 1e-12) {
		t.Errorf("mean %.15g (%v), want %.15g", mean, err, want)
	}
}

// expmCDF computes the passage CDF with gonum's dense matrix exponential:
// targets made absorbing (target actions redirected to an extra state).
func expmCDF(c *ctmc.Chain, pr Problem, at float64) float64 {
	n := c.N + 1 // state n-1 is the sink
	q := mat.NewDense(n, n, nil)
	isTA := map[int32]bool{}
	for _, a := range pr.TargetActions {
		isTA[a] = true
	}
	for i := 0; i < c.N; i++ {
		if pr.TargetStates != nil && pr.TargetStates[i] {
			continue
		}
		for e := c.RowPtr[i]; e < c.RowPtr[i+1]; e++ {
			j := int(c.Col[e])
			if isTA[c.Act[e]] {
				j = n - 1
			}
			if j == i {
				continue
			}
			q.Set(i, j, q.At(i, j)+c.RateAt(e))
			q.Set(i, i, q.At(i, i)-c.RateAt(e))
		}
	}
	q.Scale(at, q)
	var e mat.Dense
	e.Exp(q)
	f := 0.0
	for i, x := range pr.Alpha {
		if x == 0 {
			continue
		}
		f += x * e.At(i, n-1)
		for j := 0; j < c.N; j++ {
			if pr.TargetStates != nil && pr.TargetStates[j] {
				f += x * e.At(i, j)
			}
		}
	}
	return f
}

func TestAgainstMatrixExponential(t *testing.T) {
	lan := chainOfFile(t, "../testdata/pc-lan.pepa")
	badge := chainOfFile(t, "../testdata/active-badge.pepa")
	pred, err := ctmc.ParsePredicate(badge.S, "DB1 == DB3")
	if err != nil {
		t.Fatal(err)
	}
	pi, err := SteadyForPlugin(context.Background(), lan)
	if err != nil {
		t.Fatal(err)
	}
	plug, err := PluginProblem(lan, pi, actions(t, lan, "serve1"), actions(t, lan, "serve3"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		c    *ctmc.Chain
		pr   Problem
	}{
		{"PC LAN: first transmission by PC 3", lan, InitialProblem(lan, actions(t, lan, "transmit3"))},
		{"PC LAN plug-in: serve1 to serve3", lan, plug},
		{"Active Badge: database says room 3", badge, StateProblem(badge, ctmc.SelectStates(badge, pred))},
	}
	for _, tc := range cases {
		r := solveOne(t, tc.c, tc.pr, Options{Horizon: 20, Epsilon: 1e-14})
		for _, at := range []float64{0.1, 1, 5, 20} {
			got, want := cdf(t, r, at), expmCDF(tc.c, tc.pr, at)
			if !near(got, want, 1e-12) {
				t.Errorf("%s: F(%g) = %.15g, expm %.15g", tc.name, at, got, want)
			}
		}
	}
}

func TestProperties(t *testing.T) {
	c := chainOfFile(t, "../testdata/mapping-a.pepa")
	pr := InitialProblem(c, actions(t, c, "compute9", "compute10", "compute11", "compute12"))
	grid := solveOne(t, c, pr, Options{Horizon: 60})
	prev := -1.0
	for at := 0.0; at <= 60; at += 0.5 {
		v := cdf(t, grid, at)
		if v < prev || v < 0 || v > 1 {
			t.Fatalf("F(%g) = %g after %g: not a CDF", at, v, prev)
		}
		prev = v
		if int(at*2)%15 == 0 {
			alone := solveOne(t, c, pr, Options{Horizon: at})
			if a := cdf(t, alone, at); !near(a, v, 1e-13) {
				t.Errorf("F(%g): %g on the grid, %g alone", at, v, a)
			}
		}
	}
	if cdf(t, grid, 0) != 0 {
		t.Errorf("F(0) = %g", cdf(t, grid, 0))
	}
}

func TestEdgeCases(t *testing.T) {
	// A race between finishing and dying: F(t) = (1 - e^{-2t})/2 - t e^{-2t},
	// and half the mass is stuck in a dead state that is not the target.
	c := chainOf(t, "P = (a, 1).Q + (b, 1).Dead; Q = (done, 2).P; Dead = (never, 1).Dead; Z = (z, 1).Z; P <never> Z")
	pr := InitialProblem(c, actions(t, c, "done"))
	r := solveOne(t, c, pr, Options{Complete: true})
	for _, at := range []float64{0, 0.5, 2, 30} {
		want := (1-math.Exp(-2*at))/2 - at*math.Exp(-2*at)
		if got := cdf(t, r, at); !near(got, want, 1e-10) {
			t.Errorf("F(%g) = %.15g, want %.15g", at, got, want)
		}
	}
	if m, err := Mean(context.Background(), c, pr); err != nil || !math.IsInf(m, 1) {
		t.Errorf("mean %g (%v), want +Inf", m, err)
	}
	if q, err := r.Quantile(0.9); err != nil || !math.IsInf(q, 1) {
		t.Errorf("0.9 quantile %g (%v), want +Inf", q, err)
	}

	// The start is a target: F = 1 from t = 0.
	c2 := chainOf(t, erlangModel(3, []float64{1, 2, 3}))
	start := make([]bool, c2.N)
	start[0] = true
	r2 := solveOne(t, c2, StateProblem(c2, start), Options{Horizon: 5})
	if cdf(t, r2, 0) != 1 || cdf(t, r2, 5) != 1 {
		t.Errorf("start in target: F(0) = %g, F(5) = %g", cdf(t, r2, 0), cdf(t, r2, 5))
	}
	if m, _ := Mean(context.Background(), c2, StateProblem(c2, start)); m != 0 {
		t.Errorf("mean %g, want 0", m)
	}

	// An unreachable target: all zero, flagged.
	c3 := chainOf(t, "P = (a, 1).P2; P2 = (b, 1).P; Q = (c, 1).Q; P <c> Q")
	r3 := solveOne(t, c3, InitialProblem(c3, actions(t, c3, "c")), Options{Horizon: 10})
	if r3.Reachable || cdf(t, r3, 10) != 0 {
		t.Errorf("unreachable: reachable=%v F(10)=%g", r3.Reachable, cdf(t, r3, 10))
	}
}

// TestDeterministicAcrossCores: the kernel's results are bit-for-bit the
// same with one core or two.
func TestDeterministicAcrossCores(t *testing.T) {
	c := chainOfFile(t, "../../shared/examples/iccs2020-mapping-a.pepa")
	if c.N <= rowBlock {
		t.Fatalf("chain too small to split: %d states", c.N)
	}
	probs := []Problem{InitialProblem(c, actions(t, c, "compute20")), InitialProblem(c, actions(t, c, "compute19"))}
	run := func(procs int) []*Result {
		old := runtime.GOMAXPROCS(procs)
		defer runtime.GOMAXPROCS(old)
		rs, err := Solve(context.Background(), c, probs, Options{Horizon: 45})
		if err != nil {
			t.Fatal(err)
		}
		one := solveOne(t, c, probs[0], Options{Horizon: 45})
		return append(rs, one)
	}
	a, b := run(1), run(2)
	for p := range a {
		if len(a[p].Absorbed) != len(b[p].Absorbed) {
			t.Fatalf("passage %d: %d vs %d steps", p, len(a[p].Absorbed), len(b[p].Absorbed))
		}
		for k := range a[p].Absorbed {
			if a[p].Absorbed[k] != b[p].Absorbed[k] {
				t.Fatalf("passage %d step %d: %v with one core, %v with two", p, k, a[p].Absorbed[k], b[p].Absorbed[k])
			}
		}
	}
	// The shared sweep and the single-passage kernel agree.
	for k := range a[0].Absorbed {
		if !near(a[0].Absorbed[k], a[2].Absorbed[k], 1e-15) {
			t.Fatalf("step %d: block %v, single %v", k, a[0].Absorbed[k], a[2].Absorbed[k])
		}
	}
}

func TestFoxGlynn(t *testing.T) {
	for _, lambda := range []float64{1e-6, 0.5, 3, 40, 1234.5, 1e5, 1e7} {
		w, err := FoxGlynn(lambda, 1e-10)
		if err != nil {
			t.Fatal(err)
		}
		// Against the log-space pmf for moderate lambda; everywhere the
		// weights are finite, positive and sum to 1.
		s := 0.0
		for i, x := range w.W {
			if !(x > 0) || math.IsInf(x, 0) {
				t.Fatalf("lambda %g: weight %d is %g", lambda, w.Left+i, x)
			}
			s += x
			if lambda <= 1e4 { // lgamma loses digits beyond
				k := float64(w.Left + i)
				lg, _ := math.Lgamma(k + 1)
				want := math.Exp(-lambda + k*math.Log(lambda) - lg)
				if math.Abs(x-want) > 1e-10*math.Max(want, 1e-300)+1e-15 {
					t.Fatalf("lambda %g, k %g: %g, pmf %g", lambda, k, x, want)
				}
			}
		}
		if math.Abs(s-1) > 1e-12 {
			t.Errorf("lambda %g: weights sum to %.17g", lambda, s)
		}
		// The truncation points bracket the mean by a few standard deviations.
		sd := math.Sqrt(lambda)
		if float64(w.Right()) < lambda || float64(w.Right()) > lambda+15*sd+20 || float64(w.Left) > lambda {
			t.Errorf("lambda %g: [%d, %d]", lambda, w.Left, w.Right())
		}
	}
}
