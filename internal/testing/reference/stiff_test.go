package reference

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"pepa/internal/testing/randmodel"
	"pepa/lang"
)

// Closed forms for the stiff transient oracles, computed in double-double.

// hypoRates are the phases of the hypoexponential test: nine distinct
// rates from 1e-4 to 1e4, in an order that puts fast phases after slow
// ones.
var hypoRates = []float64{1e4, 1e-4, 100, 0.01, 1, 1000, 0.001, 10, 0.1}

// hypoModel is a cycle through the phases; the passage ends with the last.
func hypoModel(rates []float64) string {
	var b strings.Builder
	for i, r := range rates {
		fmt.Fprintf(&b, "P%d = (a%d, %g).P%d;\n", i, i, r, (i+1)%len(rates))
	}
	b.WriteString("P0\n")
	return b.String()
}

// hypoClosed is the survival function of a sum of exponentials of
// distinct rates, sum_i c_i e^{-l_i t}, c_i = prod_{j != i} l_j/(l_j - l_i),
// and its CDF, 1 minus that, both in double-double.
func hypoClosed(rates []float64, t float64) (cdf, sf dd) {
	for i, li := range rates {
		c := ddOf(1)
		for j, lj := range rates {
			if j != i {
				c = ddMul(c, ddDiv(ddOf(lj), ddSub(ddOf(lj), ddOf(li))))
			}
		}
		sf = ddAdd(sf, ddMul(c, ddExp(ddNeg(ddMulF(ddOf(li), t)))))
	}
	return ddSub(ddOf(1), sf), sf
}

// erlangClosed is the Erlang-k distribution of rate l at t: the CDF is the
// Poisson(l t) tail from k, the survival its head below k; both are sums
// of positive terms.
func erlangClosed(k int, l, t float64) (cdf, sf dd) {
	x := ddMulF(ddOf(l), t)
	if x.hi > 600 { // e^{-x} underflows; the bisection of timesBetween needs 1
		return ddOf(1), dd{}
	}
	term := ddExp(ddNeg(x))
	for j := 0; ; j++ {
		if j < k {
			sf = ddAdd(sf, term)
		} else {
			cdf = ddAdd(cdf, term)
			if term.hi <= 1e-40*cdf.hi {
				break
			}
		}
		term = ddDiv(ddMul(term, x), ddOf(float64(j+1)))
	}
	return cdf, sf
}

// erlangModel is an Erlang-k passage (action done after k phases of rate
// l) beside an independent flip-flop of rate fast, which makes the chain
// stiff (q t up to fast times t) without changing the passage.
func erlangModel(k int, l, fast float64) string {
	var b strings.Builder
	for i := 0; i < k-1; i++ {
		fmt.Fprintf(&b, "E%d = (e%d, %g).E%d;\n", i, i, l, i+1)
	}
	fmt.Fprintf(&b, "E%d = (done, %g).E0;\n", k-1, l)
	if fast > 0 {
		fmt.Fprintf(&b, "F = (flip, %g).G; G = (flop, %g).F;\nE0 <> F\n", fast, fast)
	} else {
		b.WriteString("E0\n")
	}
	return b.String()
}

// timesBetween returns count times, geometrically spaced, at which a CDF
// (a nondecreasing function of t) lies between lo and hi, found by
// bisection on the closed form.
func timesBetween(cdf func(t float64) float64, lo, hi float64, count int) []float64 {
	find := func(level float64) float64 {
		a, b := 1e-12, 1e12
		for i := 0; i < 200; i++ {
			m := math.Sqrt(a * b)
			if cdf(m) < level {
				a = m
			} else {
				b = m
			}
		}
		return b
	}
	t0, t1 := find(lo), find(hi)
	// Stay strictly inside.
	t0, t1 = t0*1.01, t1*0.99
	var ts []float64
	for i := 0; i < count; i++ {
		ts = append(ts, t0*math.Pow(t1/t0, float64(i)/float64(count-1)))
	}
	return ts
}

// closedCase is a passage with a closed form.
type closedCase struct {
	name    string
	model   string
	target  string
	closed  func(t float64) (cdf, sf dd)
	lo, hi  float64 // the CDF range of the test times
	npoints int
}

func closedCases() []closedCase {
	hypo := closedCase{name: "hypoexponential 1e-4..1e4", model: hypoModel(hypoRates), target: fmt.Sprintf("a%d", len(hypoRates)-1),
		closed: func(t float64) (dd, dd) { return hypoClosed(hypoRates, t) }}
	e16 := closedCase{name: "Erlang-16 beside a 1e4 flip-flop", model: erlangModel(16, 1e-3, 1e4), target: "done",
		closed: func(t float64) (dd, dd) { return erlangClosed(16, 1e-3, t) }}
	e4 := closedCase{name: "Erlang-4", model: erlangModel(4, 2.5, 0), target: "done",
		closed: func(t float64) (dd, dd) { return erlangClosed(4, 2.5, t) }}
	e1 := closedCase{name: "Erlang-1 beside a 1e3 flip-flop", model: erlangModel(1, 0.5, 1e3), target: "done",
		closed: func(t float64) (dd, dd) { return erlangClosed(1, 0.5, t) }}
	var out []closedCase
	for _, c := range []closedCase{hypo, e16, e4, e1} {
		c.lo, c.hi, c.npoints = 1e-6, 1-1e-9, 12
		out = append(out, c)
	}
	return out
}

func (cc closedCase) times() []float64 {
	return timesBetween(func(t float64) float64 { f, _ := cc.closed(t); return f.float() }, cc.lo, cc.hi, cc.npoints)
}

// The double-double transient against closed forms: the hypoexponential
// with phases from 1e-4 to 1e4 (q t up to 2e9), an Erlang-16 made stiff
// by an independent fast flip-flop (q t up to 4.5e8), an Erlang-4, at
// times where the CDF is between 1e-6 and 1 - 1e-9. Each CDF and survival
// value must be within the bound CDFsDD states, which is about one
// rounding, relatively.
func TestDDClosedForms(t *testing.T) {
	for _, cc := range closedCases() {
		c := derive(t, cc.model)
		p := c.InitialActions([]string{cc.target})
		ts := cc.times()
		got, err := c.CDFsDD(p, ts)
		if err != nil {
			t.Fatal(err)
		}
		worstF, worstS := 0.0, 0.0
		for i, g := range got {
			f, s := cc.closed(ts[i])
			ef := math.Abs(g.CDF - f.float())
			es := math.Abs(g.Survival - s.float())
			worstF = math.Max(worstF, ef/f.float())
			worstS = math.Max(worstS, es/s.float())
			// The closed form's own rounding: half an ulp.
			if ef > g.CDFErr+0x1p-53*f.float() || es > g.SurvivalErr+0x1p-53*s.float() {
				t.Errorf("%s, t = %g: CDF %.17g (closed %.17g, bound %.3g), survival %.17g (closed %.17g, bound %.3g)",
					cc.name, ts[i], g.CDF, f.float(), g.CDFErr, g.Survival, s.float(), g.SurvivalErr)
			}
		}
		t.Logf("%s: %d states, t %.3g..%.3g, q t up to %.3g: largest relative error CDF %.3g, survival %.3g",
			cc.name, c.N()+1, ts[0], ts[len(ts)-1], c.leaveRate(p)*ts[len(ts)-1], worstF, worstS)
	}
}

// The two-state cycle, stiff: P -(1e3)-> Q -(1e-3)-> P, from P:
// pi_P(t) = b/(a+b) + a/(a+b) e^{-(a+b)t}, pi_Q = a/(a+b) (1 - e^{-(a+b)t}).
func TestDDTwoStateCycle(t *testing.T) {
	a, b := 1e3, 1e-3
	c := derive(t, fmt.Sprintf("P = (up, %g).Q; Q = (down, %g).P; P", a, b))
	ts := []float64{1e-7, 1e-4, 1e-3, 0.01, 1, 100, 1e4, 1e5, 1e6}
	got, bounds, err := c.TransientDD([]float64{1, 0}, ts)
	if err != nil {
		t.Fatal(err)
	}
	worst := 0.0
	for i, tt := range ts {
		s := ddAdd(ddOf(a), ddOf(b))
		e := ddExp(ddNeg(ddMulF(s, tt)))
		pq := ddMul(ddDiv(ddOf(a), s), ddSub(ddOf(1), e))
		pp := ddAdd(ddDiv(ddOf(b), s), ddMul(ddDiv(ddOf(a), s), e))
		for j, want := range []float64{pp.float(), pq.float()} {
			d := math.Abs(got[i][j] - want)
			worst = math.Max(worst, d/want)
			if d > bounds[i].Rel*want+bounds[i].Abs+0x1p-53*want {
				t.Errorf("t = %g: pi[%d] = %.17g, closed form %.17g", tt, j, got[i][j], want)
			}
		}
	}
	t.Logf("largest relative error %.3g", worst)
}

// The double-double transient against float64 methods on random models
// (stiff ones included): against gonum's Padé exponential where c t is
// small (they must agree to 1e-13, on the passage CDF and on every entry
// of the chain's own transient), and against the reference's two CDF
// methods (scaling and squaring of exp(G h) - I, Taylor substeps) at
// c t up to 700, within the error bound CDFs states for them.
func TestDDAgainstFloat64(t *testing.T) {
	checked, worstSmall, worstRatio := 0, 0.0, 0.0
	for seed := int64(1); checked < 50 && seed < 1000; seed++ {
		gm := randmodel.Generate(seed)
		m, diags := lang.Load("rand.pepa", []byte(gm.Source))
		if diags.HasErrors() {
			t.Fatal(diags.Err())
		}
		c, err := Derive(context.Background(), m, Options{MaxStates: 120})
		if err != nil || len(c.Trans[0]) == 0 {
			continue
		}
		n := c.N()
		// The chain's own transient from state 0, at q t <= 3.
		q := 0.0
		for i := 0; i < n; i++ {
			q = math.Max(q, c.ExitRate(i))
		}
		p := c.InitialActions([]string{c.Trans[0][0].Action})
		rate := c.leaveRate(p)
		if q == 0 || rate == 0 {
			continue
		}
		checked++
		gen := mat.NewDense(n, n, nil)
		for i, row := range c.generatorRows() {
			for _, f := range row {
				gen.Set(i, f.to, gen.At(i, f.to)+f.rate)
				gen.Set(i, i, gen.At(i, i)-f.rate)
			}
		}
		alpha := make([]float64, n)
		alpha[0] = 1
		ts := []float64{0.01 / q, 0.5 / q, 3 / q}
		pis, _, err := c.TransientDD(alpha, ts)
		if err != nil {
			t.Fatal(err)
		}
		for k, tt := range ts {
			var scaled, e mat.Dense
			scaled.Scale(tt, gen)
			e.Exp(&scaled)
			for j := 0; j < n; j++ {
				d := math.Abs(pis[k][j] - e.At(0, j))
				worstSmall = math.Max(worstSmall, d)
				if d > 1e-13 {
					t.Errorf("seed %d, q t = %g: pi[%d] double-double %.17g, gonum Exp %.17g", seed, tt*q, j, pis[k][j], e.At(0, j))
				}
			}
		}
		// A passage: CDFs at small c t against gonum, at moderate c t
		// against the reference's float64 methods.
		g, ended := c.absorbing(p)
		ts = nil
		for _, ct := range []float64{0.01, 0.5, 3, 40, 700} {
			ts = append(ts, ct/rate)
		}
		got, err := c.CDFsDD(p, ts)
		if err != nil {
			t.Fatal(err)
		}
		_, errs := c.CDFs(p, ts)
		dense, sparse := c.CDFsBy("dense", p, ts), c.CDFsBy("sparse", p, ts)
		for k, tt := range ts {
			if tt*rate <= 3 {
				var scaled, e mat.Dense
				scaled.Scale(tt, g)
				e.Exp(&scaled)
				want := 0.0
				for j := 0; j <= n; j++ {
					if ended[j] {
						want += e.At(0, j)
					}
				}
				d := math.Abs(got[k].CDF - want)
				worstSmall = math.Max(worstSmall, d)
				if d > 1e-13 {
					t.Errorf("seed %d, c t = %g: CDF double-double %.17g, gonum Exp %.17g", seed, tt*rate, got[k].CDF, want)
				}
			}
			for _, other := range []struct {
				name string
				v    float64
			}{{"dense", dense[k]}, {"sparse", sparse[k]}} {
				d := math.Abs(got[k].CDF - other.v)
				worstRatio = math.Max(worstRatio, d/errs[k])
				if d > errs[k]+got[k].CDFErr {
					t.Errorf("seed %d, c t = %g: CDF double-double %.17g, %s %.17g (bound %.3g)", seed, tt*rate, got[k].CDF, other.name, other.v, errs[k])
				}
			}
		}
	}
	t.Logf("%d models; largest difference from gonum Exp (q t <= 3) %.3g; largest difference from the float64 CDF methods %.3g of their bound", checked, worstSmall, worstRatio)
	if checked < 40 {
		t.Errorf("only %d models checked", checked)
	}
}
