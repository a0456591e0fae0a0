package steady

import (
	"testing"

	"pepa/internal/testing/testchain"
	"pepa/internal/testing/testmodels"
)

// BenchmarkSweep times the first 20 Gauss-Seidel sweeps from the uniform
// vector (later ones change nothing once converged, and push nothing) over
// a mapping chain of 100,842 states (24 applications on 6 machines), in
// one block and in two.
func BenchmarkSweep(b *testing.B) {
	c := testchain.Chain(b, testmodels.Mapping(24, 6, 1))
	const sweeps = 20
	for _, bc := range []struct {
		name string
		two  bool
	}{{"one-block", false}, {"two-blocks", true}} {
		b.Run(bc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				s := newSweeper(c, nil, bc.two)
				b.StartTimer()
				for k := 0; k < sweeps; k++ {
					if _, err := s.sweep(); err != nil {
						b.Fatal(err)
					}
					s.rescale()
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*sweeps*len(c.Col)), "ns/transition")
		})
	}
}
