package testmodels

import (
	"fmt"
	"math"
	"strings"
)

// Hypoexponential writes a chain of exponential phases P0, P1, ... with the
// given rates (actions a0, a1, ...) ending in P<n>, which only loops
// (stay): the passage from P0 to the firing of the last phase's action is
// hypoexponential, its closed forms HypoexponentialCDF and ...PDF.
func Hypoexponential(rates []float64) string {
	var b strings.Builder
	for i, r := range rates {
		fmt.Fprintf(&b, "P%d = (a%d, %g).P%d;\n", i, i, r, i+1)
	}
	fmt.Fprintf(&b, "P%d = (stay, 1).P%d;\nP0\n", len(rates), len(rates))
	return b.String()
}

// HypoexponentialCDF is P(sum of exponential phases <= t) for distinct
// rates: 1 - sum_i c_i e^{-l_i t}, c_i = prod_{j != i} l_j / (l_j - l_i).
func HypoexponentialCDF(rates []float64, t float64) float64 {
	f := 1.0
	for i, li := range rates {
		f -= hypoWeight(rates, i) * math.Exp(-li*t)
	}
	return f
}

// HypoexponentialPDF is the density: sum_i c_i l_i e^{-l_i t}.
func HypoexponentialPDF(rates []float64, t float64) float64 {
	f := 0.0
	for i, li := range rates {
		f += hypoWeight(rates, i) * li * math.Exp(-li*t)
	}
	return f
}

func hypoWeight(rates []float64, i int) float64 {
	c := 1.0
	for j, lj := range rates {
		if j != i {
			c *= lj / (lj - rates[i])
		}
	}
	return c
}
