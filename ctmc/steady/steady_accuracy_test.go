package steady

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand"
	"strings"
	"testing"

	"pepa/ctmc"
	"pepa/internal/testing/testchain"
)

// bigSteady is the reference solver of these tests, written without any of
// the solver's code: the dense generator in 256-bit floats, the diagonal
// formed exactly as minus the sum of the row, pi Q = 0 with the last
// equation replaced by sum pi = 1, Gaussian elimination with partial
// pivoting. With one closed class the system is regular, transient states
// included (they come out 0). It returns the throughput of every action.
func bigSteady(t *testing.T, c *ctmc.Chain) map[string]float64 {
	t.Helper()
	const prec = 256
	n := c.N
	newF := func() *big.Float { return new(big.Float).SetPrec(prec) }
	// a[row][col] for the transposed system: row j is the balance of state j.
	a := make([][]*big.Float, n)
	for j := range a {
		a[j] = make([]*big.Float, n+1)
		for i := range a[j] {
			a[j][i] = newF()
		}
	}
	for i := 0; i < n; i++ {
		for k := c.RowPtr[i]; k < c.RowPtr[i+1]; k++ {
			j := int(c.Col[k])
			if j == i {
				continue
			}
			r := newF().SetFloat64(c.RateAt(k))
			a[j][i].Add(a[j][i], r)
			a[i][i].Sub(a[i][i], r)
		}
	}
	for i := 0; i <= n; i++ {
		a[n-1][i].SetFloat64(1)
	}
	tmp := newF()
	for col := 0; col < n; col++ {
		piv := col
		for r := col + 1; r < n; r++ {
			if new(big.Float).Abs(a[r][col]).Cmp(new(big.Float).Abs(a[piv][col])) > 0 {
				piv = r
			}
		}
		a[col], a[piv] = a[piv], a[col]
		if a[col][col].Sign() == 0 {
			t.Fatalf("reference solve: singular at column %d", col)
		}
		for r := col + 1; r < n; r++ {
			if a[r][col].Sign() == 0 {
				continue
			}
			f := newF().Quo(a[r][col], a[col][col])
			for k := col; k <= n; k++ {
				a[r][k].Sub(a[r][k], tmp.Mul(f, a[col][k]))
			}
		}
	}
	x := make([]*big.Float, n)
	for r := n - 1; r >= 0; r-- {
		s := newF().Set(a[r][n])
		for k := r + 1; k < n; k++ {
			s.Sub(s, tmp.Mul(a[r][k], x[k]))
		}
		x[r] = s.Quo(s, a[r][r])
	}
	sums := map[string]*big.Float{}
	for i := 0; i < n; i++ {
		for k := c.RowPtr[i]; k < c.RowPtr[i+1]; k++ {
			name := c.S.Actions[c.Act[k]]
			if sums[name] == nil {
				sums[name] = newF()
			}
			sums[name].Add(sums[name], tmp.Mul(x[i], newF().SetFloat64(c.RateAt(k))))
		}
	}
	out := map[string]float64{}
	for name, s := range sums {
		out[name], _ = s.Float64()
	}
	return out
}

// checkThroughputs solves c with every method and compares every
// throughput with want, relative to itself; it also checks that the error
// estimate the solver reports is honest (the actual error is no more than
// ten times the estimate plus a floor, see below). The direct methods
// (dense and sparse GTH) must solve every chain; the iterative one may refuse, with an error saying it
// could not reach the tolerance, and checkThroughputs reports whether it
// did. Gauss-Seidel may refuse too (stiff chains stall it; forced, it
// sweeps up to 20,000 times): that is not reported.
func checkThroughputs(t *testing.T, c *ctmc.Chain, want map[string]float64, tol float64) (refused bool) {
	t.Helper()
	for _, method := range []string{MethodDirect, MethodSparse, MethodIterative, MethodSweeps} {
		res, err := Solve(context.Background(), c, Options{Method: method, MaxIterations: 20000})
		if method == MethodIterative && errors.Is(err, errNoProgress) {
			refused = true
			continue
		}
		if method == MethodSweeps && errors.Is(err, errNoProgress) {
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		if res.Method != method {
			t.Errorf("method %q, want %q", res.Method, method)
		}
		if method != MethodDirect && method != MethodSparse && res.MaxThroughputError > 1e-12 {
			t.Errorf("%s: reported error %g above the default tolerance", method, res.MaxThroughputError)
		}
		for _, tp := range ctmc.Throughputs(c, res.Pi) {
			w, ok := want[tp.Action]
			if !ok {
				t.Fatalf("%s: unexpected action %s", method, tp.Action)
			}
			// The 256-bit reference leaves its own rounding (about 1e-77)
			// where the answer is 0: actions enabled only in transient
			// states.
			if math.Abs(w) < 1e-60 {
				w = 0
			}
			rel := math.Abs(tp.Value-w) / w
			if w == 0 {
				rel = math.Abs(tp.Value)
			}
			if rel > tol || math.IsNaN(rel) {
				t.Errorf("%s: throughput(%s) = %.17g, want %.17g (relative error %.3g)", method, tp.Action, tp.Value, w, rel)
			}
			// The floor, 1e-13, covers the rounding of the sums.
			if est := res.ThroughputError[tp.Action]; w != 0 && rel > 10*est+1e-13 {
				t.Errorf("%s: throughput(%s) is off by %.3g relative but the solver estimates %.3g", method, tp.Action, rel, est)
			}
		}
	}
	return refused
}

// TestBirthDeathStiff: birth-death chains with rates log-uniform in
// [1e-4, 1e5]. Closed form: pi_k proportional to prod_{i<k} l_i / m_{i+1};
// each level's births and deaths are their own actions, so the rare ones
// are checked relative to themselves.
func TestBirthDeathStiff(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	const trials = 100
	refused := 0
	defer func() { t.Logf("the iterative method refused %d of %d chains", refused, trials) }()
	for trial := 0; trial < trials; trial++ {
		const K = 14
		lam := make([]float64, K)
		mu := make([]float64, K+1)
		logRate := func() float64 { return math.Pow(10, -4+9*rng.Float64()) }
		var b strings.Builder
		for k := 0; k <= K; k++ {
			var terms []string
			if k < K {
				lam[k] = logRate()
				terms = append(terms, fmt.Sprintf("(up%d, %.17g).S%d", k, lam[k], k+1))
			}
			if k > 0 {
				mu[k] = logRate()
				terms = append(terms, fmt.Sprintf("(down%d, %.17g).S%d", k, mu[k], k-1))
			}
			fmt.Fprintf(&b, "S%d = %s;\n", k, strings.Join(terms, " + "))
		}
		b.WriteString("S0\n")
		c := testchain.Chain(t, b.String())
		// The closed form in 256-bit floats, so that the reference is exact
		// to far below the solver's errors.
		newF := func() *big.Float { return new(big.Float).SetPrec(256) }
		w := make([]*big.Float, K+1)
		w[0] = newF().SetFloat64(1)
		sum := newF().SetFloat64(1)
		for k := 1; k <= K; k++ {
			w[k] = newF().Mul(w[k-1], newF().SetFloat64(lam[k-1]))
			w[k].Quo(w[k], newF().SetFloat64(mu[k]))
			sum.Add(sum, w[k])
		}
		want := map[string]float64{}
		for k := 0; k <= K; k++ {
			p := newF().Quo(w[k], sum)
			if k < K {
				want[fmt.Sprintf("up%d", k)], _ = newF().Mul(p, newF().SetFloat64(lam[k])).Float64()
			}
			if k > 0 {
				want[fmt.Sprintf("down%d", k)], _ = newF().Mul(p, newF().SetFloat64(mu[k])).Float64()
			}
		}
		t.Run(fmt.Sprint(trial), func(t *testing.T) {
			if !checkThroughputs(t, c, want, 1e-8) {
				return
			}
			refused++
			// Chosen automatically above DirectLimit, the sweeps (or
			// BiCGSTAB after them, or GTH after that) answer within their
			// own estimate.
			res, err := Solve(context.Background(), c, Options{DirectLimit: 2})
			if err != nil {
				t.Fatalf("auto after a refusal: %v", err)
			}
			for _, tp := range ctmc.Throughputs(c, res.Pi) {
				w := want[tp.Action]
				rel := math.Abs(tp.Value-w) / w
				if rel > 1e-8 || rel > 10*res.ThroughputError[tp.Action]+1e-13 {
					t.Errorf("auto (%s: %s): throughput(%s) = %g, want %g (relative error %.3g, estimate %.3g)", res.Method, res.Reason, tp.Action, tp.Value, w, rel, res.ThroughputError[tp.Action])
				}
			}
		})
	}
}

// TestFormerlyNonConverging: the 18-state model Gauss-Seidel never
// finished, against the 256-bit reference.
func TestFormerlyNonConverging(t *testing.T) {
	c := testchain.Chain(t, `A0 = (b, 0.0003).A0; B0 = (b, 1.0).B1;
B1 = (b, 2.5).B1 + (c, 1.5).(b, 0.25).B0; C0 = (e, 2.0).(b, 3.0).C0; (A0 <b> B0[2][c]) <> C0`)
	checkThroughputs(t, c, bigSteady(t, c), 1e-12)
	// By hand: C0 cycles on its own, so e fires at 1 / (1/2 + 1/3) = 1.2,
	// and its b's add 1.2 to the synchronised b's, which are capped by
	// A0's 0.0003 while some copy of B0 enables b.
	want := bigSteady(t, c)
	if math.Abs(want["e"]-1.2) > 1e-15 || want["b"] < 1.2 || want["b"] > 1.2003+1e-15 {
		t.Fatalf("reference disagrees with the hand-worked bounds: %v", want)
	}
}

// randomStiffModel writes a random sequential component of n derivatives
// (a cycle through all of them, so it is irreducible, plus extra random
// transitions), rates log-uniform in [1e-4, 1e5], actions drawn from a few
// names so that several transitions share one. With two components they
// cooperate on one action.
func randomStiffModel(rng *rand.Rand, n int, name string) string {
	var b strings.Builder
	rate := func() float64 { return math.Pow(10, -4+9*rng.Float64()) }
	for i := 0; i < n; i++ {
		terms := []string{fmt.Sprintf("(a%d, %.6g).%s%d", rng.Intn(4), rate(), name, (i+1)%n)}
		for e := rng.Intn(3); e > 0; e-- {
			terms = append(terms, fmt.Sprintf("(a%d, %.6g).%s%d", rng.Intn(4), rate(), name, rng.Intn(n)))
		}
		fmt.Fprintf(&b, "%s%d = %s;\n", name, i, strings.Join(terms, " + "))
	}
	return b.String()
}

// TestRandomStiff: random stiff chains against the 256-bit reference,
// both methods, every throughput within 1e-8 of itself.
func TestRandomStiff(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	const trials = 100
	solved, refused := 0, 0
	defer func() {
		t.Logf("%d of %d random models have one closed class; the iterative method refused %d", solved, trials, refused)
		if solved < trials/2 {
			t.Errorf("only %d of %d random models were solvable; the generator needs changing", solved, trials)
		}
	}()
	for trial := 0; trial < trials; trial++ {
		var src string
		if trial%2 == 0 {
			src = randomStiffModel(rng, 5+rng.Intn(40), "P") + "P0\n"
		} else {
			// a1 is shared: the product's rates follow the apparent-rate rule.
			src = randomStiffModel(rng, 3+rng.Intn(6), "P") + randomStiffModel(rng, 3+rng.Intn(6), "Q") + "P0 <a1> Q0\n"
		}
		c := testchain.Chain(t, src)
		if trial%2 == 0 && (len(c.Deadlocks) > 0 || Irreducible(c) != nil) {
			t.Fatalf("trial %d: a single cyclic component should be irreducible", trial)
		}
		if len(c.Deadlocks) > 0 {
			continue // a synchronised pair can block; TestDeadlock covers refusal
		}
		if cl, _ := findClasses(c, nil); len(cl.classes) != 1 {
			continue // or split into classes; absorption_test.go covers that
		}
		solved++
		t.Run(fmt.Sprint(trial), func(t *testing.T) {
			if checkThroughputs(t, c, bigSteady(t, c), 1e-8) {
				refused++
			}
		})
	}
}

// TestTransientStartup: a start-up state that is never re-entered gets
// probability 0, and the rest is the two-state cycle's closed form.
func TestTransientStartup(t *testing.T) {
	c := testchain.Chain(t, "Start = (boot, 1.0).Up; Up = (fail, 0.1).Down; Down = (repair, 2.0).Up; Start")
	for _, method := range []string{MethodDirect, MethodIterative} {
		res, err := Solve(context.Background(), c, Options{Method: method})
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		if res.Transient != 1 || res.ClosedStates != 2 || res.Pi[0] != 0 {
			t.Fatalf("%s: transient %d, closed %d, pi %v", method, res.Transient, res.ClosedStates, res.Pi)
		}
		// P(Up) = 2 / 2.1: fail fires at 0.1 * 2/2.1, repair as often.
		want := 0.1 * 2 / 2.1
		for _, a := range []string{"fail", "repair"} {
			if got := throughputOf(c, res.Pi, a); math.Abs(got-want) > 1e-14*want {
				t.Errorf("%s: throughput(%s) = %.17g, want %.17g", method, a, got, want)
			}
		}
		if got := throughputOf(c, res.Pi, "boot"); got != 0 {
			t.Errorf("%s: throughput(boot) = %g, want 0", method, got)
		}
	}
}

// TestAlternatingBit: an alternating-bit-like protocol whose sender and
// channel both boot first (transient start-up states) against the 256-bit
// reference, which solves the whole chain, transients included.
func TestAlternatingBit(t *testing.T) {
	c := testchain.Chain(t, `
Boot = (init, 5.0).Send0;
Send0 = (snd0, 2.0).Wait0;
Wait0 = (ack0, infty).Send1 + (timeout0, 0.1).Send0;
Send1 = (snd1, 2.0).Wait1;
Wait1 = (ack1, infty).Send0 + (timeout1, 0.1).Send1;
RBoot = (rinit, 1.0).Chan;
Chan = (snd0, infty).Ch0 + (snd1, infty).Ch1;
Ch0 = (ack0, 3.0).Chan + (lose0, 0.2).Chan;
Ch1 = (ack1, 3.0).Chan + (lose1, 0.2).Chan;
Boot <snd0, snd1, ack0, ack1> RBoot`)
	if len(c.Deadlocks) > 0 {
		t.Fatalf("deadlocks: %v", c.Deadlocks)
	}
	want := bigSteady(t, c)
	for _, method := range []string{MethodDirect, MethodIterative} {
		res, err := Solve(context.Background(), c, Options{Method: method})
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		if res.Transient != 3 {
			t.Errorf("%s: %d transient states, want 3 (both booting, and each booted alone)", method, res.Transient)
		}
		for i := 0; i < c.N; i++ {
			names := c.StateString(i)
			if (strings.Contains(names, "Boot") || strings.Contains(names, "RBoot")) && res.Pi[i] != 0 {
				t.Errorf("%s: transient state %s has probability %g", method, names, res.Pi[i])
			}
		}
		for _, tp := range ctmc.Throughputs(c, res.Pi) {
			if tp.Action == "init" || tp.Action == "rinit" {
				if tp.Value != 0 {
					t.Errorf("%s: start-up action %s has throughput %g", method, tp.Action, tp.Value)
				}
				continue
			}
			if w := want[tp.Action]; math.Abs(tp.Value-w) > 1e-12*w {
				t.Errorf("%s: throughput(%s) = %.17g, reference %.17g", method, tp.Action, tp.Value, w)
			}
		}
	}
}

// TestOneFastRate: one immediate-like rate (1e5) among slow ones; the slow
// throughputs were off by 4e-4 under the former stopping rule.
func TestOneFastRate(t *testing.T) {
	c := testchain.Chain(t, `
P0 = (go, 0.002).P1; P1 = (fast, 100000.0).P2; P2 = (slow, 0.0003).P0 + (back, 0.5).P1;
Q0 = (go, infty).Q1 + (tick, 0.01).Q0; Q1 = (work, 0.07).Q0;
P0 <go> Q0`)
	checkThroughputs(t, c, bigSteady(t, c), 1e-12)
}

// TestClosedClassesNamed: two closed classes are refused under
// SingleClass, each named by a state's components.
func TestClosedClassesNamed(t *testing.T) {
	c := testchain.Chain(t, `
P = (a, 1.0).Q; Q = (b, 1.0).R + (c, 1.0).S;
R = (d, 1.0).R2; R2 = (e, 1.0).R; S = (f, 1.0).S2; S2 = (g, 1.0).S;
M = (m, 1.0).M2; M2 = (n, 2.0).M;
P <> M`)
	_, err := Solve(context.Background(), c, Options{SingleClass: true})
	var nie *NotIrreducibleError
	if !errors.As(err, &nie) || len(nie.Closed) != 2 {
		t.Fatalf("got %v, want two closed classes", err)
	}
	for _, want := range []string{"such as (R, M)", "such as (S, M)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q does not name %q", err, want)
		}
	}
}

// TestOneStateClass: a machine with one application is one state with a
// self-loop: probability 1, throughput the rate, after a transient state.
func TestOneStateClass(t *testing.T) {
	c := testchain.Chain(t, "S = (boot, 2.0).M; M = (compute1, 0.25).M; S")
	res, err := Solve(context.Background(), c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Pi[0] != 0 || res.Pi[1] != 1 || res.Transient != 1 {
		t.Fatalf("pi %v, transient %d", res.Pi, res.Transient)
	}
	if got := throughputOf(c, res.Pi, "compute1"); got != 0.25 {
		t.Errorf("throughput %g, want 0.25", got)
	}
}

// TestExtremeRates: rates from 1e-300 to 1e300 get an answer or an error,
// never a panic or a NaN.
func TestExtremeRates(t *testing.T) {
	for _, src := range []string{
		"P = (a, 1e300).Q; Q = (b, 1e-300).P; P",
		"P = (a, 1e300).Q + (c, 1e300).Q; Q = (b, 1e300).P + (d, 1e-300).Q2; Q2 = (e, 1.0).P; P",
		"P = (a, 1e-300).Q; Q = (b, 1e-300).P + (c, 1e-310).P; P",
	} {
		c := testchain.Chain(t, src)
		for _, method := range []string{MethodDirect, MethodIterative} {
			res, err := Solve(context.Background(), c, Options{Method: method})
			if err != nil {
				continue
			}
			for _, p := range res.Pi {
				if math.IsNaN(p) || p < 0 {
					t.Errorf("%s on %q: pi %v", method, src, res.Pi)
				}
			}
			if math.IsNaN(res.MaxThroughputError) {
				t.Errorf("%s on %q: NaN error estimate", method, src)
			}
		}
	}
	// Forcing the direct method on a class too large for it is an error.
	c := testchain.Chain(t, "P = (a, 1.0).P2; P2 = (b, 1.0).P; P")
	if _, err := Solve(context.Background(), c, Options{Method: "lu"}); err == nil {
		t.Error("unknown method accepted")
	}
}
