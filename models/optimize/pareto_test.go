package optimize

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"pepa/ctmc"
	"pepa/lang"
	"pepa/models"
	"pepa/models/energy"
	"pepa/models/spec"
)

// bruteDominates is the dominance of ParetoFront written out again:
// (psiA, eA) is no worse than (psiB, eB) beyond the tolerances in both
// figures and better beyond them in one.
func bruteDominates(psiA, eA, psiB, eB float64) bool {
	geq := psiA >= psiB-ParetoTolerance
	gt := psiA > psiB+ParetoTolerance
	leq := eA <= eB || (eA-eB) <= ParetoRelTolerance*math.Max(eA, eB)
	lt := eA < eB && (eB-eA) > ParetoRelTolerance*math.Max(eA, eB)
	return geq && leq && (gt || lt)
}

// bruteFront is the indices of the points no other dominates, by
// comparing every pair.
func bruteFront(psi, e []float64) []int {
	var out []int
	for i := range psi {
		dominated := false
		for j := range psi {
			if j != i && bruteDominates(psi[j], e[j], psi[i], e[i]) {
				dominated = true
				break
			}
		}
		if !dominated {
			out = append(out, i)
		}
	}
	return out
}

// TestParetoIndicesBruteForce: the sorted sweep finds the front pairwise
// comparison finds, on points with many exact ties and near ties (within
// and just beyond the tolerances).
func TestParetoIndicesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 300; trial++ {
		n := 1 + rng.IntN(60)
		psi, e := make([]float64, n), make([]float64, n)
		levels := 1 + rng.IntN(6)
		for i := range psi {
			psi[i] = float64(rng.IntN(levels)) / float64(levels)
			e[i] = 1000 * float64(1+rng.IntN(levels))
			switch rng.IntN(5) {
			case 0:
				psi[i] += ParetoTolerance * (rng.Float64() - 0.5) // a tie
			case 1:
				psi[i] += 3 * ParetoTolerance // beyond
			case 2:
				e[i] *= 1 + ParetoRelTolerance*(rng.Float64()-0.5)
			case 3:
				e[i] *= 1 - 3*ParetoRelTolerance
			}
		}
		got, want := paretoIndices(psi, e), bruteFront(psi, e)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("trial %d: front %v, pairwise %v\npsi %v\ne %v", trial, got, want, psi, e)
		}
	}
}

// wholeFigures are a mapping's figures from its whole generated model,
// analysed by AnalyzeGroups as pepa robustness analyses it.
type wholeFigures struct {
	alloc         [][]int
	psi, pAll     float64
	means         []float64
	makespan, err float64 // E[M] and its error bound
}

func analyzeWhole(in *spec.Instance, alloc [][]int, beta float64) (wholeFigures, error) {
	w := wholeFigures{alloc: alloc, means: make([]float64, len(in.Machines))}
	var src strings.Builder
	if err := in.Generate(&src, in.MappingOf("whole", alloc)); err != nil {
		return w, err
	}
	m, diags := lang.Load("whole.pepa", []byte(src.String()))
	if diags.HasErrors() {
		return w, diags.Err()
	}
	pragmas, err := models.ReadPragmas(m.File)
	if err != nil {
		return w, err
	}
	s, err := ctmc.Compile(m, ctmc.DefaultOptions)
	if err != nil {
		return w, err
	}
	r, err := models.AnalyzeGroups(context.Background(), s, models.Options{Question: models.Question{Beta: beta, Epsilon: 1e-12},
		Pragmas: pragmas})
	if err != nil {
		return w, err
	}
	for _, mr := range r.Machines {
		for j, name := range in.Machines {
			if name == mr.Name {
				w.means[j] = mr.Mean
			}
		}
	}
	w.psi, w.pAll, w.makespan, w.err = r.Robustness, r.PAllByBeta, r.ExpectedMakespan, r.MakespanError
	return w, nil
}

// everyMapping analyses each of the machines^applications mappings whole,
// in parallel.
func everyMapping(t *testing.T, in *spec.Instance, beta float64) []wholeFigures {
	t.Helper()
	m, n := len(in.Machines), len(in.Apps)
	total := 1
	for a := 0; a < n; a++ {
		total *= m
	}
	out := make([]wholeFigures, total)
	errs := make([]error, total)
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range next {
				alloc := make([][]int, m)
				for a, x := 0, k; a < n; a, x = a+1, x/m {
					alloc[x%m] = append(alloc[x%m], a)
				}
				out[k], errs[k] = analyzeWhole(in, alloc, beta)
			}
		}()
	}
	for k := 0; k < total; k++ {
		next <- k
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func allocString(in *spec.Instance, alloc [][]int) string {
	var parts []string
	for j, apps := range alloc {
		var names []string
		for _, a := range apps {
			names = append(names, in.Apps[a])
		}
		parts = append(parts, in.Machines[j]+":"+strings.Join(names, " "))
	}
	return strings.Join(parts, " | ")
}

// checkEnumeratedFront compares ParetoFront's front with the front of
// every mapping analysed whole (energies by energy.Expected from the
// whole analyses' means and makespans): the same mappings, and each one's
// figures within 1e-9 (energies and makespans: within 1e-9 relative plus
// the makespans' error bounds).
func checkEnumeratedFront(t *testing.T, in *spec.Instance, whole []wholeFigures, power energy.Power, res *ParetoResult) {
	t.Helper()
	psi, e := make([]float64, len(whole)), make([]float64, len(whole))
	for k, w := range whole {
		psi[k], e[k] = w.psi, energy.Expected(power, w.means, w.makespan)
	}
	want := map[string]int{}
	for _, k := range bruteFront(psi, e) {
		want[allocString(in, whole[k].alloc)] = k
	}
	if res.How != ParetoEnumerated || res.Mappings != len(whole) || res.Stopped != ParetoComplete {
		t.Fatalf("how %q, %d mappings, stopped %q; want enumerated, %d, complete", res.How, res.Mappings, res.Stopped, len(whole))
	}
	got := map[string]bool{}
	for i, p := range res.Front {
		s := allocString(in, p.Allocation)
		got[s] = true
		k, ok := want[s]
		if !ok {
			t.Errorf("front #%d %s (robustness %.10f, E[E] %.6f) is not on the enumerated front", i+1, s, p.Robustness, p.ExpectedEnergy)
			continue
		}
		w := whole[k]
		idleSum := 0.0
		for _, x := range power.Idle {
			idleSum += x
		}
		eTol := 1e-9*e[k] + idleSum*2*w.err
		if math.Abs(p.Robustness-w.psi) > 1e-9 || math.Abs(p.PAll-w.pAll) > 1e-9 ||
			math.Abs(p.ExpectedEnergy-e[k]) > eTol || math.Abs(p.ExpectedMakespan-w.makespan) > 1e-9*w.makespan+2*w.err {
			t.Errorf("front #%d %s: robustness %.12f P(all) %.12f E[E] %.9f E[M] %.9f; whole model %.12f %.12f %.9f %.9f",
				i+1, s, p.Robustness, p.PAll, p.ExpectedEnergy, p.ExpectedMakespan, w.psi, w.pAll, e[k], w.makespan)
		}
		if i > 0 && p.Robustness > res.Front[i-1].Robustness {
			t.Errorf("front #%d is more robust than #%d", i+1, i)
		}
	}
	for s := range want {
		if !got[s] {
			t.Errorf("enumerated front mapping %s is missing", s)
		}
	}
}

func loadEnergySpec(t *testing.T) *spec.Instance {
	t.Helper()
	in, err := spec.LoadSpec("../../testdata/spec-energy.json")
	if err != nil {
		t.Fatal(err)
	}
	if in.Power == nil || in.Power.IdleFree() {
		t.Fatal("testdata/spec-energy.json should give power with some idle power > 0")
	}
	return in
}

// TestParetoFrontEnumerated: on testdata/spec-energy.json (3 machines, 6
// applications: 729 mappings) ParetoFront enumerates, and its front is
// exactly that of every mapping analysed whole, with the specification's
// idle powers and with every idle power 0 (E[M] then enters no energy).
func TestParetoFrontEnumerated(t *testing.T) {
	in := loadEnergySpec(t)
	const beta = 40
	t0 := time.Now()
	whole := everyMapping(t, in, beta)
	t.Logf("%d mappings analysed whole in %.1f s", len(whole), time.Since(t0).Seconds())
	idleFree := energy.Power{Busy: in.Power.Busy, Idle: make([]float64, len(in.Machines))}
	for _, c := range []struct {
		name  string
		power energy.Power
	}{{"idle", *in.Power}, {"idle-free", idleFree}} {
		t.Run(c.name, func(t *testing.T) {
			t0 := time.Now()
			p := c.power
			res, err := ParetoFront(context.Background(), in, ParetoOptions{Beta: beta, Power: &p, Epsilon: 1e-12})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("front of %d mappings in %.2f s (%d machine solves, %d makespans integrated)", len(res.Front), time.Since(t0).Seconds(), res.MachineSolves, res.Integrals)
			checkEnumeratedFront(t, in, whole, c.power, res)
			if len(res.Front) < 5 {
				t.Errorf("a front of %d mappings: the specification should trade robustness for energy", len(res.Front))
			}
			checkHeuristics(t, in, res)
			// The cloud: every mapping with its energy; with idle power
			// those the bounds ruled out only when asked for.
			wantCloud := len(whole)
			if c.power.IdleFree() {
				if res.Integrals != len(res.Front)+len(spec.Heuristics) {
					t.Errorf("%d makespans integrated, want only the front's and the heuristics' (%d)", res.Integrals, len(res.Front)+len(spec.Heuristics))
				}
			} else {
				if res.Integrals >= len(whole) {
					t.Errorf("%d makespans integrated: the bounds ruled out none", res.Integrals)
				}
				wantCloud = res.Integrals - len(res.Front) - len(spec.Heuristics)
			}
			if len(res.Cloud) != wantCloud {
				t.Errorf("%d points in the cloud, want %d", len(res.Cloud), wantCloud)
			}
			if !c.power.IdleFree() {
				// A sample of the others, with the energies the whole
				// models give them.
				const sample = 50
				res2, err := ParetoFront(context.Background(), in, ParetoOptions{Beta: beta, Power: &p, Epsilon: 1e-12, CloudSample: sample})
				if err != nil {
					t.Fatal(err)
				}
				checkEnumeratedFront(t, in, whole, c.power, res2)
				if len(res2.Cloud) != len(res.Cloud)+sample {
					t.Errorf("CloudSample %d: %d points in the cloud, %d without", sample, len(res2.Cloud), len(res.Cloud))
				}
				for _, q := range res2.Cloud {
					found := false
					for _, w := range whole {
						want := energy.Expected(c.power, w.means, w.makespan)
						found = found || math.Abs(q.Energy-want) <= 1e-8*want && math.Abs(q.Robustness-w.psi) <= 1e-9
					}
					if !found {
						t.Errorf("cloud point (%g, %g) is no mapping's", q.Energy, q.Robustness)
					}
				}
			}
		})
	}
}

// checkHeuristics: every heuristic is listed with its mapping and its
// place: on the front (the front mapping names it) or dominated by the
// front mapping it names.
func checkHeuristics(t *testing.T, in *spec.Instance, res *ParetoResult) {
	t.Helper()
	if len(res.Heuristics) != len(spec.Heuristics) {
		t.Fatalf("%d heuristics, want %d", len(res.Heuristics), len(spec.Heuristics))
	}
	etm := in.ExpectedTimes()
	for k, h := range res.Heuristics {
		if h.Heuristics[0] != spec.Heuristics[k].Name || allocString(in, h.Allocation) != allocString(in, spec.Heuristics[k].Run(in, etm)) {
			t.Errorf("heuristic %d: %v %s", k, h.Heuristics, allocString(in, h.Allocation))
		}
		switch {
		case h.Rank > 0:
			f := res.Front[h.Rank-1]
			if allocString(in, f.Allocation) != allocString(in, h.Allocation) || !containsString(f.Heuristics, spec.Heuristics[k].Name) {
				t.Errorf("%s: rank %d, but the front's #%d is %s (%v)", spec.Heuristics[k].Name, h.Rank, h.Rank, allocString(in, f.Allocation), f.Heuristics)
			}
		case h.DominatedBy > 0:
			f := res.Front[h.DominatedBy-1]
			if !bruteDominates(f.Robustness, f.ExpectedEnergy, h.Robustness, h.ExpectedEnergy) {
				t.Errorf("%s: dominated by #%d, which does not dominate it", spec.Heuristics[k].Name, h.DominatedBy)
			}
		default:
			t.Errorf("%s: neither on the front nor dominated", spec.Heuristics[k].Name)
		}
	}
}

func containsString(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// TestParetoFrontSearched: with enumeration ruled out the search's front
// holds only mappings no evaluated mapping dominates, each with the
// figures the enumeration gives it; on 729 mappings it finds the whole
// front.
func TestParetoFrontSearched(t *testing.T) {
	in := loadEnergySpec(t)
	const beta = 40
	exact, err := ParetoFront(context.Background(), in, ParetoOptions{Beta: beta, Power: in.Power})
	if err != nil {
		t.Fatal(err)
	}
	byAlloc := map[string]ParetoPoint{}
	for _, p := range exact.Front {
		byAlloc[allocString(in, p.Allocation)] = p
	}
	// The search stops at its time budget: on a loaded machine 2 s
	// evaluated 70 mappings (of 729) and missed some of the front. It
	// runs again with twice the budget, up to 16 s, until it finds the
	// whole front; it must by then.
	var res *ParetoResult
	for budget := 2 * time.Second; ; budget *= 2 {
		res, err = ParetoFront(context.Background(), in, ParetoOptions{Beta: beta, Power: in.Power, MaxEnumerate: -1, Budget: budget, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		found := map[string]bool{}
		for _, p := range res.Front {
			found[allocString(in, p.Allocation)] = true
		}
		missed := 0
		for s := range byAlloc {
			if !found[s] {
				missed++
			}
		}
		if missed == 0 || budget >= 16*time.Second {
			break
		}
		t.Logf("%v: %d mappings evaluated, %d of the front missed: again with twice the budget", budget, res.Mappings, missed)
	}
	if res.How != ParetoSearched || res.Stopped != ParetoBudget {
		t.Fatalf("how %q stopped %q, want searched, budget", res.How, res.Stopped)
	}
	for _, p := range res.Front {
		for _, q := range res.Cloud {
			if bruteDominates(q.Robustness, q.Energy, p.Robustness, p.ExpectedEnergy) {
				t.Errorf("front mapping %s is dominated by an evaluated mapping (%g, %g)", allocString(in, p.Allocation), q.Robustness, q.Energy)
			}
		}
	}
	got := map[string]bool{}
	for _, p := range res.Front {
		got[allocString(in, p.Allocation)] = true
		q, ok := byAlloc[allocString(in, p.Allocation)]
		if ok && (p.Robustness != q.Robustness || math.Abs(p.ExpectedEnergy-q.ExpectedEnergy) > 1e-9*q.ExpectedEnergy) {
			t.Errorf("%s: searched %v %v, enumerated %v %v", allocString(in, p.Allocation), p.Robustness, p.ExpectedEnergy, q.Robustness, q.ExpectedEnergy)
		}
	}
	for s := range byAlloc {
		if !got[s] {
			t.Errorf("the search missed front mapping %s (%d of %d mappings evaluated)", s, res.Mappings, len(exact.Cloud))
		}
	}
	checkHeuristics(t, in, res)
}

// TestParetoFrontCoupled: with a shared network each mapping is analysed
// whole; the front is that of every mapping, each analysed whole.
func TestParetoFrontCoupled(t *testing.T) {
	in, err := spec.ParseSpec("s.json", []byte(`{"etc": [[4, 6, 5], [3, 5, 4], [5, 3, 6], [6, 4, 5]],
		"workload": {"nominal": 1, "perturbed": {"uniform": [1.0, 1.5]}},
		"availability": {"nominal": [1, 0.9, 0.8], "perturbed": {"uniform": [0.55, 0.85]}},
		"seed": 7,
		"resources": {"Net": {"machines": ["M1", "M2"], "rate": 20, "latency": 0.3, "data": [30, 10, 20, 0]}},
		"power": {"busy": [200, 150, 90], "idle": [50, 30, 10]}}`))
	if err != nil {
		t.Fatal(err)
	}
	const beta = 12
	whole := everyMapping(t, in, beta)
	res, err := ParetoFront(context.Background(), in, ParetoOptions{Beta: beta, Power: in.Power, Epsilon: 1e-12})
	if err != nil {
		t.Fatal(err)
	}
	if res.Analyses == 0 || res.MachineSolves != 0 {
		t.Errorf("%d whole analyses, %d machine solves: coupled mappings are analysed whole", res.Analyses, res.MachineSolves)
	}
	checkEnumeratedFront(t, in, whole, *in.Power, res)
	checkHeuristics(t, in, res)
}

// TestParetoFrontPowerFlags: without Power, the front uses the
// specification's power with the flags applied (the same front as with
// that power given by hand); without any power, or with flags that do not
// resolve, a PowerError says which.
func TestParetoFrontPowerFlags(t *testing.T) {
	in := loadEnergySpec(t)
	idleFree := energy.Power{Busy: in.Power.Busy, Idle: make([]float64, len(in.Machines))}
	byFlags, err := ParetoFront(context.Background(), in, ParetoOptions{Beta: 40, PowerFlags: models.PowerFlags{Idle: "0,0,0"}})
	if err != nil {
		t.Fatal(err)
	}
	byHand, err := ParetoFront(context.Background(), in, ParetoOptions{Beta: 40, Power: &idleFree})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(byFlags.Power, idleFree) || !reflect.DeepEqual(byFlags.Front, byHand.Front) {
		t.Errorf("--idle-power 0,0,0: power %+v, a front of %d; want power %+v, the front of %d with it", byFlags.Power, len(byFlags.Front), idleFree, len(byHand.Front))
	}
	none := *in
	none.Power = nil
	var pe *PowerError
	if _, err := ParetoFront(context.Background(), &none, ParetoOptions{Beta: 40}); !errors.As(err, &pe) || !pe.Missing || !strings.Contains(err.Error(), "power") {
		t.Errorf("no power: %v", err)
	}
	if _, err := ParetoFront(context.Background(), in, ParetoOptions{Beta: 40, PowerFlags: models.PowerFlags{Busy: "1,2"}}); !errors.As(err, &pe) || pe.Missing {
		t.Errorf("busy power of two machines for three: %v", err)
	}
}

// TestParetoFrontErrors: no power, and power of the wrong size.
func TestParetoFrontErrors(t *testing.T) {
	in := loadEnergySpec(t)
	none := *in
	none.Power = nil
	if _, err := ParetoFront(context.Background(), &none, ParetoOptions{Beta: 40}); err == nil || !strings.Contains(err.Error(), "power") {
		t.Errorf("no power: %v", err)
	}
	if _, err := ParetoFront(context.Background(), in, ParetoOptions{Beta: 40, Power: &energy.Power{Busy: []float64{1}, Idle: []float64{0}}}); err == nil {
		t.Error("power of one machine for three: no error")
	}
}

// TestParetoFrontInterrupted: a cancelled context ends the enumeration;
// the result says so and still lists the heuristics with their figures.
func TestParetoFrontInterrupted(t *testing.T) {
	in := loadEnergySpec(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := ParetoFront(ctx, in, ParetoOptions{Beta: 40, Power: in.Power})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stopped != ParetoInterrupted || len(res.Heuristics) != len(spec.Heuristics) {
		t.Fatalf("stopped %q with %d heuristics", res.Stopped, len(res.Heuristics))
	}
	for _, h := range res.Heuristics {
		if !(h.ExpectedEnergy > 0) || math.IsNaN(h.ExpectedMakespan) {
			t.Errorf("%v: E[E] %g E[M] %g", h.Heuristics, h.ExpectedEnergy, h.ExpectedMakespan)
		}
	}
}
