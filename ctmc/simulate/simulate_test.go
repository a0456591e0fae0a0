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
	"pepa/internal/testchain"
	"pepa/internal/testmodels"
	"pepa/lang"
	"pepa/models"
	"pepa/passage"
)

// coverage counts how often exact values fall outside intervals at a
// nominal level. The intervals are at least nominally 95% (Clopper-Pearson
// is conservative; Wilson, Student t and batch means are approximate), so
// the misses are at most Binomial(checks, 0.05) but for the approximation;
// verify fails when they exceed that distribution's 1-1e-4 quantile, a
// bound that follows from the intervals' level, not from this code's
// earlier output.
//
// Intervals far wider than their level needs would pass that test, so
// there are two more. With floor set, the misses among the checks whose
// exact value is not extreme (strictly inside (0.02, 0.98) for
// probabilities, every check for means) must be at least what a miss rate
// of floor gives with probability 1 - 1e-4: an approximate 95% interval
// misses 3 to 6% of the time, a conservative one (Clopper-Pearson) 3 to 5%
// away from 0 and 1, so floor is 0.02 (far below either, and far above
// the rate of intervals twice too wide, under 0.01%). And checkWidth bounds
// each binomial interval's width by what Wilson's gives at the exact
// probability.
type coverage struct {
	checks, misses int
	level          float64
	worst          string
	floor          float64 // least miss rate on the counted checks (0: none)
	probabilities  bool    // the values are probabilities: count only those in (0.02, 0.98)
	counted        int
	countedMisses  int
	wide           int // intervals wider than checkWidth allows
	widest         string
}

func (c *coverage) check(iv Interval, exact float64, what string) {
	c.checks++
	counted := !c.probabilities || exact > 0.02 && exact < 0.98
	if counted {
		c.counted++
	}
	if !iv.Contains(exact) {
		c.misses++
		if counted {
			c.countedMisses++
		}
		if os.Getenv("SIMDEBUG") != "" {
			fmt.Printf("miss %s: exact %.6g outside [%.6g, %.6g]\n", what, exact, iv.Lo, iv.Hi)
		}
		if c.worst == "" {
			c.worst = fmt.Sprintf("%s: exact %.6g outside [%.6g, %.6g]", what, exact, iv.Lo, iv.Hi)
		}
	}
}

// checkWidth: a binomial interval from n trials at the coverage's level is
// at most 1.3 times as wide as Wilson's interval at the exact probability
// p or at the estimate, whichever is wider, plus 2/n (Clopper-Pearson is a
// little wider than Wilson).
func (c *coverage) checkWidth(iv Interval, p float64, n int, what string) {
	z := distuv.UnitNormal.Quantile(1 - (1-c.level)/2)
	fn := float64(n)
	at := func(p float64) float64 { return 2 * z * math.Sqrt(p*(1-p)/fn+z*z/(4*fn*fn)) / (1 + z*z/fn) }
	wilson := math.Max(at(p), at(iv.Value))
	if w := iv.Hi - iv.Lo; w > 1.3*wilson+2/fn {
		c.wide++
		if c.widest == "" {
			c.widest = fmt.Sprintf("%s: [%.6g, %.6g] is %.3g wide, Wilson's at the exact %.6g with %d trials %.3g", what, iv.Lo, iv.Hi, w, p, n, wilson)
		}
	}
}

func (c *coverage) verify(t *testing.T) {
	t.Helper()
	b := distuv.Binomial{N: float64(c.checks), P: 1 - c.level}
	limit := 0
	for b.CDF(float64(limit)) < 1-1e-4 {
		limit++
	}
	least := 0
	if c.floor > 0 {
		lb := distuv.Binomial{N: float64(c.counted), P: c.floor}
		for lb.CDF(float64(least)) <= 1e-4 {
			least++
		}
	}
	t.Logf("%d of %d exact values outside their %g intervals (limit %d); %d of the %d counted for the floor (at least %d); %d too wide",
		c.misses, c.checks, c.level, limit, c.countedMisses, c.counted, least, c.wide)
	if c.misses > limit {
		t.Fatalf("%d of %d exact values outside their intervals, more than %d; first: %s", c.misses, c.checks, limit, c.worst)
	}
	if c.countedMisses < least {
		t.Fatalf("%d of %d counted exact values outside their intervals, fewer than %d: the intervals are wider than their level", c.countedMisses, c.counted, least)
	}
	if c.wide > 0 {
		t.Fatalf("%d intervals too wide; first: %s", c.wide, c.widest)
	}
	if c.checks < 20 {
		t.Fatalf("only %d checks", c.checks)
	}
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
	cov := coverage{level: 0.95, floor: 0.02, probabilities: true}
	band := coverage{level: 0.95}
	means := coverage{level: 0.95, floor: 0.02}
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
				cov.check(p.CDF, exact[k], fmt.Sprintf("%s seed %d P(T <= %g)", m.name, seed, p.T))
				cov.checkWidth(p.CDF, exact[k], res.Replications, fmt.Sprintf("%s seed %d P(T <= %g)", m.name, seed, p.T))
				inBand = inBand && math.Abs(p.CDF.Value-exact[k]) <= res.Band
			}
			band.check(Interval{0, 0, 0}, map[bool]float64{true: 0, false: 1}[inBand], fmt.Sprintf("%s seed %d DKW band", m.name, seed))
			if !math.IsInf(mean, 1) && res.Never == 0 {
				means.check(res.Mean, mean, fmt.Sprintf("%s seed %d mean", m.name, seed))
			}
		}
	}
	t.Run("cdf points (Wilson)", cov.verify)
	t.Run("cdf band (DKW)", band.verify)
	t.Run("means (Student t)", means.verify)
}

// TestRobustnessCoverage: on the README mappings, a generated mapping
// model and a coupled one (machines share a result store, so the exact
// joint figures come from the flag chain), every exact robustness figure
// of models.Analyze lies in the simulated interval at the expected rate.
// The checks of one seed are not independent (the makespan moves with
// each machine's finishing time), which widens the spread of the miss
// count beyond the binomial one; 30 seeds keep the bound meaningful. (A
// separate run of 300 seeds on uneven.pepa gave 4.3% to 6.3% misses per
// mean, the Student t interval's small undercoverage on skewed data.)
func TestRobustnessCoverage(t *testing.T) {
	srcs := map[string]string{}
	for _, n := range []string{"paired", "round-robin", "uneven"} {
		srcs[n] = readFile(t, "../../testdata/cluster/"+n+".pepa")
	}
	srcs["gen-8-3"] = testmodels.Mapping(8, 3, 1)
	srcs["coupled-8-4"] = coupledMapping(8, 4)
	// Owners with //pepa:initial distributions: the start is drawn.
	srcs["desktops"] = readFile(t, "../../testdata/owners/desktops.pepa")
	probs, others := coverage{level: 0.95, floor: 0.02, probabilities: true}, coverage{level: 0.95, floor: 0.02}
	for name, src := range srcs {
		c := testchain.Chain(t, src)
		beta := 30.0
		f, diags := lang.Parse(name, []byte(src))
		if diags.HasErrors() {
			t.Fatal(diags.Err())
		}
		pragmas, err := models.ReadPragmas(f)
		if err != nil {
			t.Fatal(err)
		}
		initial, err := InitialFromNames(c.S, pragmas.Initial)
		if err != nil {
			t.Fatal(err)
		}
		exact, err := models.Analyze(context.Background(), c, models.Options{Beta: beta, Pragmas: pragmas})
		if err != nil {
			t.Fatal(err)
		}
		machines, err := models.FindMachines(c.S, nil)
		if err != nil {
			t.Fatal(err)
		}
		var spec RobustnessSpec
		spec.Beta = beta
		for _, m := range machines {
			spec.Machines = append(spec.Machines, MachineSpec{Name: m.Name, Last: m.Last})
		}
		for seed := uint64(0); seed < 30; seed++ {
			// Odd seeds take the general evaluation, even ones the leaf
			// tables (every model here has them).
			res, err := Robustness(context.Background(), c.S, spec, Options{Seed: seed, Replications: 1500, general: seed%2 == 1, Initial: initial})
			if err != nil {
				t.Fatal(err)
			}
			what := fmt.Sprintf("%s seed %d ", name, seed)
			for j, m := range res.Machines {
				probs.check(m.PByBeta, exact.Machines[j].PByBeta, what+m.Name+" P(F <= beta)")
				probs.checkWidth(m.PByBeta, exact.Machines[j].PByBeta, res.Replications, what+m.Name+" P(F <= beta)")
				others.check(m.Mean, exact.Machines[j].Mean, what+m.Name+" E[F]")
			}
			probs.check(res.Robustness, exact.Robustness, what+"robustness")
			probs.check(res.PAllByBeta, exact.PAllByBeta, what+"P(all <= beta)")
			probs.checkWidth(res.PAllByBeta, exact.PAllByBeta, res.Replications, what+"P(all <= beta)")
			others.check(res.ExpectedMakespan, exact.ExpectedMakespan, what+"E[makespan]")
		}
	}
	t.Run("probabilities (Clopper-Pearson)", probs.verify)
	t.Run("means (Student t)", others.verify)
}

// TestSteadyCoverage: batch-means intervals of throughputs and
// populations contain the exact steady-state values at the expected rate.
func TestSteadyCoverage(t *testing.T) {
	cov := coverage{level: 0.95}
	r := rand.New(rand.NewPCG(3, 1))
	srcs := []string{readFile(t, "../../testdata/pc-lan.pepa"), testmodels.Mapping(6, 2, 1)}
	for len(srcs) < 5 {
		src := randomModel(r)
		c := testchain.Chain(t, src)
		if len(c.Deadlocks) > 0 {
			continue
		}
		if _, err := ctmc.Steady(context.Background(), c, ctmc.SteadyOptions{}); err != nil {
			continue // reducible: no unique steady state to compare with
		}
		srcs = append(srcs, src)
	}
	for i, src := range srcs {
		c := testchain.Chain(t, src)
		st, err := ctmc.Steady(context.Background(), c, ctmc.SteadyOptions{})
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
				cov.check(x.Interval, tps[x.Action], fmt.Sprintf("model %d seed %d throughput %s", i, seed, x.Action))
			}
			if len(res.Populations) != len(uts) {
				t.Fatalf("%d populations, exact %d", len(res.Populations), len(uts))
			}
			for k, u := range uts {
				p := res.Populations[k]
				if p.Component != u.Component || p.State != u.State {
					t.Fatalf("population %d is %s %s, exact %s %s", k, p.Component, p.State, u.Component, u.State)
				}
				cov.check(p.Interval, u.Value, fmt.Sprintf("model %d seed %d population %s %s", i, seed, u.Component, u.State))
			}
		}
	}
	cov.verify(t)
}

// TestReproducibleAcrossWorkers: the results depend on the seed and the
// number of replications only, not on the number of workers.
func TestReproducibleAcrossWorkers(t *testing.T) {
	src := testmodels.Mapping(8, 3, 1)
	c := testchain.Chain(t, src)
	machines, err := models.FindMachines(c.S, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec := RobustnessSpec{Beta: 30}
	for _, m := range machines {
		spec.Machines = append(spec.Machines, MachineSpec{Name: m.Name, Last: m.Last})
	}
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
	machines, _ := models.FindMachines(c.S, nil)
	spec := RobustnessSpec{Beta: 15}
	for _, m := range machines {
		spec.Machines = append(spec.Machines, MachineSpec{Name: m.Name, Last: m.Last})
	}
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

// coupledMapping is testmodels.Mapping with a one-slot result store that
// every machine's cycle-closing action must pass through (it then flushes
// at rate 2): the machines are no longer independent, and the leaf tables
// do not apply.
func coupledMapping(apps, machines int) string {
	src := testmodels.Mapping(apps, machines, 1)
	lines := strings.Split(strings.TrimSpace(src), "\n")
	system := lines[len(lines)-1]
	var lasts, alts []string
	for _, l := range testmodels.LastActions(apps, machines) {
		lasts = append(lasts, l[0])
		alts = append(alts, fmt.Sprintf("(%s, infty).Flush", l[0]))
	}
	body := strings.Join(lines[:len(lines)-1], "\n")
	return fmt.Sprintf("%s\nStore = %s;\nFlush = (flush, 2.0).Store;\n(%s) <%s> Store\n", body, strings.Join(alts, " + "), system, strings.Join(lasts, ", "))
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
