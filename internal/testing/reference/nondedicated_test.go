package reference_test

import (
	"context"
	"flag"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"pepa/ctmc"
	"pepa/internal/testing/randmodel"
	"pepa/internal/testing/reference"
	"pepa/lang"
	"pepa/models"
	"pepa/passage"
)

var (
	flagNonDedicatedN    = flag.Int("reference.nondedicated", 12, "random non-dedicated models (owners, failing networks, Erlang work, rates over 10^7) TestNonDedicatedLaplace runs")
	flagNonDedicatedSeed = flag.Int64("reference.nondedicated.seed", 1, "first seed of TestNonDedicatedLaplace's models")
	flagNonDedicatedMax  = flag.Int("reference.nondedicated.states", 3000, "the largest product of local state counts of TestNonDedicatedLaplace's models")
)

// TestNonDedicatedLaplace: the Laplace engine, forced, on random
// non-dedicated mappings at real time scales (randmodel.NonDedicated:
// owners of both disciplines written into the machines, in one or two
// phases; a network failing when idle, repaired in up to three phases;
// Erlang work; rates spread over up to 10^7, so uniformization would take
// 10^6 to 10^9 steps), against the reference's stiff oracles, which share
// no code with it (the double-double exponential up to 300 states, Radau
// IIA beyond), on the chain the reference derives with finished machines
// stopped: every machine's P(F <= beta) at two goals and the oracle's CDF
// at its reported 0.99 quantile, its E[F], the group's P(all <= beta) and
// E[all finished], each within the accuracy the engine states plus the
// oracle's own error estimate.
func TestNonDedicatedLaplace(t *testing.T) {
	n := *flagNonDedicatedN
	if testing.Short() {
		n = min(n, 3)
	}
	tally := map[string]int{}
	for k := 0; k < n; k++ {
		seed := *flagNonDedicatedSeed + int64(k)
		m := randmodel.NonDedicated(seed, *flagNonDedicatedMax)
		for _, f := range m.Features {
			tally[f]++
		}
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) { nonDedicatedCheck(t, m, tally) })
	}
	t.Logf("features and paths over %d models: %v", n, tally)
}

func nonDedicatedCheck(t *testing.T, gm randmodel.Model, tally map[string]int) {
	ctx := context.Background()
	m, diags := lang.Load(fmt.Sprintf("nondedicated-%d.pepa", gm.Seed), []byte(gm.Source))
	if diags.HasErrors() {
		t.Fatalf("%v\n%s", diags.Err(), gm.Source)
	}
	s, err := ctmc.Compile(m, ctmc.DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	stop := map[string][]string{}
	for k, name := range gm.Machines {
		stop[name] = gm.Cycles[k]
	}
	rc, err := reference.Derive(ctx, m, reference.Options{Stop: stop, MaxStates: 20000})
	if err != nil {
		t.Fatalf("reference: %v\n%s", err, gm.Source)
	}
	all := rc.FinishedStates(gm.Machines)
	ap := rc.InitialStates(all)
	allMean, _, err := rc.MeanTimes(ap)
	if err != nil {
		t.Fatal(err)
	}
	if math.IsInf(allMean, 1) {
		t.Skip("a machine may never finish")
	}
	betas := []float64{0.6 * allMean, 1.5 * allMean}
	var results []*models.Result
	for _, beta := range betas {
		start := time.Now()
		res, err := models.AnalyzeGroups(ctx, s, models.Options{Question: models.Question{Beta: beta, Transient: passage.EngineLaplace}})
		if err != nil {
			t.Fatalf("beta %g: %v\n%s", beta, err, gm.Source)
		}
		for _, g := range res.Groups {
			if g.Transient != "" && g.Transient != passage.EngineLaplace {
				t.Fatalf("beta %g: group %v solved by %q", beta, g.Components, g.Transient)
			}
			if strings.Contains(g.TransientWhy, "refined") {
				tally["path:refined"]++
			}
			if strings.Contains(g.TransientWhy, "complex eigenvalues") {
				tally["path:complex-poles"]++
			}
		}
		t.Logf("beta %.6g: %d states (reference %d), %v; %s", beta, res.States, rc.N(), time.Since(start).Round(time.Millisecond), groupsWhy(res))
		results = append(results, res)
	}
	check := func(what string, got, want, tol float64) {
		if d := math.Abs(got - want); !(d <= tol) {
			t.Errorf("%s = %.15g, oracle %.15g (difference %.2g, tolerance %.2g)\n%s", what, got, want, d, tol, gm.Source)
		}
	}
	for k, name := range gm.Machines {
		p := rc.InitialActions(stop[name])
		var ts []float64
		for b, beta := range betas {
			ts = append(ts, beta, results[b].Machines[k].Quantile)
		}
		v, e, err := rc.CDFsStiff(p, ts)
		if err != nil {
			t.Fatal(err)
		}
		mean, _, err := rc.MeanTimes(p)
		if err != nil {
			t.Fatal(err)
		}
		for b, beta := range betas {
			res := results[b]
			mr := res.Machines[k]
			check(fmt.Sprintf("beta %.6g: %s P(F <= beta)", beta, name), mr.PByBeta, v[2*b], res.Epsilon+e[2*b]+1e-12)
			check(fmt.Sprintf("beta %.6g: %s CDF at its 0.99 quantile %.8g", beta, name, mr.Quantile), 0.99, v[2*b+1], res.Epsilon+e[2*b+1]+1e-9)
			check(fmt.Sprintf("%s E[F] (relative)", name), mr.Mean/mean, 1, 1e-9)
		}
	}
	v, e, err := rc.CDFsStiff(ap, betas)
	if err != nil {
		t.Fatal(err)
	}
	for b, beta := range betas {
		res := results[b]
		check(fmt.Sprintf("beta %.6g: P(all <= beta)", beta), res.PAllByBeta, v[b], float64(max(1, len(res.Groups)))*res.Epsilon+e[b]+1e-12)
		check("E[all finished] (relative)", res.ExpectedMakespan/allMean, 1, 1e-9+res.MakespanError/allMean)
	}
}

// groupsWhy is each group's engine note.
func groupsWhy(res *models.Result) string {
	var out []string
	for _, g := range res.Groups {
		out = append(out, fmt.Sprintf("%v: %s", g.Components, g.TransientWhy))
	}
	return strings.Join(out, "; ")
}
