package simulate

import (
	"context"
	"testing"

	"pepa/internal/testchain"
	"pepa/internal/testmodels"
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
	spec := RobustnessSpec{Beta: 60}
	for _, m := range machines {
		spec.Machines = append(spec.Machines, MachineSpec{Name: m.Name, Last: m.Last})
	}
	var events int64
	var secs float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := Robustness(context.Background(), s, spec, Options{Seed: uint64(i), Replications: 20000, Workers: workers, general: general})
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
	s := testchain.Structure(b, coupledMapping(40, 20))
	machines, err := models.FindMachines(s, nil)
	if err != nil {
		b.Fatal(err)
	}
	spec := RobustnessSpec{Beta: 60}
	for _, m := range machines {
		spec.Machines = append(spec.Machines, MachineSpec{Name: m.Name, Last: m.Last})
	}
	var events int64
	var secs float64
	for i := 0; i < b.N; i++ {
		r, err := Robustness(context.Background(), s, spec, Options{Seed: uint64(i), Replications: 2000, Workers: 1})
		if err != nil {
			b.Fatal(err)
		}
		events += r.Events
		secs += r.Elapsed.Seconds()
	}
	b.ReportMetric(float64(events)/secs, "events/s")
}
