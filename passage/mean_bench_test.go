package passage

import (
	"context"
	"testing"

	"pepa/internal/testing/testmodels"
)

// BenchmarkMeans20x5: every machine's mean on the 16,807-state product
// chain of 20 applications on 5 machines.
func BenchmarkMeans20x5(b *testing.B) {
	c := benchChain(b, 20, 5)
	var probs []Problem
	for _, acts := range testmodels.LastActions(20, 5) {
		probs = append(probs, InitialProblem(c, actions(b, c, acts...)))
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, pr := range probs {
			if _, _, err := MeanTimes(context.Background(), c, pr); err != nil {
				b.Fatal(err)
			}
		}
	}
}
