package main

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"slices"
	"testing"

	"pepa/internal/testing/reference"
	"pepa/lang"
)

// refMachine is one machine of a mapping model solved by the reference
// semantics (internal/testing/reference, which shares no code with ctmc, passage
// or models) on its own: the model with the machine as its system
// equation. The applications a machine computes are passive single-state
// components, which leave its rates unchanged (semantics.md section 1), so
// its finishing time has the same distribution as in the whole model.
type refMachine struct {
	c *reference.Chain
	p reference.Passage
}

func newRefMachine(t *testing.T, file, name string, last []string) *refMachine {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	m, diags := lang.Load(file, src)
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	m.System = &lang.Const{Ident: lang.Ident{Name: name}}
	c, err := reference.Derive(context.Background(), m, reference.Options{})
	if err != nil {
		t.Fatalf("%s, machine %s: %v", file, name, err)
	}
	return &refMachine{c: c, p: c.InitialActions(last)}
}

// cdf is the reference CDF at each time, with its error bound.
func (r *refMachine) cdf(ts ...float64) ([]float64, []float64) { return r.c.CDFs(r.p, ts) }

func (r *refMachine) mean(t *testing.T) float64 {
	t.Helper()
	m, err := r.c.Mean(r.p)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// checkMachine compares a machine's printed figures (P(F <= beta), E[F]
// and the 0.99 quantile) with the reference: P within the tool's epsilon
// (1e-10) plus the reference's bound; the mean within 1e-12 relative (the
// tool's claim) plus the reference's rounding; at the quantile, the
// reference CDF within twice epsilon of 0.99, plus the quantile's relative
// 1e-9 times the density there.
func checkMachine(t *testing.T, r *refMachine, what string, beta, p, mean, q99 float64) {
	t.Helper()
	v, e := r.cdf(beta)
	if d := math.Abs(p - v[0]); d > 1e-10+e[0] {
		t.Errorf("%s: P(F <= %g) = %.15g, the reference %.15g", what, beta, p, v[0])
	}
	if want := r.mean(t); math.Abs(mean-want) > (1e-12+1e-14)*want {
		t.Errorf("%s: E[F] = %.15g, the reference %.15g", what, mean, want)
	}
	h := 1e-6 * q99
	v, e = r.cdf(q99-h, q99, q99+h)
	dens := (v[2] - v[0]) / (2 * h)
	if d := math.Abs(v[1] - 0.99); d > 2e-10+e[1]+2e-9*q99*dens {
		t.Errorf("%s: the reference CDF at the printed 0.99 quantile %.12g is %.15g", what, q99, v[1])
	}
}

// referenceMakespan is E[max_j F_j] for independent machines: the integral
// of 1 - prod_j F_j(t), by Simpson's rule on a grid of step h out to where
// the integrand is below 1e-12 (what is left beyond is below 1e-12 times
// the time the slowest takes to finish from there, well under the tests'
// 1e-9 relative), with the reference's CDFs (its substep method, exact to
// its bound at every grid point).
func referenceMakespan(ms []*refMachine, h float64) float64 {
	T := 1.0
	for i := 0; i < 40; i++ {
		prod := 1.0
		for _, m := range ms {
			v, _ := m.cdf(T)
			prod *= v[0]
		}
		if 1-prod < 1e-12 {
			break
		}
		T *= 2
	}
	n := int(math.Ceil(T/h)) &^ 1
	h = T / float64(n)
	ts := make([]float64, n+1)
	for i := range ts {
		ts[i] = float64(i) * h
	}
	prod := make([]float64, n+1)
	for i := range prod {
		prod[i] = 1
	}
	for _, m := range ms {
		v := m.c.CDFsBy("sparse", m.p, ts)
		for i := range prod {
			prod[i] *= v[i]
		}
	}
	sum := 0.0
	for i := range prod {
		w := 2.0
		switch {
		case i == 0 || i == n:
			w = 1
		case i%2 == 1:
			w = 4
		}
		sum += w * (1 - prod[i])
	}
	return sum * h / 3
}

// TestRankingGoldenIndependent pins every figure of the golden ranking by
// the reference semantics, so that the golden file (rewritten with
// -update when the output changes) cannot drift from the right values.
func TestRankingGoldenIndependent(t *testing.T) {
	t.Chdir("../..")
	b, err := os.ReadFile("testdata/golden/cluster-ranking.json")
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Beta     float64 `json:"beta"`
		Mappings []struct {
			Model       string  `json:"model"`
			Robustness  float64 `json:"robustness"`
			PAll        float64 `json:"p_all_by_beta"`
			Makespan    float64 `json:"expected_makespan"`
			MakespanErr float64 `json:"expected_makespan_error"`
			Machines    []struct {
				Name  string   `json:"name"`
				Last  []string `json:"last_actions"`
				P     float64  `json:"p_by_beta"`
				Mean  float64  `json:"mean"`
				Q99   float64  `json:"q99"`
				Notes string   `json:"note"`
			} `json:"machines"`
		} `json:"mappings"`
	}
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Mappings) != 3 {
		t.Fatalf("%d mappings in the golden file, want 3", len(g.Mappings))
	}
	for _, mp := range g.Mappings {
		var ms []*refMachine
		minP, prod := math.Inf(1), 1.0
		for _, m := range mp.Machines {
			r := newRefMachine(t, mp.Model, m.Name, m.Last)
			checkMachine(t, r, mp.Model+" "+m.Name, g.Beta, m.P, m.Mean, m.Q99)
			ms = append(ms, r)
			v, _ := r.cdf(g.Beta)
			minP, prod = math.Min(minP, v[0]), prod*v[0]
		}
		if math.Abs(mp.Robustness-minP) > 2e-10 {
			t.Errorf("%s: robustness %.15g, the reference's smallest P %.15g", mp.Model, mp.Robustness, minP)
		}
		if math.Abs(mp.PAll-prod) > 1e-9 {
			t.Errorf("%s: P(all) %.15g, the reference's product %.15g", mp.Model, mp.PAll, prod)
		}
		if want := referenceMakespan(ms, 0.02); math.Abs(mp.Makespan-want) > mp.MakespanErr+1e-8 {
			t.Errorf("%s: E[makespan] %.12g (error <= %.2g), the reference %.12g", mp.Model, mp.Makespan, mp.MakespanErr, want)
		}
	}
}

// TestCoupledHandBuilt: testdata/coupled/shared-net.pepa (M1-M3 share a
// slow network, M4 shares nothing), whose figures with finished machines
// stopped must be those of the group written out by hand with terminal
// states (shared-net-stopped.pepa), solved by the reference semantics, and
// M4 alone: each machine's P(F <= 20) and E[F], P(all <= 20) and
// E[makespan], to 1e-9, by groups and flat; and simulate's intervals at
// 20,000 replications contain them.
func TestCoupledHandBuilt(t *testing.T) {
	t.Chdir("../..")
	const beta = 20.0
	src, err := os.ReadFile("testdata/coupled/shared-net-stopped.pepa")
	if err != nil {
		t.Fatal(err)
	}
	m, diags := lang.Load("shared-net-stopped.pepa", src)
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	rc, err := reference.Derive(context.Background(), m, reference.Options{})
	if err != nil {
		t.Fatal(err)
	}
	type fig struct{ p, mean float64 }
	var want []fig
	for _, last := range []string{"compute9", "compute10", "compute11"} {
		p := rc.InitialActions([]string{last})
		v, _ := rc.CDFs(p, []float64{beta})
		mean, err := rc.Mean(p)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, fig{v[0], mean})
	}
	done := make([]bool, rc.N())
	for i, st := range rc.States {
		done[i] = st[0] == "M1Done" && st[1] == "M2Done" && st[2] == "M3Done"
	}
	group := rc.InitialStates(done)
	gv, _ := rc.CDFs(group, []float64{beta})
	m4 := newRefMachine(t, "testdata/coupled/shared-net.pepa", "M4", []string{"compute12"})
	v4, _ := m4.cdf(beta)
	want = append(want, fig{v4[0], m4.mean(t)})
	pAll := gv[0] * v4[0]
	makespan := referenceMakespan([]*refMachine{{c: rc, p: group}, m4}, 0.02)

	for _, flat := range []bool{false, true} {
		args := []string{"robustness", "--beta", "20", "--format", "json", "testdata/coupled/shared-net.pepa"}
		if flat {
			args = append(args, "--flat")
		}
		code, out, stderr := runPepa(t, "", args...)
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var r struct {
			Machines []struct {
				Name string  `json:"name"`
				P    float64 `json:"p_by_beta"`
				Mean float64 `json:"mean"`
			} `json:"machines"`
			PAll     float64 `json:"p_all_by_beta"`
			Makespan float64 `json:"expected_makespan"`
			Groups   []struct {
				Machines []string `json:"machines"`
			} `json:"groups"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		for j, mr := range r.Machines {
			if math.Abs(mr.P-want[j].p) > 1e-9 || math.Abs(mr.Mean-want[j].mean) > 1e-9 {
				t.Errorf("flat %v: %s P(F <= 20) %.12g E[F] %.12g, hand-built %.12g %.12g", flat, mr.Name, mr.P, mr.Mean, want[j].p, want[j].mean)
			}
		}
		if math.Abs(r.PAll-pAll) > 1e-9 || math.Abs(r.Makespan-makespan) > 1e-9*makespan {
			t.Errorf("flat %v: P(all) %.12g E[makespan] %.12g, hand-built %.12g %.12g", flat, r.PAll, r.Makespan, pAll, makespan)
		}
		if !flat && (len(r.Groups) != 2 || !slices.Equal(r.Groups[0].Machines, []string{"M1", "M2", "M3"})) {
			t.Errorf("groups %+v, want M1-M3 and M4", r.Groups)
		}
	}
	code, out, stderr := runPepa(t, "", "simulate", "--beta", "20", "--replications", "20000", "--format", "json", "testdata/coupled/shared-net.pepa")
	if code != exitOK {
		t.Fatalf("simulate: exit %d: %s", code, stderr)
	}
	var sim struct {
		Machines []struct {
			Name string     `json:"name"`
			P    [2]float64 `json:"p_by_beta_ci"`
			Mean [2]float64 `json:"mean_ci"`
		} `json:"machines"`
		PAll     [2]float64 `json:"p_all_by_beta_ci"`
		Makespan [2]float64 `json:"expected_makespan_ci"`
	}
	if err := json.Unmarshal([]byte(out), &sim); err != nil {
		t.Fatal(err)
	}
	in := func(iv [2]float64, x float64) bool { return iv[0] <= x && x <= iv[1] }
	for j, mr := range sim.Machines {
		if !in(mr.P, want[j].p) || !in(mr.Mean, want[j].mean) {
			t.Errorf("simulate %s: P %v mean %v, exact %.6g %.6g", mr.Name, mr.P, mr.Mean, want[j].p, want[j].mean)
		}
	}
	if !in(sim.PAll, pAll) || !in(sim.Makespan, makespan) {
		t.Errorf("simulate: P(all) %v E[makespan] %v, exact %.6g %.6g", sim.PAll, sim.Makespan, pAll, makespan)
	}
}
