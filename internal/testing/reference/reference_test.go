package reference

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"pepa/lang"

	"gonum.org/v1/gonum/mat"
)

func derive(t *testing.T, src string) *Chain {
	t.Helper()
	m, diags := lang.Load("t.pepa", []byte(src))
	if diags.HasErrors() {
		t.Fatalf("model does not check: %v", diags.Err())
	}
	c, err := Derive(context.Background(), m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %.15g, want %.15g", what, got, want)
	}
}

func throughputs(t *testing.T, c *Chain) map[string]float64 {
	t.Helper()
	pi, err := c.Steady()
	if err != nil {
		t.Fatal(err)
	}
	return c.Throughputs(pi)
}

// The examples of semantics.md section 1, worked by hand.
func TestSpecExamples(t *testing.T) {
	// P = Q is a derivative of its own: states P, R, Q. Balance:
	// pi_P = 2 pi_R, pi_Q = 3 pi_R, so pi_R = 1/6.
	c := derive(t, "P = Q; Q = (a, 1.0).R; R = (b, 2.0).P + (c, 3.0).Q; P")
	if c.N() != 3 {
		t.Errorf("%d states, want 3", c.N())
	}
	x := throughputs(t, c)
	near(t, "a", x["a"], 5.0/6, 1e-14)
	near(t, "b", x["b"], 2.0/6, 1e-14)
	near(t, "c", x["c"], 3.0/6, 1e-14)

	// The repeated anonymous (c, 2.0).P is one derivative: two states.
	c = derive(t, "P = (a, 1.0).(c, 2.0).P + (b, 1.0).(c, 2.0).P; P")
	if c.N() != 2 {
		t.Errorf("%d states, want 2", c.N())
	}
	x = throughputs(t, c)
	near(t, "a", x["a"], 0.5, 1e-14)
	near(t, "c", x["c"], 1, 1e-14)

	// Passive in one derivative, active in the other: 2 states, h = 4/3.
	src := "P = (h, infty).(h, 1.0).P; Q = (h, 2.0).(h, infty).Q; P <h> Q"
	if _, diags := lang.Load("t.pepa", []byte(src)); diags.HasErrors() {
		t.Fatalf("lang rejects the spec's valid example: %v", diags.Err())
	}
	c = derive(t, src)
	if c.N() != 2 {
		t.Errorf("%d states, want 2", c.N())
	}
	near(t, "h", throughputs(t, c)["h"], 4.0/3, 1e-14)
}

func TestApparentRate(t *testing.T) {
	// ra(P) = 3, ra(Q) = 1.5: the two joint transitions have rates
	// (1/3)*1.5 = 0.5 and (2/3)*1.5 = 1.
	c := derive(t, "P = (a, 1.0).P + (a, 2.0).P2; P2 = (b, 1.0).P; Q = (a, 1.5).Q; P <a> Q")
	var rates []float64
	for _, tr := range c.Trans[0] {
		rates = append(rates, tr.Rate)
	}
	if len(rates) != 2 || math.Abs(rates[0]-0.5) > 1e-15 || math.Abs(rates[1]-1) > 1e-15 {
		t.Errorf("rates %v, want [0.5 1]", rates)
	}
	// Weighted passives: 2*infty and infty share the active rate 1 as 2:1.
	c = derive(t, "P = (a, 1.0).P; Q = (a, 2*infty).Q1 + (a, infty).Q2; Q1 = (b, 1.0).Q; Q2 = (c, 1.0).Q; P <a> Q")
	if len(c.Trans[0]) != 2 || math.Abs(c.Trans[0][0].Rate-2.0/3) > 1e-15 || math.Abs(c.Trans[0][1].Rate-1.0/3) > 1e-15 {
		t.Errorf("transitions %v, want rates 2/3 and 1/3", c.Trans[0])
	}
	// Two passives on a, then an active partner: min(2w, w)*infty = w
	// shared 1:1 within the passives, then the active rate 4 in full.
	c = derive(t, "P = (a, 4.0).P; Q = (a, 2*infty).Q; R = (a, infty).R; P <a> (Q <a> R)")
	if len(c.Trans[0]) != 1 || math.Abs(c.Trans[0][0].Rate-4) > 1e-15 {
		t.Errorf("transitions %v, want one of rate 4", c.Trans[0])
	}
	// Duplicate prefixes are two transitions (a race): throughput 2 of a.
	c = derive(t, "P = (a, 1.0).P + (a, 1.0).P; P")
	if len(c.Trans[0]) != 2 {
		t.Errorf("%d transitions, want 2", len(c.Trans[0]))
	}
	near(t, "a", throughputs(t, c)["a"], 2, 1e-15)
}

func TestRefusals(t *testing.T) {
	m, _ := lang.Load("t.pepa", []byte("S = (a, 1.0).P; P = (b, 1.0).P1 + (e, 3.0).P2; P1 = (c, 2.0).P1; P2 = (d, 1.0).P3; P3 = (f, 4.0).P2; S"))
	c, err := Derive(context.Background(), m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Two closed classes, solved from the initial state: P1 with
	// probability 1/4, the cycle P2, P3 with 3/4 split 4:1.
	if pi, err := c.Steady(); err != nil {
		t.Errorf("two closed classes: err = %v", err)
	} else {
		tp := c.Throughputs(pi)
		near(t, "c", tp["c"], 0.25*2, 1e-15)
		near(t, "d", tp["d"], 0.75*0.8*1, 1e-15)
		near(t, "f", tp["f"], 0.75*0.2*4, 1e-15)
		near(t, "b", tp["b"], 0, 0)
	}
	m, _ = lang.Load("t.pepa", []byte("P = (a, 1.0).P2; P2 = (b, 1.0).P2; Q = (a, 1.0).Q1; Q1 = (c, 1.0).Q1; P <a> Q"))
	c, err = Derive(context.Background(), m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(c.ClosedClasses()); n != 1 {
		t.Errorf("%d closed classes, want 1", n)
	}
	m, _ = lang.Load("t.pepa", []byte("P = (a, 1.0).Stop; Stop = (b, 1.0).Stop; Q = (a, 1.0).Q; P <a, b> Q"))
	c, err = Derive(context.Background(), m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Deadlocks) != 1 {
		t.Errorf("deadlocks %v, want one", c.Deadlocks)
	}
	if _, err := c.Steady(); !errors.Is(err, ErrNoSteadyState) {
		t.Errorf("deadlock: err = %v", err)
	}
	// Passive at the top level in a reachable state only.
	m, diags := lang.Load("t.pepa", []byte("P = (a, 1.0).P2; P2 = (b, infty).P; Q = (a, 1.0).Q; P <a> Q"))
	if m == nil {
		t.Fatalf("lang rejects statically what only a reachable state decides: %v", diags.Err())
	}
	if _, err := Derive(context.Background(), m, Options{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("passive at top: err = %v", err)
	}
}

func TestPassageClosedForms(t *testing.T) {
	// Exp(2) then Exp(3): hypoexponential.
	c := derive(t, "P = (a, 2.0).P2; P2 = (b, 3.0).P; P")
	p := c.InitialActions([]string{"b"})
	for _, x := range []float64{0, 0.1, 0.5, 1, 3, 10} {
		near(t, "CDF", c.CDF(p, x), 1-(3*math.Exp(-2*x)-2*math.Exp(-3*x)), 1e-13)
	}
	mean, err := c.Mean(p)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "mean", mean, 1.0/2+1.0/3, 1e-13)

	// A target self-loop: from P, a (rate 2) ends it, b leads to Q and
	// back. m_P = (1 + m_Q)/3, m_Q = 1 + m_P, so m_P = 1.
	c = derive(t, "P = (a, 2.0).P + (b, 1.0).Q; Q = (c, 1.0).P; P")
	mean, err = c.Mean(c.InitialActions([]string{"a"}))
	if err != nil {
		t.Fatal(err)
	}
	near(t, "self-loop mean", mean, 1, 1e-13)
	// The CDF just after 0 grows at rate 2 (density 2 at 0).
	near(t, "self-loop CDF(1e-6)", c.CDF(c.InitialActions([]string{"a"}), 1e-6)/1e-6, 2, 1e-5)

	// Stiff: Exp(1e4) then Exp(1e-4).
	c = derive(t, "P = (a, 1e4).Q; Q = (b, 1e-4).P; P")
	p = c.InitialActions([]string{"b"})
	l1, l2 := 1e4, 1e-4
	for _, x := range []float64{1e-4, 1, 1e3, 1e4, 1e5} {
		want := 1 - (l1*math.Exp(-l2*x)-l2*math.Exp(-l1*x))/(l1-l2)
		near(t, "stiff CDF", c.CDF(p, x), want, 1e-11)
	}
	// State target: first entry into P2.
	c = derive(t, "P = (a, 2.0).P2 + (c, 1.0).P3; P2 = (b, 3.0).P; P3 = (d, 5.0).P; P")
	target := make([]bool, c.N())
	for i, st := range c.States {
		target[i] = st[0] == "P2"
	}
	mean, err = c.Mean(c.InitialStates(target))
	if err != nil {
		t.Fatal(err)
	}
	// m_P = (1 + m_P3)/3, m_P3 = 1/5 + m_P: m_P = (1.2 + m_P)/3 = 0.6.
	near(t, "state mean", mean, 0.6, 1e-13)
	// Never reached: a deadlock before the target.
	c = derive(t, "P = (a, 2.0).P2 + (c, 1.0).Stop; P2 = (b, 3.0).P; Stop = (d, 1.0).Stop; P")
	mean, _ = c.Mean(c.InitialActions([]string{"b"}))
	if !math.IsInf(mean, 1) {
		t.Errorf("mean %g, want +Inf", mean)
	}
	near(t, "P(ever)", c.CDF(c.InitialActions([]string{"b"}), 1e3), 2.0/3, 1e-12)
}

func TestPlugin(t *testing.T) {
	// Cycle P -a-> P2 -b-> P3 -c-> P. Source a (state P2), target c
	// (state P): alpha is the point mass on P2, passage Exp(3)+Exp(4).
	c := derive(t, "P = (a, 2.0).P2; P2 = (b, 3.0).P3; P3 = (c, 4.0).P; P")
	pi, err := c.Steady()
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Plugin(pi, []string{"a"}, []string{"c"})
	if err != nil {
		t.Fatal(err)
	}
	mean, err := c.Mean(p)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "plugin mean", mean, 1.0/3+1.0/4, 1e-13)
}

func TestArraysAndWildcard(t *testing.T) {
	// Two independent copies: 3 states... no: (P,P),(P2,P),(P,P2),(P2,P2) = 4.
	c := derive(t, "P = (a, 1.0).P2; P2 = (b, 2.0).P; P[2]")
	if c.N() != 4 || len(c.Leaves) != 2 {
		t.Errorf("%d states %d leaves, want 4 and 2", c.N(), len(c.Leaves))
	}
	// Each copy is in P2 with probability 1/3: throughput of b = 2 * 2/3... per copy 2*(1/3).
	near(t, "b", throughputs(t, c)["b"], 2*2.0/3, 1e-14)
	// Synchronised copies move together: 2 states.
	c = derive(t, "P = (a, 1.0).P2; P2 = (b, 2.0).P; P[3][a, b]")
	if c.N() != 2 {
		t.Errorf("%d states, want 2", c.N())
	}
	// <*> is the intersection of the alphabets: a only.
	c = derive(t, "P = (a, 1.0).(b, 1.0).P; Q = (a, 2.0).(c, 1.0).Q; P <*> Q")
	if c.N() != 4 {
		t.Errorf("wildcard: %d states, want 4", c.N())
	}
	// Hiding turns a into tau, which no longer synchronises.
	c = derive(t, "P = (a, 1.0).P; Q = (a, 2.0).Q; (P/{a}) <a> Q")
	if len(c.Trans[0]) != 1 || c.Trans[0][0].Action != "tau" {
		t.Errorf("hidden: %v", c.Trans[0])
	}
}

func TestStiffMeanAndExp(t *testing.T) {
	c := derive(t, "P = (a, 1e4).Q; Q = (b, 1e-4).P; P")
	mean, err := c.Mean(c.InitialActions([]string{"b"}))
	if err != nil {
		t.Fatal(err)
	}
	near(t, "stiff mean", mean, 1e-4+1e4, 1e-14)

	// On a mild chain the squaring of exp(G h) - I agrees with gonum's
	// Padé-based exponential.
	c = derive(t, "P = (a, 1.0).P2 + (b, 0.5).P3; P2 = (c, 2.0).P3 + (d, 0.3).P; P3 = (e, 0.7).P; P")
	g, _ := c.absorbing(c.InitialActions([]string{"e"}))
	for _, x := range []float64{0.01, 0.7, 3, 20} {
		var scaled, want mat.Dense
		scaled.Scale(x, g)
		want.Exp(&scaled)
		got := expGenerator(g, x)
		var diff mat.Dense
		diff.Sub(got, &want)
		if d := mat.Norm(&diff, math.Inf(1)); d > 1e-13 {
			t.Errorf("t=%g: |expGenerator - Exp| = %g", x, d)
		}
	}
}

// A stiff mapping-shaped plug-in passage with a closed form: the machines
// are independent, M2 only weights the sources through its mean exit rate
// E[q2] = 2/T2 (two exits per cycle of mean length T2), and from a source
// the passage is Exp(20.3) or Exp(0.000736). Values from mpmath at 30 digits.
func TestStiffPluginClosedForm(t *testing.T) {
	c := derive(t, `A1 = (compute1, infty).A1; A2 = (compute2, 3 * infty).A2;
A3 = (compute3, T).A3; A4 = (compute4, infty).A4;
M1 = (compute1, 17.3).(compute4, 20.3).M1 + (compute1, 0.00088).(compute4, 0.000736).M1;
M2 = (compute3, 7110.0).(compute2, 1.91).M2 + (compute3, 88.8).(compute2, 6.39).M2;
(A1 <> A2 <> A3 <> A4) <compute1, compute2, compute3, compute4> (M1 <> M2)`)
	pi, err := c.Steady()
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Plugin(pi, []string{"compute1"}, []string{"compute4"})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []struct{ t, cdf float64 }{
		{0.027704284467592915, 0.351492096344974589},
		{0.13852142233796455, 0.768035542204826919},
		{1.3852142233796456, 0.817300033161191809},
	} {
		near(t, "stiff plugin CDF", c.CDF(p, x.t), x.cdf, 1e-13)
	}
	mean, err := c.Mean(p)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "stiff plugin mean", mean, 248.527110146144239557, 1e-13)
}

// Two copies of a component passive on a in one derivative and active in
// the other: once they disagree, the array enables a both actively and
// passively, and the apparent rate is undefined.
func TestMixedApparentRateInvalid(t *testing.T) {
	m, diags := lang.Load("t.pepa", []byte("P = (a, infty).P1; P1 = (a, 1.0).P; Q = (a, 2.0).Q; P[2] <a> Q"))
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	_, err := Derive(context.Background(), m, Options{})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "both active and passive") {
		t.Errorf("err = %v, want an undefined apparent rate", err)
	}
}

func TestTermIdentified(t *testing.T) {
	for _, x := range []struct {
		src  string
		want int
	}{
		{"P = Q; Q = (a, 1.0).R; R = (b, 2.0).P + (c, 3.0).Q; P", 1}, // P is an alias
		{"P = (a, 1.0).(c, 2.0).P + (b, 1.0).(c, 2.0).P; P", 1},      // (c, 2.0).P written twice
		{"P = (a, 1.0).Q; Q = (b, 1.0).P + (c, 1.0).P; P", 0},        // constants only
		{"P = (a, 1.0).(b, 1.0).P; P", 0},                            // written once
		// (b, 1.0).P is written twice, but Q is never reached.
		{"P = (a, 1.0).(b, 1.0).P; Q = (c, 1.0).(b, 1.0).P; P", 0},
	} {
		if c := derive(t, x.src); c.TermIdentified != x.want {
			t.Errorf("%s: TermIdentified = %d, want %d", x.src, c.TermIdentified, x.want)
		}
	}
}

// TestMixedButBlocked: the copies of Q disagree on s3 (one passive, one
// active), but P never performs s3, so s3 is blocked by the cooperation and
// no apparent rate is needed: a valid model (random model 16067 of the
// differential test, reduced). The copies move by q0 and q1 alone: the
// array's two copies alternate independently between Q and Q1 at rates 1
// and 3, so each copy is in Q1 with probability 1/4 and the throughput of
// q1 is 2 * (3/4) * 1 = 1.5.
func TestMixedButBlocked(t *testing.T) {
	src := "P = (p0, 1.0).P; Q = (s3, infty).Q1 + (q1, 1.0).Q1; Q1 = (s3, 2.0).Q + (q0, 3.0).Q; P <s3> Q[2]"
	m, diags := lang.Load("t.pepa", []byte(src))
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	c, err := Derive(context.Background(), m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	near(t, "q1", throughputs(t, c)["q1"], 1.5, 1e-13)
}
