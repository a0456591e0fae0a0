package simulate

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestQuantileBySelection checks the selected order statistics against a
// full sort (the definition) on samples with ties, +Inf (never finished),
// sorted and reversed runs and sizes around the selection's cut-over to a
// sort.
func TestQuantileBySelection(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	for trial := 0; trial < 2000; trial++ {
		n := 1 + rng.IntN(200)
		if trial%50 == 0 {
			n = 10000 + rng.IntN(5000)
		}
		x := make([]float64, n)
		for i := range x {
			switch rng.IntN(6) {
			case 0:
				x[i] = math.Inf(1)
			case 1:
				x[i] = float64(rng.IntN(4)) // ties
			default:
				x[i] = rng.ExpFloat64()
			}
		}
		switch trial % 3 {
		case 1:
			slices.Sort(x)
		case 2:
			slices.Sort(x)
			slices.Reverse(x)
		}
		p := []float64{0.5, 0.9, 0.99, 0.999, 0.01}[trial%5]
		sorted := slices.Clone(x)
		slices.Sort(sorted)
		want := sortedQuantileInterval(sorted, p, 0.95)
		got := quantileInterval(x, p, 0.95)
		if got != want && !(math.IsNaN(got.Value) && math.IsNaN(want.Value)) {
			t.Fatalf("trial %d (n %d, p %g): %+v by selection, %+v by sorting", trial, n, p, got, want)
		}
		// A reordering only: the same multiset.
		slices.Sort(x)
		if !slices.Equal(x, sorted) {
			t.Fatalf("trial %d: selection changed the samples", trial)
		}
	}
}

// sortedQuantileInterval is quantileInterval's definition on sorted
// samples: the order statistics read off directly.
func sortedQuantileInterval(sorted []float64, p, confidence float64) Interval {
	n := len(sorted)
	if n == 0 {
		return Interval{math.NaN(), math.NaN(), math.NaN()}
	}
	at := func(i int) float64 {
		switch {
		case i < 0:
			return 0
		case i >= n:
			return math.Inf(1)
		}
		return sorted[i]
	}
	z := 1.959963984540054 // the 0.975 normal quantile
	np := float64(n) * p
	h := z * math.Sqrt(np*(1-p))
	return Interval{Value: at(int(math.Ceil(np)) - 1), Lo: at(int(math.Floor(np-h)) - 1), Hi: at(int(math.Ceil(np + h)))}
}

func BenchmarkQuantileInterval(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	x := make([]float64, 1<<21)
	for i := range x {
		x[i] = rng.ExpFloat64()
	}
	y := make([]float64, len(x))
	b.ResetTimer()
	for b.Loop() {
		copy(y, x)
		quantileInterval(y, 0.99, 0.95)
	}
}
