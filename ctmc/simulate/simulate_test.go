package simulate

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distuv"

	"pepa/ctmc"
	"pepa/ctmc/steady"
	"pepa/internal/testing/coverage"
	"pepa/internal/testing/testchain"
	"pepa/internal/testing/testmodels"
	"pepa/passage"
)

// mappingMachines are the machines of testmodels.Mapping(apps, machines).
func mappingMachines(t *testing.T, s *ctmc.Structure, apps, machines int) []MachineSpec {
	t.Helper()
	var out []MachineSpec
	for j, last := range testmodels.LastActions(apps, machines) {
		a, ok := s.ActionID(last[0])
		if !ok {
			t.Fatalf("no action %s", last[0])
		}
		out = append(out, MachineSpec{Name: fmt.Sprintf("M%d", j+1), Last: []int32{a}})
	}
	return out
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Skip(err)
	}
	return string(b)
}

// exactPassage computes the CDF of the first firing of the actions at
// the times, and its mean, by dense linear algebra on the chain (another
// way than package passage's uniformization): the target transitions are
// redirected to an absorbing state, the CDF is the absorbing state's entry
// of exp(Qt) from the initial state, and the mean solves (-Q_TT) m = 1
// (infinite when that system is singular or some state cannot reach the
// target).
func exactPassage(t *testing.T, c *ctmc.Chain, actions []int32, times []float64) ([]float64, float64) {
	return exactPassageSize(t, c, actions, times, false)
}

func exactPassageBig(t *testing.T, c *ctmc.Chain, actions []int32, times []float64) ([]float64, float64) {
	return exactPassageSize(t, c, actions, times, true)
}

func exactPassageSize(t *testing.T, c *ctmc.Chain, actions []int32, times []float64, big bool) ([]float64, float64) {
	t.Helper()
	if c.N > 400 && !big {
		t.Fatalf("chain of %d states too large for dense matrices", c.N)
	}
	isTarget := map[int32]bool{}
	for _, a := range actions {
		isTarget[a] = true
	}
	n := c.N + 1
	q := mat.NewDense(n, n, nil)
	for i := 0; i < c.N; i++ {
		for k := c.RowPtr[i]; k < c.RowPtr[i+1]; k++ {
			j := int(c.Col[k])
			if isTarget[c.Act[k]] {
				j = c.N
			}
			if j != i {
				q.Set(i, j, q.At(i, j)+c.RateAt(k))
				q.Set(i, i, q.At(i, i)-c.RateAt(k))
			}
		}
	}
	out := make([]float64, len(times))
	for k, x := range times {
		var qt, e mat.Dense
		qt.Scale(x, q)
		e.Exp(&qt)
		out[k] = e.At(0, c.N)
	}
	var negT mat.Dense
	negT.Scale(-1, q.Slice(0, c.N, 0, c.N))
	ones := mat.NewVecDense(c.N, nil)
	for i := 0; i < c.N; i++ {
		ones.SetVec(i, 1)
	}
	var m mat.VecDense
	if err := m.SolveVec(&negT, ones); err != nil {
		return out, math.Inf(1)
	}
	for i := 0; i < c.N; i++ {
		if !(m.AtVec(i) > 0) || math.IsInf(m.AtVec(i), 0) || m.AtVec(i) > 1e9 {
			return out, math.Inf(1)
		}
	}
	return out, m.AtVec(0)
}

// randomModel writes a small model of two or three sequential components
// with random activities, cooperating on some actions.
func randomModel(r *rand.Rand) string {
	var b strings.Builder
	acts := []string{"a", "b", "c", "d", "e"}
	comps := 2 + r.IntN(2)
	for ci := 1; ci <= comps; ci++ {
		n := 2 + r.IntN(3)
		for k := 0; k < n; k++ {
			var alts []string
			m := 1 + r.IntN(3)
			for j := 0; j < m; j++ {
				alts = append(alts, fmt.Sprintf("(%s, %.3f).C%d_%d", acts[r.IntN(len(acts))], 0.5+2.5*r.Float64(), ci, r.IntN(n)))
			}
			if k == n-1 { // keep every state reachable along a cycle
				alts = append(alts, fmt.Sprintf("(e, %.3f).C%d_0", 0.5+r.Float64(), ci))
			} else {
				alts = append(alts, fmt.Sprintf("(%s, %.3f).C%d_%d", acts[r.IntN(4)], 0.5+r.Float64(), ci, k+1))
			}
			fmt.Fprintf(&b, "C%d_%d = %s;\n", ci, k, strings.Join(alts, " + "))
		}
	}
	sys := "C1_0"
	for ci := 2; ci <= comps; ci++ {
		sys = fmt.Sprintf("(%s) <%s> C%d_0", sys, acts[r.IntN(2)], ci)
	}
	b.WriteString(sys + "\n")
	return b.String()
}

func TestPassageCoverage(t *testing.T) {
	type model struct {
		name, src string
		target    string
		times     []float64
	}
	var ms []model
	r := rand.New(rand.NewPCG(7, 7))
	for i := 0; i < 6; i++ {
		ms = append(ms, model{fmt.Sprintf("random%d", i), randomModel(r), "e", []float64{0.3, 1, 2, 4}})
	}
	ms = append(ms, model{"mapping", testmodels.Mapping(6, 2, 1), "compute5", []float64{10, 20, 40}})
	ms = append(ms, model{"pc-lan", readFile(t, "../../testdata/pc-lan.pepa"), "", nil})
	cov := coverage.Checker{Level: 0.95, Floor: 0.02, Probabilities: true}
	band := coverage.Checker{Level: 0.95}
	means := coverage.Checker{Level: 0.95, Floor: 0.02}
	for _, m := range ms {
		c := testchain.Chain(t, m.src)
		target := m.target
		times := m.times
		if target == "" { // the model's last action by name, at a few times
			target = c.S.Actions[len(c.S.Actions)-1]
			times = []float64{1, 5, 20}
		}
		ids, err := passage.ActionIDs(c.S, []string{target})
		if err != nil {
			t.Fatal(err)
		}
		exact, mean := exactPassage(t, c, ids, times)
		for seed := uint64(0); seed < 36; seed++ {
			res, err := Passage(context.Background(), c.S, PassageSpec{TargetActions: ids, Times: times}, Options{Seed: seed, Replications: 1000})
			if err != nil {
				t.Fatalf("%s: %v", m.name, err)
			}
			inBand := true
			for k, p := range res.Points {
				cov.Check(p.CDF, exact[k], fmt.Sprintf("%s seed %d P(T <= %g)", m.name, seed, p.T))
				cov.CheckWidth(p.CDF, exact[k], res.Replications, fmt.Sprintf("%s seed %d P(T <= %g)", m.name, seed, p.T))
				inBand = inBand && math.Abs(p.CDF.Value-exact[k]) <= res.Band
			}
			band.Check(Interval{0, 0, 0}, map[bool]float64{true: 0, false: 1}[inBand], fmt.Sprintf("%s seed %d DKW band", m.name, seed))
			if !math.IsInf(mean, 1) && res.Never == 0 {
				means.Check(res.Mean, mean, fmt.Sprintf("%s seed %d mean", m.name, seed))
			}
		}
	}
	t.Run("cdf points (Wilson)", cov.Verify)
	t.Run("cdf band (DKW)", band.Verify)
	t.Run("means (Student t)", means.Verify)
}

// TestSteadyCoverage: batch-means intervals of throughputs and
// populations contain the exact steady-state values at the expected rate.
func TestSteadyCoverage(t *testing.T) {
	cov := coverage.Checker{Level: 0.95}
	r := rand.New(rand.NewPCG(3, 1))
	srcs := []string{readFile(t, "../../testdata/pc-lan.pepa"), testmodels.Mapping(6, 2, 1)}
	for len(srcs) < 5 {
		src := randomModel(r)
		c := testchain.Chain(t, src)
		if len(c.Deadlocks) > 0 {
			continue
		}
		if _, err := steady.Solve(context.Background(), c, steady.Options{}); err != nil {
			continue // reducible: no unique steady state to compare with
		}
		srcs = append(srcs, src)
	}
	for i, src := range srcs {
		c := testchain.Chain(t, src)
		st, err := steady.Solve(context.Background(), c, steady.Options{})
		if err != nil {
			t.Fatal(err)
		}
		tps := map[string]float64{}
		for _, x := range ctmc.Throughputs(c, st.Pi) {
			tps[x.Action] = x.Value
		}
		uts := ctmc.Utilisations(c, st.Pi)
		for seed := uint64(0); seed < 4; seed++ {
			res, err := Steady(context.Background(), c.S, SteadySpec{BatchEvents: 2000, MaxBatches: 20}, Options{Seed: seed, Replications: 8, general: seed%2 == 1})
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range res.Throughputs {
				cov.Check(x.Interval, tps[x.Action], fmt.Sprintf("model %d seed %d throughput %s", i, seed, x.Action))
			}
			if len(res.Populations) != len(uts) {
				t.Fatalf("%d populations, exact %d", len(res.Populations), len(uts))
			}
			for k, u := range uts {
				p := res.Populations[k]
				if p.Component != u.Component || p.State != u.State {
					t.Fatalf("population %d is %s %s, exact %s %s", k, p.Component, p.State, u.Component, u.State)
				}
				cov.Check(p.Interval, u.Value, fmt.Sprintf("model %d seed %d population %s %s", i, seed, u.Component, u.State))
			}
		}
	}
	cov.Verify(t)
}

// TestReproducibleAcrossWorkers: the results depend on the seed and the
// number of replications only, not on the number of workers.
func TestReproducibleAcrossWorkers(t *testing.T) {
	src := testmodels.Mapping(8, 3, 1)
	c := testchain.Chain(t, src)
	spec := RobustnessSpec{Beta: 30, Machines: mappingMachines(t, c.S, 8, 3)}
	var first *RobustnessResult
	var firstSteady *SteadyResult
	for _, workers := range []int{1, 2, 5} {
		res, err := Robustness(context.Background(), c.S, spec, Options{Seed: 42, Replications: 1300, Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		st, err := Steady(context.Background(), c.S, SteadySpec{BatchEvents: 500, MaxBatches: 5}, Options{Seed: 42, Replications: 7, Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		res.Stats, st.Stats = Stats{}, Stats{}
		if first == nil {
			first, firstSteady = res, st
			continue
		}
		if !reflect.DeepEqual(res, first) {
			t.Fatalf("%d workers: robustness %+v, 1 worker %+v", workers, res, first)
		}
		if !reflect.DeepEqual(st, firstSteady) {
			t.Fatalf("%d workers: steady state differs from 1 worker's", workers)
		}
	}
	other, err := Robustness(context.Background(), c.S, spec, Options{Seed: 43, Replications: 1300})
	if err != nil {
		t.Fatal(err)
	}
	if other.Machines[0].PByBeta == first.Machines[0].PByBeta && other.Machines[0].Mean == first.Machines[0].Mean {
		t.Fatal("seeds 42 and 43 gave the same estimates")
	}
}

// TestPrecisionStops: a run with a precision stops once every watched
// interval is that narrow, and not long after (the check is per block).
func TestPrecisionStops(t *testing.T) {
	c := testchain.Chain(t, testmodels.Mapping(4, 2, 1))
	spec := RobustnessSpec{Beta: 15, Machines: mappingMachines(t, c.S, 4, 2)}
	res, err := Robustness(context.Background(), c.S, spec, Options{Seed: 1, Precision: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stopped != "precision" {
		t.Fatalf("stopped by %s", res.Stopped)
	}
	for _, iv := range []Interval{res.Robustness, res.PAllByBeta, res.Machines[0].PByBeta, res.Machines[1].PByBeta} {
		if iv.HalfWidth() > 0.01 {
			t.Fatalf("interval [%g, %g] wider than the precision", iv.Lo, iv.Hi)
		}
	}
	// A binomial proportion p needs about (z/h)^2 p(1-p) trials for
	// half-width h; the run may overshoot by one block.
	p := res.PAllByBeta.Value
	need := math.Pow(1.96/0.01, 2) * p * (1 - p)
	if float64(res.Replications) > 2*need+blockSize {
		t.Fatalf("%d replications for half-width 0.01 at p = %.3f (about %.0f needed)", res.Replications, p, need)
	}
}

func TestIntervals(t *testing.T) {
	// Clopper-Pearson ends, against the binomial tails they are defined by:
	// P(X >= k | lo) = alpha/2 and P(X <= k | hi) = alpha/2.
	for _, kn := range [][2]int{{0, 10}, {3, 10}, {10, 10}, {50, 200}, {1, 1000}} {
		k, n := kn[0], kn[1]
		iv := ClopperPearson(k, n, 0.95)
		if k > 0 {
			b := distuv.Binomial{N: float64(n), P: iv.Lo}
			if tail := 1 - b.CDF(float64(k-1)); math.Abs(tail-0.025) > 1e-6 {
				t.Fatalf("k=%d n=%d: P(X >= k | lo=%g) = %g", k, n, iv.Lo, tail)
			}
		} else if iv.Lo != 0 {
			t.Fatalf("k=0: lower end %g", iv.Lo)
		}
		if k < n {
			b := distuv.Binomial{N: float64(n), P: iv.Hi}
			if tail := b.CDF(float64(k)); math.Abs(tail-0.025) > 1e-6 {
				t.Fatalf("k=%d n=%d: P(X <= k | hi=%g) = %g", k, n, iv.Hi, tail)
			}
		}
	}
	// Wilson, hand-worked: k=3, n=10, z=1.959964: centre 0.3/... interval
	// [0.1078, 0.6032] (Agresti & Coull 1998, table values).
	w := Wilson(3, 10, 0.95)
	if math.Abs(w.Lo-0.1078) > 1e-4 || math.Abs(w.Hi-0.6032) > 1e-4 {
		t.Fatalf("Wilson(3, 10) = [%g, %g]", w.Lo, w.Hi)
	}
	// DKW at n = 1000, 95%: sqrt(ln(40)/2000) = 0.042947.
	if d := DKW(1000, 0.95); math.Abs(d-0.0429469) > 1e-6 {
		t.Fatalf("DKW(1000) = %g", d)
	}
}

// TestWarmupDetected: 200 copies that all start in P and relax towards
// the even split with time constant 1/0.002 = 500, in batches of 20 jumps
// (about 100 time units): the first rounds are far from the steady state.
// The rule drops several of them, and the estimate of the mean population
// of Q (100 by symmetry) is then far less biased than when every round is
// kept (the same seed, a warm-up set by hand to a single jump). The
// relaxation goes on past any truncation (e^{-2.4} of the start is left
// after 12 rounds), so the test asks for a fivefold smaller error, not
// for an unbiased estimate.
func TestWarmupDetected(t *testing.T) {
	s := testchain.Structure(t, "P = (go, 0.001).Q; Q = (back, 0.001).P; P[200]")
	spec := SteadySpec{BatchEvents: 20, MaxBatches: 60}
	res, err := Steady(context.Background(), s, spec, Options{Seed: 5, Replications: 16})
	if err != nil {
		t.Fatal(err)
	}
	spec.Warmup = 1e-9
	kept, err := Steady(context.Background(), s, spec, Options{Seed: 5, Replications: 16})
	if err != nil {
		t.Fatal(err)
	}
	q, k := res.Populations[1], kept.Populations[1]
	t.Logf("detected %d rounds: Q population %.3f; all rounds kept: %.3f", res.WarmupBatches, q.Value, k.Value)
	if q.State != "Q" || res.WarmupBatches < 2 || kept.WarmupBatches != 0 || math.Abs(q.Value-100) > math.Abs(k.Value-100)/5 {
		t.Fatalf("warm-up of %d rounds: population of %s %.3f, with every round %.3f, exact 100", res.WarmupBatches, q.State, q.Value, k.Value)
	}
}

// TestCancel: a cancelled context stops a run inside a replication that
// would otherwise never end (the target is never reached).
func TestCancel(t *testing.T) {
	s := testchain.Structure(t, "P = (a, 1).P + (b, 1).P; P")
	never, err := ctmc.ParsePredicate(s, "P != P")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	if _, err := Passage(ctx, s, PassageSpec{Target: never, Times: []float64{1}}, Options{Replications: 1, MaxEvents: 1 << 62}); err == nil {
		t.Fatal("the run was not stopped")
	}
}
