package steady

import (
	"context"
	"os"
	"testing"

	"pepa/ctmc"
	"pepa/internal/testing/testchain"
	"pepa/internal/testing/testmodels"
)

// benchSteady solves c b.N times with opt and reports the iterations and
// the largest estimated throughput error of the last solve.
func benchSteady(b *testing.B, c *ctmc.Chain, opt Options) {
	b.Helper()
	var res *Result
	var err error
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if res, err = Solve(context.Background(), c, opt); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(c.N), "states")
	b.ReportMetric(float64(res.Iterations), "iterations")
	// In units of 1e-15: ReportMetric prints too few digits for the
	// error itself.
	b.ReportMetric(res.MaxThroughputError*1e15, "max-rel-err-e-15")
}

// BenchmarkSteadyMethods compares the two methods on mapping chains of
// growing size, to place DefaultDirectLimit.
func BenchmarkSteadyMethods(b *testing.B) {
	for _, size := range []struct {
		name           string
		apps, machines int
	}{{"625", 12, 4}, {"2401", 16, 4}, {"3125", 15, 5}} {
		c := testchain.Chain(b, testmodels.Mapping(size.apps, size.machines, 1))
		for _, method := range []string{MethodDirect, MethodIterative} {
			b.Run(size.name+"/"+method, func(b *testing.B) { benchSteady(b, c, Options{Method: method}) })
		}
	}
}

// BenchmarkSteadyICCS: the published ICCS 2020 mapping A model (10,395
// states), skipped when the file is absent (it is not the project's to
// commit), and a model of the same shape
// from testmodels (16,807 states).
func BenchmarkSteadyICCS(b *testing.B) {
	// The shared examples sit beside the repository (see ctmc/count_test.go).
	const file = "../../../shared/examples/iccs2020-mapping-a.pepa"
	b.Run("iccs2020-mapping-a", func(b *testing.B) {
		src, err := os.ReadFile(file)
		if err != nil {
			b.Skip(err)
		}
		benchSteady(b, testchain.Chain(b, string(src)), Options{})
	})
	b.Run("Mapping20x5", func(b *testing.B) {
		benchSteady(b, testchain.Chain(b, testmodels.Mapping(20, 5, 1)), Options{})
	})
}

// BenchmarkSteady1M: Mapping(28, 7, 1), 823,543 states.
func BenchmarkSteady1M(b *testing.B) {
	c := testchain.Chain(b, testmodels.Mapping(28, 7, 1))
	benchSteady(b, c, Options{})
}
