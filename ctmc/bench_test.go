package ctmc

import (
	"context"
	"runtime/debug"
	"syscall"
	"testing"
	"time"

	"pepa/internal/membudget"
	"pepa/internal/testing/testmodels"
	"pepa/lang"
)

func benchDerive(b *testing.B, apps, machines, wantStates int) {
	benchDeriveModel(b, testmodels.Mapping(apps, machines, 1), wantStates, Derive)
}

// benchDeriveModel times derive on src and reports states per second of
// wall time and the processor time per run (user and system, all threads):
// on a loaded machine the second says more about the work done.
func benchDeriveModel(b *testing.B, src string, wantStates int, derive func(context.Context, *Structure, DeriveOptions) (*Chain, error)) {
	benchDeriveWithin(b, context.Background(), 0, src, wantStates, derive)
}

// benchDeriveWithin is benchDeriveModel under ctx (a memory budget) and
// a state limit.
func benchDeriveWithin(b *testing.B, ctx context.Context, maxStates int, src string, wantStates int, derive func(context.Context, *Structure, DeriveOptions) (*Chain, error)) {
	m, diags := lang.Load("bench.pepa", []byte(src))
	if diags.HasErrors() {
		b.Fatal(diags.Err())
	}
	opts := DefaultOptions
	opts.MaxStates = maxStates
	s, err := Compile(m, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	var c *Chain
	cpu := time.Duration(0)
	for i := 0; i < b.N; i++ {
		c = nil
		b.StopTimer()
		// The last run's arrays are returned to the system: the runtime
		// zeroes a reservation placed over freed pages it still holds,
		// untouched part included (on Storage's 3.3 GB of reservations,
		// seconds and gigabytes resident), which one 'pepa states' never
		// meets; pages returned to the system are not zeroed again.
		debug.FreeOSMemory()
		c0 := processTime()
		b.StartTimer()
		c, err = derive(ctx, s, DeriveOptions{MaxStates: maxStates})
		cpu += processTime() - c0
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if c.N != wantStates {
		b.Fatalf("%d states, want %d", c.N, wantStates)
	}
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(float64(c.N)/sec, "states/s")
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
	b.ReportMetric(float64(c.NumTransitions()), "transitions")
	bytes := 8*len(c.States) + 8*len(c.RowPtr) + 4*len(c.Col) + 4*len(c.Act) + 2*len(c.RateIndex) + 8*len(c.Rates)
	b.ReportMetric(float64(bytes)/float64(c.N), "chain-bytes/state")
}

// BenchmarkDeriveMapping20x5: 4 applications a machine, 7^5 = 16,807 states.
func BenchmarkDeriveMapping20x5(b *testing.B) { benchDerive(b, 20, 5, 16807) }

// BenchmarkDeriveMapping32x8: the target, 7^8 = 5,764,801 states.
func BenchmarkDeriveMapping32x8(b *testing.B) { benchDerive(b, 32, 8, 5764801) }

// BenchmarkDeriveWorkstations7544: clusters of 7, 5, 4 and 4 workstations
// with file servers and a shared repairman, 1,360,800 states: a model with
// cooperation on both sides, unlike the mapping models.
func BenchmarkDeriveWorkstations7544(b *testing.B) {
	benchDeriveModel(b, testmodels.Workstations(7, 5, 4, 4), 1360800, Derive)
}

// BenchmarkDeriveWorkstations7544Sequential is the same on the
// single-threaded reference exploration, for a paired comparison.
func BenchmarkDeriveWorkstations7544Sequential(b *testing.B) {
	benchDeriveModel(b, testmodels.Workstations(7, 5, 4, 4), 1360800, deriveSequential)
}

// BenchmarkDeriveStorage6544: the shape of the PEPA Eclipse Plug-in's
// ws-6-5-4-4 (testmodels.Storage: 17 components, none aggregated,
// 1,369,728 states and 16,487,936 transitions among 39.7M packed ones),
// derived as 'pepa states' derives it: within the memory budget detected
// on this machine, the runtime's soft limit set from it, and the state
// limit it implies (cmd/pepa's statesFor, 160 bytes a state). Without the
// budget a derivation skips what the budget costs (the trimming of
// reservations took a third of this one's time).
func BenchmarkDeriveStorage6544(b *testing.B) {
	budget := membudget.Detect()
	defer budget.SetRuntimeLimit()()
	maxStates := int(min(budget.Limit/160, 1<<31-2))
	benchDeriveWithin(b, membudget.NewContext(context.Background(), budget), maxStates, testmodels.Storage(6, 5, 4, 4), 1369728, Derive)
}

// processTime is the processor time used by the process so far.
func processTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
