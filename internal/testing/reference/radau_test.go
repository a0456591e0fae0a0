package reference

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

	"pepa/internal/testing/randmodel"
	"pepa/lang"
)

var flagStiff = flag.Bool("reference.stiff", false, "run the long checks of the stiff oracles: the double-double transient on 100 to 1,023 states, Radau on the 16,606-state group (timings in the log)")

// The Radau coefficients: on y' = a y one step is y1 = R(h a) y0, R the
// method's stability function, the (2,3) Padé approximant of e^z, and
// the stages are those of the collocation system (I - z A_rk) Z = z A_rk 1.
func TestRadauCoefficients(t *testing.T) {
	rc := radauCoef()
	s6 := math.Sqrt(6)
	ark := mat.NewDense(3, 3, []float64{
		(88 - 7*s6) / 360, (296 - 169*s6) / 1800, (-2 + 3*s6) / 225,
		(296 + 169*s6) / 1800, (88 + 7*s6) / 360, (-2 - 3*s6) / 225,
		(16 - s6) / 36, (16 + s6) / 36, 1.0 / 9,
	})
	// gamma is 1/0.2748..., RADAU5's u1.
	if u1 := 30 / (6 + math.Cbrt(81) - math.Cbrt(9)); math.Abs(rc.gamma-u1) > 1e-13 {
		t.Errorf("gamma %.17g, want %.17g", rc.gamma, u1)
	}
	for _, z := range []float64{-1e8, -1e4, -30, -1, -0.01, 0, 0.01, 0.7} {
		// The stages by the partial fractions (as radau computes them).
		var stage [3]float64
		for i := 0; i < 3; i++ {
			v1 := 1 / (rc.gamma - z)
			v2 := 1 / (rc.lambda - complex(z, 0))
			stage[i] = rc.wReal[i]*rc.gamma*v1 + 2*real(rc.wCplx[i]*rc.lambda*v2) - 1
		}
		// The collocation system directly.
		a := mat.NewDense(3, 3, nil)
		a.Scale(-z, ark)
		for i := 0; i < 3; i++ {
			a.Set(i, i, a.At(i, i)+1)
		}
		rhs := mat.NewVecDense(3, nil)
		rhs.MulVec(ark, mat.NewVecDense(3, []float64{z, z, z}))
		var want mat.VecDense
		if err := want.SolveVec(a, rhs); err != nil {
			t.Fatal(err)
		}
		r := (1 + 2*z/5 + z*z/20) / (1 - 3*z/5 + 3*z*z/20 - z*z*z/60)
		for i := 0; i < 3; i++ {
			if math.Abs(stage[i]-want.AtVec(i)) > 1e-13*math.Max(1, math.Abs(want.AtVec(i))) {
				t.Errorf("z = %g: stage %d %.17g, collocation %.17g", z, i+1, stage[i], want.AtVec(i))
			}
		}
		if got := 1 + stage[2]; math.Abs(got-r) > 1e-14*math.Max(1, math.Abs(r)) {
			t.Errorf("z = %g: R(z) %.17g, want %.17g", z, got, r)
		}
	}
	// The complex eigenvalue: RADAU5's alph + i beta.
	if math.Abs(real(rc.lambda)-2.6810828736277521) > 1e-13 || math.Abs(imag(rc.lambda)-3.0504301992474106) > 1e-13 {
		t.Errorf("lambda %v", rc.lambda)
	}
}

// Radau against the closed forms of TestDDClosedForms (the hypoexponential
// with phases from 1e-4 to 1e4, the stiff Erlang-16, ...) at the default
// tolerances: within 1e-10, and within the error CDFsRadau estimates.
func TestRadauClosedForms(t *testing.T) {
	for _, cc := range closedCases() {
		c := derive(t, cc.model)
		p := c.InitialActions([]string{cc.target})
		ts := cc.times()
		vals, errs, st, err := c.CDFsRadau(p, ts, RadauOptions{})
		if err != nil {
			t.Fatal(err)
		}
		worst, worstEst := 0.0, 0.0
		for i := range ts {
			f, _ := cc.closed(ts[i])
			d := math.Abs(vals[i] - f.float())
			worst, worstEst = math.Max(worst, d), math.Max(worstEst, errs[i])
			if d > 1e-10 || d > errs[i]+1e-12 {
				t.Errorf("%s, t = %g: Radau %.15g, closed form %.15g (estimated error %.3g)", cc.name, ts[i], vals[i], f.float(), errs[i])
			}
		}
		t.Logf("%s: largest difference %.3g (estimated %.3g); %d steps, %d rejected, %d factorisations",
			cc.name, worst, worstEst, st.Steps, st.Rejected, st.Factorizations)
	}
	// The stiff two-state cycle, every probability.
	a, b := 1e3, 1e-3
	c := derive(t, fmt.Sprintf("P = (up, %g).Q; Q = (down, %g).P; P", a, b))
	ts := []float64{1e-4, 1e-3, 1, 100, 1e4, 1e5, 1e6}
	pis, _, err := c.TransientRadau([]float64{1, 0}, ts, RadauOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, tt := range ts {
		e := math.Exp(-(a + b) * tt)
		want := []float64{b/(a+b) + a/(a+b)*e, a / (a + b) * (1 - e)}
		for j := range want {
			if d := math.Abs(pis[i][j] - want[j]); d > 1e-10 {
				t.Errorf("two-state cycle, t = %g: pi[%d] %.15g, closed form %.15g", tt, j, pis[i][j], want[j])
			}
		}
	}
}

// stiffNetModel is the shape of stiff-net.pepa with k machines (k <= 3)
// and no application components: each machine transfers its input over
// one network (requests at 2000/s, the network sends at 400/s), then runs
// three jobs at rates 4e-5 to 2e-4/s on an ideal or a perturbed path.
// With every machine stopped after its third job (the Stop map returned)
// it has 7, 127 and 1,023 states; k = 3 is testdata/stiff-net-group.pepa's
// chain.
func stiffNetModel(k int) (string, map[string][]string) {
	r := [][]float64{{7.5e-05, 1.75e-4, 1e-4}, {1e-4, 2e-4, 1.25e-4}, {1.25e-4, 5e-5, 1.5e-4}}
	p := [][]float64{{6e-5, 4e-5, 1.2e-4}, {8e-5, 6e-5, 4e-5}, {1e-4, 8e-5, 6e-5}}
	var b strings.Builder
	stop := map[string][]string{}
	var ms, xs, nets []string
	for m := 1; m <= k; m++ {
		path := func(rates []float64) string {
			s := fmt.Sprintf("(xfer%d, 2000.0)", m)
			for a, v := range rates {
				s += fmt.Sprintf(".(c%d_%d, %g)", m, a+1, v)
			}
			return s + fmt.Sprintf(".M%d", m)
		}
		fmt.Fprintf(&b, "M%d = %s + %s;\n", m, path(r[m-1]), path(p[m-1]))
		stop[fmt.Sprintf("M%d", m)] = []string{fmt.Sprintf("c%d_3", m)}
		ms = append(ms, fmt.Sprintf("M%d", m))
		xs = append(xs, fmt.Sprintf("xfer%d", m))
		nets = append(nets, fmt.Sprintf("(xfer%d, infty).(sent, 400.0).Net", m))
	}
	fmt.Fprintf(&b, "Net = %s;\n(%s) <%s> Net\n", strings.Join(nets, " + "), strings.Join(ms, " <> "), strings.Join(xs, ", "))
	return b.String(), stop
}

// cyclicModel is an irreducible stiff chain: components in cycles of the
// given lengths, their rates spread from 1e3 down to 1e-3, each state also
// able to return to the start of its cycle at rate 1: one strongly
// connected component of prod(sizes) states, so the sparse LU fills in.
// The passage ends with the slowest action of the last component.
func cyclicModel(sizes []int) (src, target string) {
	var b strings.Builder
	var names []string
	for ci, s := range sizes {
		for j := 0; j < s; j++ {
			rate := math.Pow(10, 3-6*float64((j+ci)%s)/float64(s-1))
			fmt.Fprintf(&b, "C%d_%d = (a%d_%d, %.6g).C%d_%d", ci, j, ci, j, rate, ci, (j+1)%s)
			if j > 0 {
				fmt.Fprintf(&b, " + (back%d, 1.0).C%d_0", ci, ci)
			}
			b.WriteString(";\n")
			if (j+ci)%s == s-1 && ci == len(sizes)-1 {
				target = fmt.Sprintf("a%d_%d", ci, j)
			}
		}
		names = append(names, fmt.Sprintf("C%d_0", ci))
	}
	b.WriteString(strings.Join(names, " <> ") + "\n")
	return b.String(), target
}

func deriveStop(t testing.TB, src string, stop map[string][]string) *Chain {
	t.Helper()
	m, diags := lang.Load("t.pepa", []byte(src))
	if diags.HasErrors() {
		t.Fatalf("model does not check: %v", diags.Err())
	}
	c, err := Derive(context.Background(), m, Options{Stop: stop})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// radauVsDD compares the two oracles on one passage at the times ts and
// returns the largest difference. They must agree within 1e-9, the
// Radau estimate must cover the difference, and Radau's transient must
// keep its total mass.
func radauVsDD(t *testing.T, name string, c *Chain, p Passage, ts []float64) (worst float64, ddTime, radauTime time.Duration) {
	t.Helper()
	start := time.Now()
	want, err := c.CDFsDD(p, ts)
	if err != nil {
		t.Fatal(err)
	}
	ddTime = time.Since(start)
	start = time.Now()
	got, errs, _, err := c.CDFsRadau(p, ts, RadauOptions{})
	if err != nil {
		t.Fatal(err)
	}
	radauTime = time.Since(start)
	for i := range ts {
		d := math.Abs(got[i] - want[i].CDF)
		worst = math.Max(worst, d)
		if d > 1e-9 || d > errs[i]+1e-12 {
			t.Errorf("%s, t = %g: Radau %.15g (estimated error %.3g), double-double %.15g", name, ts[i], got[i], errs[i], want[i].CDF)
		}
	}
	pis, _, err := c.TransientRadau(p.Alpha, ts[len(ts)-1:], RadauOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, x := range pis[0] {
		sum += x
	}
	if math.Abs(sum-1) > 1e-12 {
		t.Errorf("%s: Radau's transient at t = %g has mass %.17g", name, ts[len(ts)-1], sum)
	}
	return worst, ddTime, radauTime
}

// Radau against the double-double transient on small stiff chains: the
// two-machine network group (128 states with the passage's end, acyclic),
// a 100-state irreducible chain (one strongly connected component: the LU
// fills in), and random stiff models, at times from the fast rates' scale
// to the slow ones' (q t up to 1e8).
func TestRadauAgainstDD(t *testing.T) {
	src, stop := stiffNetModel(2)
	c := deriveStop(t, src, stop)
	ts := []float64{1e-3, 0.1, 10, 1e3, 1e4, 3e4, 1e5}
	w, _, _ := radauVsDD(t, "network group", c, c.InitialActions([]string{"c1_3"}), ts)
	t.Logf("network group (%d states): largest difference %.3g", c.N()+1, w)
	// CDFsStiff takes the double-double transient on so small a chain.
	vals, errs, err := c.CDFsStiff(c.InitialActions([]string{"c1_3"}), ts)
	want, err2 := c.CDFsDD(c.InitialActions([]string{"c1_3"}), ts)
	if err != nil || err2 != nil {
		t.Fatal(err, err2)
	}
	for i := range ts {
		if vals[i] != want[i].CDF || errs[i] != want[i].CDFErr {
			t.Errorf("CDFsStiff(%g) = %g (error %g), CDFsDD %g (%g)", ts[i], vals[i], errs[i], want[i].CDF, want[i].CDFErr)
		}
	}

	src, target := cyclicModel([]int{4, 5, 5})
	c = derive(t, src)
	ts = []float64{1e-3, 0.1, 10, 1e3, 1e4}
	w, _, _ = radauVsDD(t, "cyclic", c, c.InitialActions([]string{target}), ts)
	t.Logf("irreducible chain (%d states): largest difference %.3g", c.N()+1, w)

	checked, worst := 0, 0.0
	for seed := int64(1); checked < 15 && seed < 2000; seed++ {
		gm := randmodel.Generate(seed)
		if !slices.Contains(gm.Features, "stiff") {
			continue
		}
		m, diags := lang.Load("rand.pepa", []byte(gm.Source))
		if diags.HasErrors() {
			t.Fatal(diags.Err())
		}
		c, err := Derive(context.Background(), m, Options{MaxStates: 100})
		if err != nil || len(c.Trans[0]) == 0 {
			continue
		}
		p := c.InitialActions([]string{c.Trans[0][0].Action})
		rate := c.leaveRate(p)
		if rate == 0 {
			continue
		}
		checked++
		var ts []float64
		for _, ct := range []float64{1, 1e3, 1e6, 1e8} {
			ts = append(ts, ct/rate)
		}
		w, _, _ := radauVsDD(t, fmt.Sprintf("seed %d", seed), c, p, ts)
		worst = math.Max(worst, w)
	}
	t.Logf("%d random stiff models: largest difference %.3g", checked, worst)
	if checked < 10 {
		t.Errorf("only %d models checked", checked)
	}
}

// The long checks (-reference.stiff): the double-double transient's
// timings on 100 to 1,023 states, Radau against it on the 1,023-state
// network group (stiff-net.pepa's), and Radau on the 16,606-state group of
// a sixteen-application mapping (testdata/stiff16-group.pepa) at two
// tolerances.
func TestStiffOraclesLong(t *testing.T) {
	if !*flagStiff {
		t.Skip("-reference.stiff not set")
	}
	// Timings of one CDF value at q t about 1e8.
	for _, sizes := range [][]int{{4, 5, 5}, {3, 4, 5, 5}} {
		src, target := cyclicModel(sizes)
		c := derive(t, src)
		p := c.InitialActions([]string{target})
		start := time.Now()
		if _, err := c.CDFsDD(p, []float64{1e5}); err != nil {
			t.Fatal(err)
		}
		t.Logf("double-double, irreducible chain of %d states, q t = %.3g: %v", c.N()+1, c.leaveRate(p)*1e5, time.Since(start))
	}
	for _, k := range []int{2, 3} {
		src, stop := stiffNetModel(k)
		c := deriveStop(t, src, stop)
		p := c.InitialActions([]string{"c1_3"})
		start := time.Now()
		if _, err := c.CDFsDD(p, []float64{1e5}); err != nil {
			t.Fatal(err)
		}
		t.Logf("double-double, acyclic network group of %d states, q t = %.3g: %v", c.N()+1, c.leaveRate(p)*1e5, time.Since(start))
	}

	// The 1,023-state group of stiff-net.pepa, from its file, both oracles.
	text, err := os.ReadFile("testdata/stiff-net-group.pepa")
	if err != nil {
		t.Fatal(err)
	}
	c := deriveStop(t, string(text), map[string][]string{"M1": {"compute9"}, "M2": {"compute10"}, "M3": {"compute11"}})
	if c.N() != 1023 {
		t.Errorf("stiff-net group: %d states, want 1023", c.N())
	}
	ts := []float64{1e-3, 1, 100, 1e3, 1e4, 3e4, 1e5}
	for _, p := range []struct {
		name string
		p    Passage
	}{{"M1 finished", c.InitialActions([]string{"compute9"})}, {"all finished", c.InitialStates(allFinished(c, []string{"M1", "M2", "M3"}))}} {
		w, ddT, rT := radauVsDD(t, "stiff-net group, "+p.name, c, p.p, ts)
		t.Logf("stiff-net group (%d states), %s, %d times: largest difference %.3g; double-double %v, Radau (two runs) %v", c.N()+1, p.name, len(ts), w, ddT, rT)
	}
	// CDFsStiff takes Radau here: its estimate covers the difference.
	p := c.InitialActions([]string{"compute9"})
	vals, errs, err := c.CDFsStiff(p, ts)
	if err != nil {
		t.Fatal(err)
	}
	want, err := c.CDFsDD(p, ts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range ts {
		if d := math.Abs(vals[i] - want[i].CDF); d > errs[i]+1e-12 {
			t.Errorf("CDFsStiff(%g) = %.15g (estimated error %.3g), double-double %.15g", ts[i], vals[i], errs[i], want[i].CDF)
		}
	}

	// The 16,606-state group: Radau at 1e-11 (and 1e-9 for its estimate)
	// and at 1e-13.
	text, err = os.ReadFile("testdata/stiff16-group.pepa")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	c = deriveStop(t, string(text), map[string][]string{"M1": {"compute13"}, "M2": {"compute14"}, "M3": {"compute15"}})
	t.Logf("stiff16 group: %d states, derived in %v", c.N(), time.Since(start))
	if c.N() != 16606 {
		t.Errorf("stiff16 group: %d states, want 16606", c.N())
	}
	p = c.InitialStates(allFinished(c, []string{"M1", "M2", "M3"}))
	ts = []float64{1, 100, 1e3, 3e3, 1e4, 2e4, 5e4, 1e5}
	start = time.Now()
	vals, errs, st, err := c.CDFsRadau(p, ts, RadauOptions{})
	if err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	start = time.Now()
	fine, _, stFine, err := c.CDFsRadau(p, ts, RadauOptions{RTol: 1e-13, ATol: 1e-13})
	if err != nil {
		t.Fatal(err)
	}
	fineElapsed := time.Since(start)
	worst, worstEst := 0.0, 0.0
	for i := range ts {
		d := math.Abs(vals[i] - fine[i])
		worst, worstEst = math.Max(worst, d), math.Max(worstEst, errs[i])
		if d > errs[i]+1e-12 || d > 1e-9 {
			t.Errorf("stiff16 group, t = %g: Radau at 1e-11 %.15g (estimated error %.3g), at 1e-13 %.15g", ts[i], vals[i], errs[i], fine[i])
		}
	}
	t.Logf("stiff16 group (%d states, %d blocks, %d LU entries), P(all finished by t), %d times: Radau 1e-11 and 1e-9 %v (%d steps at 1e-11), 1e-13 and 1e-11 %v (%d steps); |1e-11 - 1e-13| <= %.3g, estimated (|1e-11 - 1e-9|) <= %.3g",
		c.N()+1, st.Blocks, st.FillU+st.FillL, len(ts), elapsed, st.Steps, fineElapsed, stFine.Steps, worst, worstEst)
	t.Logf("stiff16 group: P(all finished by t) = %v at t = %v", vals, ts)
}

// allFinished marks the states in which every named machine has finished.
func allFinished(c *Chain, machines []string) []bool {
	out := make([]bool, c.N())
	for i, st := range c.States {
		out[i] = true
		for l, name := range c.Leaves {
			if slices.Contains(machines, name) && st[l] != Finished {
				out[i] = false
			}
		}
	}
	return out
}
