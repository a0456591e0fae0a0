package fluidcheck

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"pepa/ctmc/fluid"
	"pepa/lang"
)

var large = flag.Bool("fluid.large", false, "also check the fluid limit at n = 1000 (101,101 states, a few seconds)")

func scalingModel(t *testing.T, n int) *lang.Model {
	t.Helper()
	src, err := os.ReadFile("../../../testdata/fluid/scaling.pepa")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(src), "n = 100;", fmt.Sprintf("n = %d;", n), 1)
	m, diags := lang.Load("scaling.pepa", []byte(text))
	if m == nil {
		t.Fatal(diags)
	}
	return m
}

// TestFluidLimit: the distance of the fluid means to the chain's exact
// means shrinks as the populations grow (Kurtz): by at least 4 from n =
// 10 to 100 over the time series (the transient crosses the kink of a
// minimum, where the rate is 1/sqrt(n); 1/n away from it), and at the
// steady state, which is away from the kink, by at least 8.
func TestFluidLimit(t *testing.T) {
	ns := []int{10, 100}
	if *large {
		ns = append(ns, 1000)
	}
	var series, steady []float64
	for _, n := range ns {
		m := scalingModel(t, n)
		q := fluid.Query{Times: []float64{0, 0.5, 1, 1.5, 2, 3, 4}, Steady: n < 1000, Check: Checker{}}
		a, err := fluid.Analyze(context.Background(), m, q, fluid.Options{})
		if err != nil {
			t.Fatal(err)
		}
		c := a.Check
		if c.Against != "exact" {
			t.Fatalf("n=%d: checked against %s: %s", n, c.Against, c.How)
		}
		t.Logf("n=%d: %s: series populations %.3g throughputs %.3g; steady populations %.3g throughputs %.3g", n, c.How,
			c.SeriesPopulation, c.SeriesThroughput, c.SteadyPopulation, c.SteadyThroughput)
		series = append(series, c.SeriesPopulation)
		steady = append(steady, c.SteadyPopulation)
	}
	for i := 1; i < len(ns); i++ {
		if !(series[i] < series[i-1]/4) {
			t.Errorf("series distance %.3g at n=%d, %.3g at n=%d: not shrinking", series[i], ns[i], series[i-1], ns[i-1])
		}
	}
	if !(steady[1] < steady[0]/8) {
		t.Errorf("steady distance %.3g at n=100, %.3g at n=10: not shrinking as 1/n", steady[1], steady[0])
	}
}

// TestCheckSeesAnError: a fluid answer moved by 1% of a population is
// reported 1% farther from the chain (the check measures, it does not
// trust the analysis).
func TestCheckSeesAnError(t *testing.T) {
	m := scalingModel(t, 100)
	a, err := fluid.Analyze(context.Background(), m, fluid.Query{Steady: true, Times: []float64{0, 1, 2}}, fluid.Options{})
	if err != nil {
		t.Fatal(err)
	}
	base, err := Checker{}.Check(context.Background(), m, a.Model, a)
	if err != nil {
		t.Fatal(err)
	}
	a.Steady.Populations[0] += 1 // Client:Client, of 100 copies
	a.Series.Populations[0][2] += 1
	moved, err := Checker{}.Check(context.Background(), m, a.Model, a)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range [][2]float64{{base.SteadyPopulation, moved.SteadyPopulation}, {base.SeriesPopulation, moved.SeriesPopulation}} {
		if d[1] < 0.01-d[0]-1e-12 || d[1] > 0.01+d[0]+1e-12 {
			t.Errorf("distance %.4g became %.4g after moving 1%% of a population", d[0], d[1])
		}
	}
}

// TestCheckBySimulation: a chain too large for the exact check is
// compared with simulation's intervals of the steady state.
func TestCheckBySimulation(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates")
	}
	m := scalingModel(t, 100)
	a, err := fluid.Analyze(context.Background(), m, fluid.Query{Steady: true}, fluid.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Checker{MaxStates: 100, SimBudget: 2e9, Seed: 3}.Check(context.Background(), m, a.Model, a)
	if err != nil {
		t.Fatal(err)
	}
	if c.Against != "simulation" || c.Compared == 0 {
		t.Fatalf("against %q, %d compared: %s", c.Against, c.Compared, c.How)
	}
	// The exact distance at n = 100 is 0.0044 of the copies: simulation
	// must see a distance of that order, not 0 and not 0.1.
	if !(c.SteadyPopulation > 1e-4 && c.SteadyPopulation < 0.03) {
		t.Errorf("distance to simulation %.3g: %s", c.SteadyPopulation, c.How)
	}
	t.Logf("%s: %d of %d outside, distance %.3g", c.How, c.Outside, c.Compared, c.SteadyPopulation)
}
