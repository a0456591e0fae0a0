package simulate_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"pepa/ctmc/simulate"
	"pepa/internal/testing/coverage"
	"pepa/internal/testing/testchain"
	"pepa/internal/testing/testmodels"
	"pepa/lang"
	"pepa/models"
)

// benchRobustness simulates the robustness of a generated mapping model
// (32 applications on 8 machines) and reports events per second.
func benchRobustness(b *testing.B, general bool, workers int) {
	s := testchain.Structure(b, testmodels.Mapping(32, 8, 1))
	machines, err := models.FindMachines(s, nil)
	if err != nil {
		b.Fatal(err)
	}
	spec := simulate.RobustnessSpec{Beta: 60}
	for _, m := range machines {
		spec.Machines = append(spec.Machines, simulate.MachineSpec{Name: m.Name, Last: m.Last})
	}
	var events int64
	var secs float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		opt := simulate.Options{Seed: uint64(i), Replications: 20000, Workers: workers}
		if general {
			opt = simulate.WithGeneral(opt)
		}
		r, err := simulate.Robustness(context.Background(), s, spec, opt)
		if err != nil {
			b.Fatal(err)
		}
		events += r.Events
		secs += r.Elapsed.Seconds()
	}
	b.ReportMetric(float64(events)/secs, "events/s")
}

func BenchmarkRobustnessTables1(b *testing.B)  { benchRobustness(b, false, 1) }
func BenchmarkRobustnessTables2(b *testing.B)  { benchRobustness(b, false, 2) }
func BenchmarkRobustnessGeneral1(b *testing.B) { benchRobustness(b, true, 1) }

// BenchmarkRobustnessCoupled is the general evaluation on a coupled
// mapping (20 machines sharing a result store, 40 applications).
func BenchmarkRobustnessCoupled(b *testing.B) {
	s := testchain.Structure(b, testmodels.Store(40, 20))
	machines, err := models.FindMachines(s, nil)
	if err != nil {
		b.Fatal(err)
	}
	spec := simulate.RobustnessSpec{Beta: 60}
	for _, m := range machines {
		spec.Machines = append(spec.Machines, simulate.MachineSpec{Name: m.Name, Last: m.Last})
	}
	var events int64
	var secs float64
	for i := 0; i < b.N; i++ {
		r, err := simulate.Robustness(context.Background(), s, spec, simulate.Options{Seed: uint64(i), Replications: 2000, Workers: 1})
		if err != nil {
			b.Fatal(err)
		}
		events += r.Events
		secs += r.Elapsed.Seconds()
	}
	b.ReportMetric(float64(events)/secs, "events/s")
}

// TestRobustnessCoverage: on the README mappings, a generated mapping
// model, coupled ones (machines that share a result store or networks)
// with finished machines stopped and, for the store, also cycling, every
// exact robustness figure (models.AnalyzeGroups, or for the cycling reading
// models.Analyze on the chain with completion flags) lies in the simulated
// interval at the expected rate. The checks of one seed are not
// independent (the makespan moves with each machine's finishing time),
// which widens the spread of the miss count beyond the binomial one; 30
// seeds keep the bound meaningful. (A separate run of 300 seeds on
// uneven.pepa gave 4.3% to 6.3% misses per mean, the Student t interval's
// small undercoverage on skewed data.)
func TestRobustnessCoverage(t *testing.T) {
	type model struct {
		src     string
		cycling bool
	}
	srcs := map[string]model{}
	for _, n := range []string{"paired", "round-robin", "uneven"} {
		srcs[n] = model{src: readFile(t, "../../testdata/cluster/"+n+".pepa")}
	}
	srcs["gen-8-3"] = model{src: testmodels.Mapping(8, 3, 1)}
	srcs["store-8-4"] = model{src: testmodels.Store(8, 4)}
	srcs["store-8-4 cycling"] = model{src: testmodels.Store(8, 4), cycling: true}
	srcs["networks-12-5"] = model{src: testmodels.Networked(12, 5, [][]int{{1, 2, 3}, {4, 5}}, 0.6)}
	// Owners with //pepa:initial distributions: the start is drawn.
	srcs["desktops"] = model{src: readFile(t, "../../testdata/owners/desktops.pepa")}
	probs, others := coverage.Checker{Level: 0.95, Floor: 0.02, Probabilities: true}, coverage.Checker{Level: 0.95, Floor: 0.02}
	for name, m := range srcs {
		c := testchain.Chain(t, m.src)
		beta := 30.0
		f, diags := lang.Parse(name, []byte(m.src))
		if diags.HasErrors() {
			t.Fatal(diags.Err())
		}
		pragmas, err := models.ReadPragmas(f)
		if err != nil {
			t.Fatal(err)
		}
		initial, err := simulate.InitialFromNames(c.S, pragmas.Initial)
		if err != nil {
			t.Fatal(err)
		}
		opt := models.Options{Question: models.Question{Beta: beta, Cycling: m.cycling}, Pragmas: pragmas}
		var exact *models.Result
		if m.cycling {
			exact, err = models.Analyze(context.Background(), c, opt)
		} else {
			exact, err = models.AnalyzeGroups(context.Background(), c.S, opt)
		}
		if err != nil {
			t.Fatal(err)
		}
		machines, err := models.FindMachines(c.S, nil)
		if err != nil {
			t.Fatal(err)
		}
		var spec simulate.RobustnessSpec
		spec.Beta = beta
		for _, m := range machines {
			spec.Machines = append(spec.Machines, simulate.MachineSpec{Name: m.Name, Last: m.Last})
		}
		if !m.cycling {
			spec.Stop = spec.Machines
		}
		for seed := uint64(0); seed < 30; seed++ {
			// Odd seeds take the general evaluation, even ones the leaf
			// or context tables (every model here has them).
			opt := simulate.Options{Seed: seed, Replications: 1500, Initial: initial}
			if seed%2 == 1 {
				opt = simulate.WithGeneral(opt)
			}
			res, err := simulate.Robustness(context.Background(), c.S, spec, opt)
			if err != nil {
				t.Fatal(err)
			}
			what := fmt.Sprintf("%s seed %d ", name, seed)
			for j, m := range res.Machines {
				probs.Check(m.PByBeta, exact.Machines[j].PByBeta, what+m.Name+" P(F <= beta)")
				probs.CheckWidth(m.PByBeta, exact.Machines[j].PByBeta, res.Replications, what+m.Name+" P(F <= beta)")
				others.Check(m.Mean, exact.Machines[j].Mean, what+m.Name+" E[F]")
			}
			probs.Check(res.Robustness, exact.Robustness, what+"robustness")
			probs.Check(res.PAllByBeta, exact.PAllByBeta, what+"P(all <= beta)")
			probs.CheckWidth(res.PAllByBeta, exact.PAllByBeta, res.Replications, what+"P(all <= beta)")
			others.Check(res.ExpectedMakespan, exact.ExpectedMakespan, what+"E[makespan]")
		}
	}
	t.Run("probabilities (Clopper-Pearson)", probs.Verify)
	t.Run("means (Student t)", others.Verify)
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestStopRuleDiscriminates: on three machines sharing a slow network,
// the figures with finished machines stopped and those with them cycling
// differ (E[makespan] 37.42 against 38.44); 100,000 replications with the
// stop rule contain the stopped exact figures and exclude the cycling
// ones, and without it the other way round, so the simulation follows the
// rule it is given and the coverage tests could see it if it did not.
func TestStopRuleDiscriminates(t *testing.T) {
	src := testmodels.Networked(12, 4, [][]int{{1, 2, 3}}, 0.2)
	s := testchain.Structure(t, src)
	exact := map[bool]*models.Result{}
	for _, cycling := range []bool{false, true} {
		r, err := models.AnalyzeGroups(context.Background(), s, models.Options{Question: models.Question{Beta: 20, Cycling: cycling}})
		if err != nil {
			t.Fatal(err)
		}
		exact[cycling] = r
	}
	machines, err := models.FindMachines(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, cycling := range []bool{false, true} {
		spec := simulate.RobustnessSpec{Beta: 20}
		for _, m := range machines {
			spec.Machines = append(spec.Machines, simulate.MachineSpec{Name: m.Name, Last: m.Last})
		}
		if !cycling {
			spec.Stop = spec.Machines
		}
		res, err := simulate.Robustness(context.Background(), s, spec, simulate.Options{Seed: 3, Replications: 100000})
		if err != nil {
			t.Fatal(err)
		}
		same, other := exact[cycling], exact[!cycling]
		if !res.ExpectedMakespan.Contains(same.ExpectedMakespan) || res.ExpectedMakespan.Contains(other.ExpectedMakespan) {
			t.Errorf("cycling %v: E[makespan] %+v, exact %.6g (the other reading %.6g)", cycling, res.ExpectedMakespan, same.ExpectedMakespan, other.ExpectedMakespan)
		}
		if !res.PAllByBeta.Contains(same.PAllByBeta) || res.PAllByBeta.Contains(other.PAllByBeta) {
			t.Errorf("cycling %v: P(all) %+v, exact %.6g (the other reading %.6g)", cycling, res.PAllByBeta, same.PAllByBeta, other.PAllByBeta)
		}
	}
}
