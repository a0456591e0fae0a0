package optimize

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"pepa/ctmc/simulate"
	"pepa/internal/testing/reference"
	"pepa/lang"
	"pepa/models"
	"pepa/models/energy"
	"pepa/models/spec"
)

// energyOf runs the robustness request on one model's text with an energy
// request and returns its result.
func energyOf(t *testing.T, src string, beta float64, ereq *models.EnergyRequest) *models.Result {
	t.Helper()
	m, diags := lang.Load("e.pepa", []byte(src))
	if diags.HasErrors() {
		t.Fatalf("%v\n%s", diags.Err(), src)
	}
	rep, err := models.Robustness(context.Background(), []models.Input{{Name: "e.pepa", Model: m}}, models.Request{Question: models.Question{Beta: beta, Epsilon: 1e-12},
		Energy: ereq})
	if err != nil {
		t.Fatal(err)
	}
	return rep.Results[0]
}

// TestEnergyExpectedClosedForm: on every mapping of the testdata
// specifications (dedicated, owners, shared resources, owners with
// resources), with made-up powers (idle 0 and not), E[E] is
// sum_j (b_j - i_j) E[F_j] + (sum_j i_j) E[M] from the printed means to
// 1e-9, and, where the whole chain is small, from the means the reference
// semantics computes on the generated model (every machine stopped, the
// pragmas' start) to 1e-9 relative.
func TestEnergyExpectedClosedForm(t *testing.T) {
	files := []string{"spec-example.json", "spec-owners.json", "spec-shared.json", "ownshare/a.json", "ownshare/b.json", "ownshare/c.json"}
	rng := rand.New(rand.NewPCG(5, 5))
	checked := 0
	for _, f := range files {
		in, err := spec.LoadSpec("../../testdata/" + f)
		if err != nil {
			t.Fatal(err)
		}
		n := len(in.Machines)
		for k, mp := range in.Mappings {
			p := &energy.Power{Busy: make([]float64, n), Idle: make([]float64, n)}
			for j := range p.Busy {
				p.Busy[j] = float64(100 + rng.IntN(200))
				if k%2 == 1 {
					p.Idle[j] = float64(20 + rng.IntN(60))
				}
			}
			in.Power = p
			var src strings.Builder
			if err := in.Generate(&src, mp); err != nil {
				t.Fatal(err)
			}
			r := energyOf(t, src.String(), 20, nil)
			if r.Energy == nil {
				t.Fatalf("%s %s: no energy figures from the //pepa:power pragmas", f, mp.Name)
			}
			// The closed form from the printed figures; machines that
			// compute nothing finish at 0.
			byName := map[string]float64{}
			for _, mr := range r.Machines {
				byName[mr.Name] = mr.Mean
			}
			want, idle := 0.0, 0.0
			for j, mach := range in.Machines {
				want += (p.Busy[j] - p.Idle[j]) * byName[mach]
				idle += p.Idle[j]
			}
			if idle > 0 {
				want += idle * r.ExpectedMakespan
			}
			if math.Abs(r.Energy.Expected-want) > 1e-9*want {
				t.Errorf("%s %s: E[E] %.12g, closed form %.12g", f, mp.Name, r.Energy.Expected, want)
			}
			// The reference's means.
			m, _ := lang.Load("g.pepa", []byte(src.String()))
			pragmas, err := models.ReadPragmas(m.File)
			if err != nil {
				t.Fatal(err)
			}
			stop := map[string][]string{}
			var names []string
			for _, mr := range r.Machines {
				stop[mr.Name] = mr.LastActions
				names = append(names, mr.Name)
			}
			rc, err := reference.Derive(context.Background(), m, reference.Options{Stop: stop, MaxStates: 3000})
			if err != nil {
				continue // too large for the reference: the closed form above stands
			}
			alpha := pragmaStart(rc, pragmas)
			ref := 0.0
			for j, mach := range in.Machines {
				if _, ok := stop[mach]; !ok {
					continue
				}
				pa := rc.InitialActions(stop[mach])
				pa.Alpha = alpha
				mean, err := rc.Mean(pa)
				if err != nil {
					t.Fatal(err)
				}
				ref += (p.Busy[j] - p.Idle[j]) * mean
			}
			if idle > 0 {
				all := rc.InitialStates(rc.FinishedStates(names))
				all.Alpha = alpha
				mk, err := rc.Mean(all)
				if err != nil {
					t.Fatal(err)
				}
				ref += idle * mk
			}
			if math.Abs(r.Energy.Expected-ref) > 1e-9*ref {
				t.Errorf("%s %s: E[E] %.12g, from the reference's means %.12g", f, mp.Name, r.Energy.Expected, ref)
			}
			checked++
			t.Logf("%s %s: %d states in the reference", f, mp.Name, rc.N())
		}
	}
	if checked < 6 {
		t.Errorf("only %d mappings small enough for the reference", checked)
	}
}

// twoExp is two independent machines with exponential work (rates l1,
// l2), each computing one application on one path.
func twoExp(l1, l2 float64, power string) string {
	return fmt.Sprintf(`%s
A1 = (c1, infty).A1; A2 = (c2, infty).A2;
M1 = (c1, %g).M1; M2 = (c2, %g).M2;
(A1 <> A2) <c1, c2> (M1 <> M2)
`, power, l1, l2)
}

// TestEnergyBudgetTwoMachines: two independent machines with exponential
// work F_1 ~ Exp(l1), F_2 ~ Exp(l2). With idle power 0, E = b1 F1 + b2 F2
// is the sum of exponentials of rates l1/b1 and l2/b2, whose CDF is
// 1 - (c e^{-a B} - a e^{-c B}) / (c - a): P(E <= B) to 1e-9 (the groups
// run one after the other). With idle power, E = (b1 + i2) F1 + (b2 - i2)
// F2 when F2 <= F1 (and symmetrically), so P(E <= B) is a one-dimensional
// integral over F1, computed here by composite Gauss-Legendre between its
// kinks: to 1e-9.
func TestEnergyBudgetTwoMachines(t *testing.T) {
	const l1, l2, b1, b2 = 0.5, 0.2, 200.0, 150.0
	a, c := l1/b1, l2/b2
	for _, B := range []float64{300, 1000, 2500} {
		r := energyOf(t, twoExp(l1, l2, "//pepa:power M1 busy=200 idle=0\n//pepa:power M2 busy=150"), 10, &models.EnergyRequest{Budget: B})
		want := 1 - (c*math.Exp(-a*B)-a*math.Exp(-c*B))/(c-a)
		if math.Abs(r.Energy.PByBudget-want) > 1e-9 {
			t.Errorf("idle 0, B = %g: P(E <= B) %.12g, closed form %.12g", B, r.Energy.PByBudget, want)
		}
		if !strings.Contains(r.Energy.How, "one after the other") {
			t.Errorf("idle 0: how %q, want the groups' chains run one after the other", r.Energy.How)
		}
	}
	const i1, i2 = 40.0, 30.0
	for _, B := range []float64{300, 1000, 2500} {
		r := energyOf(t, twoExp(l1, l2, "//pepa:power M1 busy=200 idle=40\n//pepa:power M2 busy=150 idle=30"), 10, &models.EnergyRequest{Budget: B})
		// For F1 = x: E <= B iff F2 <= g(x): with F2 <= x, E = (b1 + i2) x
		// + (b2 - i2) F2; with F2 > x, E = (b2 + i1) F2 + (b1 - i1) x.
		g := func(x float64) float64 {
			if (b1+i2)*x > B {
				return 0 // even F2 = 0 is over the budget
			}
			if y := (B - (b1+i2)*x) / (b2 - i2); y <= x {
				return y
			}
			return (B - (b1-i1)*x) / (b2 + i1)
		}
		f := func(x float64) float64 { return l1 * math.Exp(-l1*x) * (1 - math.Exp(-l2*g(x))) }
		// Kinks: where g's branch changes ((b1 + i2) x + (b2 - i2) x = B)
		// and where it reaches 0 ((b1 + i2) x = B); beyond, f is 0.
		k1, k2 := B/(b1+b2), B/(b1+i2)
		want := gaussLegendre(f, 0, k1, 400) + gaussLegendre(f, k1, k2, 400)
		if math.Abs(r.Energy.PByBudget-want) > 1e-9 {
			t.Errorf("idle > 0, B = %g: P(E <= B) %.12g, by quadrature %.12g", B, r.Energy.PByBudget, want)
		}
	}
}

// gaussLegendre integrates f over [a, b] with n panels of 5-point
// Gauss-Legendre.
func gaussLegendre(f func(float64) float64, a, b float64, n int) float64 {
	x := []float64{0, -0.5384693101056831, 0.5384693101056831, -0.9061798459386640, 0.9061798459386640}
	w := []float64{0.5688888888888889, 0.4786286704993665, 0.4786286704993665, 0.2369268850561891, 0.2369268850561891}
	h := (b - a) / float64(n)
	sum := 0.0
	for k := 0; k < n; k++ {
		mid := a + (float64(k)+0.5)*h
		for i := range x {
			sum += w[i] * f(mid+x[i]*h/2)
		}
	}
	return sum * h / 2
}

// refRuns simulates n runs of the reference chain rc (finished machines
// stopped) from alpha, and returns each run's finishing times: the first
// firing of each machine's last actions (a plain Gillespie walk on the
// reference's transitions, sharing no code with package simulate).
func refRuns(rc *reference.Chain, alpha []float64, last [][]string, n int, seed uint64) [][]float64 {
	rng := rand.New(rand.NewPCG(seed, 77))
	out := make([][]float64, n)
	for k := range out {
		u, s := rng.Float64(), 0
		for acc := 0.0; s < len(alpha)-1; s++ {
			if acc += alpha[s]; u < acc {
				break
			}
		}
		f := make([]float64, len(last))
		for j := range f {
			f[j] = math.Inf(1)
		}
		left, t := len(last), 0.0
		for left > 0 {
			tr := rc.Trans[s]
			total := 0.0
			for _, x := range tr {
				total += x.Rate
			}
			if total == 0 {
				break // a deadlock: the others never finish
			}
			t += rng.ExpFloat64() / total
			pick, acc := rng.Float64()*total, 0.0
			var next reference.Transition
			for _, x := range tr {
				if acc += x.Rate; pick < acc {
					next = x
					break
				}
				next = x
			}
			for j, acts := range last {
				for _, a := range acts {
					if next.Action == a && math.IsInf(f[j], 1) {
						f[j] = t
						left--
					}
				}
			}
			s = next.To
		}
		out[k] = f
	}
	return out
}

// TestEnergyJointAgainstLongSimulation: on a coupled model (two machines
// sharing a network, a third alone, idle power > 0), the exact P(E <= B)
// is within the 99.9% interval of 10^6 runs of a Gillespie walk on the
// reference chain, and so is the joint P(max F <= beta and E <= B), whose
// own interval (package simulate, 10^5 replications) also overlaps it.
func TestEnergyJointAgainstLongSimulation(t *testing.T) {
	if testing.Short() {
		t.Skip("10^6 runs")
	}
	in, err := spec.ParseSpec("s.json", []byte(sharedSpec(1)))
	if err != nil {
		t.Fatal(err)
	}
	in.Power = &energy.Power{Busy: []float64{200, 150, 120}, Idle: []float64{50, 40, 30}}
	var src strings.Builder
	if err := in.Generate(&src, in.Mappings[0]); err != nil {
		t.Fatal(err)
	}
	const beta, B = 6.0, 2200.0
	r := energyOf(t, src.String(), beta, &models.EnergyRequest{Budget: B, Simulate: simulate.Options{Replications: 100000, Seed: 3}})
	e := r.Energy
	t.Logf("E[E] %.6f, P(E <= B) %.9f, joint %.6f [%.6f, %.6f]; %s", e.Expected, e.PByBudget, e.PAllWithinBudget, e.PAllWithinBudgetLo, e.PAllWithinBudgetHi, e.How)

	m, _ := lang.Load("g.pepa", []byte(src.String()))
	stop := map[string][]string{}
	var last [][]string
	for _, mr := range r.Machines {
		stop[mr.Name] = mr.LastActions
		last = append(last, mr.LastActions)
	}
	rc, err := reference.Derive(context.Background(), m, reference.Options{Stop: stop})
	if err != nil {
		t.Fatal(err)
	}
	alpha := make([]float64, rc.N())
	alpha[0] = 1
	const n = 1_000_000
	within, both := 0, 0
	for _, f := range refRuns(rc, alpha, last, n, 9) {
		en := energy.OfRun(*in.Power, f)
		mk := 0.0
		for _, x := range f {
			mk = math.Max(mk, x)
		}
		if en <= B {
			within++
			if mk <= beta {
				both++
			}
		}
	}
	for _, c := range []struct {
		what      string
		got, lo   float64
		hi        float64
		count     int
		intervals bool
	}{
		{"P(E <= B)", e.PByBudget, e.PByBudget, e.PByBudget, within, false},
		{"P(max F <= beta and E <= B)", e.PAllWithinBudget, e.PAllWithinBudgetLo, e.PAllWithinBudgetHi, both, true},
	} {
		iv := simulate.ClopperPearson(c.count, n, 0.999)
		t.Logf("%s: %.6f; 10^6 runs: %.6f [%.6f, %.6f]", c.what, c.got, iv.Value, iv.Lo, iv.Hi)
		if c.got < iv.Lo || c.got > iv.Hi {
			t.Errorf("%s %.6f outside the 99.9%% interval of 10^6 runs [%.6f, %.6f]", c.what, c.got, iv.Lo, iv.Hi)
		}
		if c.intervals && (c.hi < iv.Lo || c.lo > iv.Hi) {
			t.Errorf("%s: its interval [%.6f, %.6f] misses the long run's [%.6f, %.6f]", c.what, c.lo, c.hi, iv.Lo, iv.Hi)
		}
	}
	// The expected energy against the runs' mean (a check of the closed
	// form's inputs; loose: a sampling error).
}
