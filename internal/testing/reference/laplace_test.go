package reference_test

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"testing"
	"time"

	"pepa/ctmc"
	"pepa/internal/testing/reference"
	"pepa/lang"
	"pepa/models"
	"pepa/passage"
)

// stiffFigures are a mapping model's figures with every machine stopped,
// as the reference computes them: each machine's P(F <= beta) at betas,
// its mean and the CDF at a time (to check a quantile), and the group's
// all-finished P and mean.
type stiffCase struct {
	file  string
	betas []float64
	// oracle computes CDF values (the double-double exponential or Radau)
	// with their errors.
	oracle func(c *reference.Chain, p reference.Passage, ts []float64) ([]float64, []float64, error)
	tol    float64       // the goal for every figure
	limit  time.Duration // the goal for the Laplace analysis
}

func ddOracle(c *reference.Chain, p reference.Passage, ts []float64) ([]float64, []float64, error) {
	r, err := c.CDFsDD(p, ts)
	if err != nil {
		return nil, nil, err
	}
	v, e := make([]float64, len(r)), make([]float64, len(r))
	for i, x := range r {
		v[i], e[i] = x.CDF, x.CDFErr
	}
	return v, e, nil
}

func radauOracle(c *reference.Chain, p reference.Passage, ts []float64) ([]float64, []float64, error) {
	v, e, _, err := c.CDFsRadau(p, ts, reference.RadauOptions{})
	return v, e, err
}

// TestLaplaceAgainstStiffOracles: the Laplace engine's figures on stiff
// coupled groups (q t from 1e7 to 1e9: uniformization's series would take
// that many steps), forced by Transient, against oracles that share no
// code with it: each machine's P(F <= beta), E[F] and 0.99 quantile (the
// oracle's CDF at it), the group's P(all <= beta) and E[all finished], at
// two goals. The 1,023-state group of a stiff shared network against the
// double-double exponential (within 1e-8, in at most 2 s: the issue's
// goal), and the 16,606-state group of 16 jobs of 200 to 4,000 s on a 25
// MB/s network against Radau IIA (within 1e-7, at most 10 s; with
// -reference.stiff only: Radau takes a while).
func TestLaplaceAgainstStiffOracles(t *testing.T) {
	// The double-double oracle takes about a second a value on 1,023
	// states: one goal by default, two and the larger group with the
	// long checks.
	long := false
	if f := flag.Lookup("reference.stiff"); f != nil && f.Value.String() == "true" {
		long = true
	}
	cases := []stiffCase{{
		file: "testdata/stiff-net-group.pepa", betas: []float64{40000},
		oracle: ddOracle, tol: 1e-8, limit: 2 * time.Second,
	}}
	if long {
		cases[0].betas = []float64{20000, 60000}
		cases = append(cases, stiffCase{
			file: "testdata/stiff16-group.pepa", betas: []float64{8000, 15000},
			oracle: radauOracle, tol: 1e-7, limit: 10 * time.Second,
		})
	}
	for _, sc := range cases {
		t.Run(sc.file, func(t *testing.T) { stiffCheck(t, sc) })
	}
}

// TestLaplaceNonDedicatedModels: issue 40's cases against Radau IIA, every
// figure within 1e-8 and each analysis within 2 s (one analysis each;
// both goals and the failing networks with -reference.stiff): owners
// cycling every 50 to 100 s on machines with jobs of hours and staging in
// milliseconds (pepa gen's testdata/spec-nondedicated.json, 4,000 states
// as pepa states counts them; with owners of capacity 2 on M2 and M3
// staging too, 6,000), and a network failing and repaired 10^4 and 10^6
// times faster than jobs end (cycles of three states: complex poles).
func TestLaplaceNonDedicatedModels(t *testing.T) {
	long := false
	if f := flag.Lookup("reference.stiff"); f != nil && f.Value.String() == "true" {
		long = true
	}
	cases := []stiffCase{
		{file: "testdata/nondedicated-4000.pepa", betas: []float64{20000}, oracle: radauOracle, tol: 1e-8, limit: 2 * time.Second},
		{file: "testdata/failing-net-1e6.pepa", betas: []float64{3000}, oracle: radauOracle, tol: 1e-8, limit: 2 * time.Second},
		// Owners' queues 8 deep on two machines: blocks of 81 states
		// (more than the 64 the engine once took), factored banded.
		{file: "testdata/owners-queue.pepa", betas: []float64{8000}, oracle: radauOracle, tol: 1e-8, limit: 2 * time.Second},
	}
	if long {
		cases[0].betas = []float64{10000, 30000}
		cases[1].betas = []float64{1500, 5000}
		cases = append(cases,
			stiffCase{file: "testdata/nondedicated-6000.pepa", betas: []float64{15000, 40000}, oracle: radauOracle, tol: 1e-8, limit: 2 * time.Second},
			stiffCase{file: "testdata/failing-net-1e4.pepa", betas: []float64{1500, 5000}, oracle: radauOracle, tol: 1e-8, limit: 2 * time.Second})
	}
	for _, sc := range cases {
		t.Run(sc.file, func(t *testing.T) { stiffCheck(t, sc) })
	}
}

func stiffCheck(t *testing.T, sc stiffCase) {
	src, err := os.ReadFile(sc.file)
	if err != nil {
		t.Fatal(err)
	}
	m, diags := lang.Load(sc.file, src)
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	s, err := ctmc.Compile(m, ctmc.DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := models.FindMachines(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	stop := map[string][]string{}
	for _, mm := range ms {
		stop[mm.Name] = mm.LastNames(s)
	}
	rc, err := reference.Derive(context.Background(), m, reference.Options{Stop: stop})
	if err != nil {
		t.Fatal(err)
	}
	all := rc.FinishedStates(slices.Collect(maps.Keys(stop)))
	// The Laplace analyses first, then the oracle once per passage with
	// every time it needs (its cost is mostly per call).
	var results []*models.Result
	for _, beta := range sc.betas {
		start := time.Now()
		res, err := models.AnalyzeGroups(context.Background(), s, models.Options{Question: models.Question{Beta: beta, Transient: passage.EngineLaplace}})
		took := time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range res.Groups {
			if g.Transient != passage.EngineLaplace {
				t.Fatalf("beta %g: group %v solved by %q: want every group by Laplace", beta, g.Components, g.Transient)
			}
		}
		if took > sc.limit {
			t.Errorf("beta %g: the Laplace analysis took %v, more than %v", beta, took, sc.limit)
		}
		t.Logf("beta %g: %d states, Laplace analysis %v (%s)", beta, res.States, took.Round(time.Millisecond), groupsWhy(res))
		results = append(results, res)
	}
	worst := 0.0
	check := func(what string, got, want, tol float64) {
		if d := math.Abs(got - want); !(d <= tol) {
			t.Errorf("%s = %.15g, oracle %.15g (difference %.2g, tolerance %.2g)", what, got, want, d, tol)
		} else {
			worst = math.Max(worst, d)
		}
	}
	for k, mr := range results[0].Machines {
		p := rc.InitialActions(stop[mr.Name])
		var ts []float64
		for b, beta := range sc.betas {
			ts = append(ts, beta, results[b].Machines[k].Quantile)
		}
		v, e, err := sc.oracle(rc, p, ts)
		if err != nil {
			t.Fatal(err)
		}
		mean, _, err := rc.MeanTimes(p)
		if err != nil {
			t.Fatal(err)
		}
		for b, beta := range sc.betas {
			r := results[b].Machines[k]
			check(fmt.Sprintf("beta %g: %s P(F <= beta)", beta, mr.Name), r.PByBeta, v[2*b], sc.tol+e[2*b])
			check(fmt.Sprintf("beta %g: %s CDF at its 0.99 quantile", beta, mr.Name), 0.99, v[2*b+1], sc.tol+e[2*b+1])
			check(fmt.Sprintf("beta %g: %s E[F] (relative)", beta, mr.Name), r.Mean/mean, 1, sc.tol)
		}
	}
	ap := rc.InitialStates(all)
	v, e, err := sc.oracle(rc, ap, sc.betas)
	if err != nil {
		t.Fatal(err)
	}
	mean, _, err := rc.MeanTimes(ap)
	if err != nil {
		t.Fatal(err)
	}
	for b, beta := range sc.betas {
		check(fmt.Sprintf("beta %g: P(all <= beta)", beta), results[b].PAllByBeta, v[b], sc.tol+e[b])
		check(fmt.Sprintf("beta %g: E[all finished] (relative)", beta), results[b].ExpectedMakespan/mean, 1, sc.tol)
	}
	t.Logf("largest difference from the oracle %.2g", worst)
}
