package simulate_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"pepa/ctmc/simulate"
	"pepa/internal/coverage"
	"pepa/internal/testchain"
	"pepa/internal/testmodels"
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
	srcs["coupled-8-4"] = testmodels.Store(8, 4)
	// Owners with //pepa:initial distributions: the start is drawn.
	srcs["desktops"] = readFile(t, "../../testdata/owners/desktops.pepa")
	probs, others := coverage.Checker{Level: 0.95, Floor: 0.02, Probabilities: true}, coverage.Checker{Level: 0.95, Floor: 0.02}
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
		initial, err := simulate.InitialFromNames(c.S, pragmas.Initial)
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
		var spec simulate.RobustnessSpec
		spec.Beta = beta
		for _, m := range machines {
			spec.Machines = append(spec.Machines, simulate.MachineSpec{Name: m.Name, Last: m.Last})
		}
		for seed := uint64(0); seed < 30; seed++ {
			// Odd seeds take the general evaluation, even ones the leaf
			// tables (every model here has them).
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
