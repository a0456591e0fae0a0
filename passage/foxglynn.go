package passage

import (
	"fmt"
	"math"
)

// PoissonWeights are the Poisson(lambda) probabilities of k = Left ..
// Left+len(W)-1, computed in the spirit of Fox and Glynn (1988): start at
// the mode with weight 1, run the ratio recurrences outward (no factorial,
// no exponential of a large number, so nothing overflows or underflows for
// lambda up to 1e9 and beyond), stop on each side as soon as a geometric
// bound on the rest of the tail falls below epsilon/2, and normalise by the
// computed sum.
//
// Accuracy: the Poisson mass outside [Left, Right] is at most epsilon, and
// each weight is within a relative epsilon (plus rounding) of the true
// probability, so for any sequence a_k in [0, 1],
// |sum_k W[k] a_{Left+k} - sum_k Poisson(k) a_k| <= epsilon + O(1e-16 * len).
type PoissonWeights struct {
	Lambda float64 // the rate they were computed for
	Left   int
	W      []float64
	Total  float64 // sum of the unnormalised weights (the mode's weight is 1)
}

// Right is the last k with a weight.
func (p *PoissonWeights) Right() int { return p.Left + len(p.W) - 1 }

// maxPoissonTerms bounds the weights kept (lambda up to about 1e12).
const maxPoissonTerms = 1 << 26

// maxPoissonLambda is the largest rate FoxGlynn takes: past it the weights
// would need more than maxPoissonTerms terms anyway (about 14 sqrt(lambda)
// for the smallest epsilon), and the mode would not fit an int exactly.
const maxPoissonLambda = 1e13

// PoissonRight is the right truncation point FoxGlynn(lambda, epsilon)
// would give, without keeping the weights; for lambda past what FoxGlynn
// takes it returns a lower bound (the mode), already larger than any
// series this package runs (MaxSeriesValues); +Inf (an overflowed q*t)
// gives such a bound too.
func PoissonRight(lambda, epsilon float64) (int, error) {
	if !(lambda >= 0) {
		return 0, fmt.Errorf("poisson weights: rate %g is not a non-negative number", lambda)
	}
	if !(epsilon > 0 && epsilon < 1) {
		return 0, fmt.Errorf("poisson weights: epsilon %g must be in (0, 1)", epsilon)
	}
	if lambda == 0 {
		return 0, nil
	}
	if lambda > maxPoissonLambda { // +Inf included: q*t overflowed
		return int(min(lambda, 1<<62)), nil
	}
	mode := int(math.Floor(lambda))
	half := epsilon / 2
	// FoxGlynn's right walk, which runs first and sees only its own sum.
	rsum, w := 1.0, 1.0
	k := mode
	for ; ; k++ {
		r := lambda / float64(k+2)
		if r < 1 && w*(lambda/float64(k+1))/(1-r) <= half*rsum {
			break
		}
		w = w * lambda / float64(k+1)
		rsum += w
	}
	return k, nil
}

// FoxGlynn computes the Poisson weights for lambda >= 0 with tail mass at
// most epsilon in (0, 1).
func FoxGlynn(lambda, epsilon float64) (*PoissonWeights, error) {
	if !(lambda >= 0) || math.IsInf(lambda, 0) {
		return nil, fmt.Errorf("poisson weights: rate %g is not a finite non-negative number", lambda)
	}
	if !(epsilon > 0 && epsilon < 1) {
		return nil, fmt.Errorf("poisson weights: epsilon %g must be in (0, 1)", epsilon)
	}
	if lambda == 0 {
		return &PoissonWeights{Lambda: 0, Left: 0, W: []float64{1}, Total: 1}, nil
	}
	if lambda > maxPoissonLambda {
		// The count as a float: sqrt(lambda) past 2^63 would overflow an int.
		return nil, fmt.Errorf("poisson weights: rate %g is too large (more than %g: %.3g terms at least)", lambda, float64(maxPoissonLambda), math.Sqrt(lambda))
	}
	mode := int(math.Floor(lambda))
	half := epsilon / 2
	// Right side: w_{k+1} = w_k * lambda / (k+1), ratios decreasing in k,
	// so the tail beyond k is at most
	// w_k * (lambda/(k+1)) / (1 - lambda/(k+2)).
	right := []float64{1}
	sum := 1.0
	for k := mode; ; k++ {
		w := right[len(right)-1]
		r := lambda / float64(k+2)
		if r < 1 && w*(lambda/float64(k+1))/(1-r) <= half*sum {
			break
		}
		if len(right) > maxPoissonTerms {
			return nil, fmt.Errorf("poisson weights: rate %g needs too many terms", lambda)
		}
		next := w * lambda / float64(k+1)
		right = append(right, next)
		sum += next
	}
	// Left side: w_{k-1} = w_k * k / lambda, ratios decreasing as k falls,
	// so the tail below k is at most w_k * (k/lambda) / (1 - (k-1)/lambda).
	var left []float64 // left[i] is the weight of k = mode-1-i
	k := mode
	w := 1.0
	for k > 0 {
		r := float64(k-1) / lambda
		if r < 1 && w*(float64(k)/lambda)/(1-r) <= half*sum {
			break
		}
		if len(left) > maxPoissonTerms {
			return nil, fmt.Errorf("poisson weights: rate %g needs too many terms", lambda)
		}
		w = w * float64(k) / lambda
		k--
		left = append(left, w)
		sum += w
	}
	p := &PoissonWeights{Lambda: lambda, Left: k, Total: sum}
	p.W = make([]float64, 0, len(left)+len(right))
	for i := len(left) - 1; i >= 0; i-- {
		p.W = append(p.W, left[i]/sum)
	}
	for _, x := range right {
		p.W = append(p.W, x/sum)
	}
	return p, nil
}
