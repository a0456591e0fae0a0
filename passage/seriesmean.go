package passage

import (
	"fmt"
	"math"

	"pepa/ctmc"
)

// Means from the series. With K the number of jumps of the uniformized
// chain before the passage ends, T is the sum of K exponential holding
// times of rate q, so E[T] = E[K]/q = (1/q) sum_{k>=0} P(K > k), and
// P(K > k) = R_k, the start's mass minus a_k, the mass absorbed after k
// jumps (when no mass can be lost to states that cannot reach the target;
// Result.MayNeverEnd says when it can, and the mean is then infinite).
// Likewise integral_T^inf (1 - F(t)) dt = (1/q) sum_k R_k P(N(qT) <= k),
// N(qT) Poisson, because P(T > t) = sum_k Poisson(k; qt) R_k and
// integral_T^inf Poisson(k; qt) dt = P(N(qT) <= k)/q.
//
// A complete series stops at step N with R_N <= Epsilon/2; beyond it R_k
// decays geometrically, at the rate of the slowest way the chain leaves
// its live states, estimated from the last tenth of the series. The sum
// beyond N is estimated as R_N rho/(1 - rho): with R_N at most 5e-11 (the
// default epsilon) it is a relative 1e-10 or less of the mean unless the
// decay is extremely slow, which the estimate then shows.

// SeriesMean is the mean passage time from the series, and an estimate of
// the part of it beyond the computed steps (included in the mean). The
// result must be Complete. It is +Inf when the passage may never end.
func (r *Result) SeriesMean() (mean, tail float64, err error) {
	return r.seriesIntegral(nil)
}

// SeriesTail is integral_T^inf (1 - F(t)) dt, the expected time the
// passage runs past T, from the series, with the same tail estimate.
func (r *Result) SeriesTail(T float64) (float64, error) {
	if T <= 0 {
		m, _, err := r.SeriesMean()
		return m, err
	}
	w, err := FoxGlynn(r.Q*T, r.Epsilon/2)
	if err != nil {
		return 0, err
	}
	v, _, err := r.seriesIntegral(w)
	return v, err
}

// seriesIntegral is (1/q) sum_k R_k c_k with c_k = 1 (w nil) or the
// Poisson distribution function of w at k, and the estimate of the part
// beyond the series (taking c_k = 1 there).
func (r *Result) seriesIntegral(w *PoissonWeights) (float64, float64, error) {
	if !r.Complete {
		return 0, 0, fmt.Errorf("the mean needs the complete passage distribution")
	}
	if r.dense != nil || len(r.Absorbed) == 0 {
		return 0, 0, fmt.Errorf("the passage was solved by a dense matrix exponential, without a series")
	}
	if r.backward {
		return 0, 0, fmt.Errorf("the passage was solved by backward iteration up to a horizon, which gives no mean")
	}
	if r.MayNeverEnd {
		return math.Inf(1), 0, nil
	}
	N := len(r.Absorbed) - 1
	rest := func(k int) float64 { return math.Max(0, r.total-r.Absorbed[k]) }
	sum, cum := 0.0, 0.0
	for k := 0; k <= N; k++ {
		c := 1.0
		if w != nil {
			if i := k - w.Left; i >= 0 && i < len(w.W) {
				cum += w.W[i]
			}
			c = math.Min(1, cum)
			if k > w.Right() {
				c = 1
			}
		}
		sum += rest(k) * c
	}
	tail := 0.0
	if rN := rest(N); rN > 0 && N > 0 {
		back := max(1, N/10)
		rho := math.Pow(rN/rest(N-back), 1/float64(back))
		if !(rho < 1) {
			return 0, 0, fmt.Errorf("the passage's unabsorbed mass stopped decreasing at step %d, so the series gives no mean", N)
		}
		tail = rN * rho / (1 - rho)
	}
	return (sum + tail) / r.Q, tail / r.Q, nil
}

// StepsToComplete predicts how many more steps the series needs until
// the mass that can still be absorbed is below Epsilon/2, from the
// geometric decay of the unabsorbed mass over the last tenth of the steps
// (as SeriesMean estimates its tail); ok is false when there is no decay
// to extrapolate (fewer than 2 steps, or none over the last tenth) or the
// passage may never end (the unabsorbed mass then includes mass that is
// never absorbed).
func (r *Result) StepsToComplete() (more int, ok bool) {
	if r.Complete {
		return 0, true
	}
	N := len(r.Absorbed) - 1
	if r.MayNeverEnd || r.dense != nil || N < 2 {
		return 0, false
	}
	rest := func(k int) float64 { return r.total - r.Absorbed[k] }
	back := max(1, N/10)
	rN := rest(N)
	rho := math.Pow(rN/rest(N-back), 1/float64(back))
	if !(rN > 0 && rho > 0 && rho < 1) {
		return 0, false
	}
	steps := math.Ceil(math.Log(r.Epsilon/2/rN) / math.Log(rho))
	if !(steps < 1<<30) {
		return 0, false
	}
	return max(1, int(steps)), true
}

// worthRunningOn reports whether the series is predicted to be complete
// within extra more steps (Options.ExtraSteps).
func (r *Result) worthRunningOn(extra int) bool {
	more, ok := r.StepsToComplete()
	return ok && more <= extra
}

// mayNeverEnd reports whether passage p's start reaches, through
// transitions that do not end it, a state outside its target that is not
// live (cannot reach the target).
// seen is a cleared buffer of N flags.
func (k *kernel) mayNeverEnd(c *ctmc.Chain, pr Problem, p int, seen []bool) bool {
	mask := targetMask([]Problem{pr})
	inTarget := func(j int32) bool { return k.zero != nil && hasLane(k.zero, k.groups, k.at(int(j)), p) }
	var stack []int32
	for i, x := range pr.Alpha {
		if x > 0 && !inTarget(int32(i)) {
			seen[i] = true
			stack = append(stack, int32(i))
		}
	}
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if !k.isLive(k.at(int(i)), p) {
			return true
		}
		for e := c.RowPtr[i]; e < c.RowPtr[i+1]; e++ {
			j := c.Col[e]
			if mask.of(c.Act[e]) != 0 || inTarget(j) || seen[j] {
				continue
			}
			seen[j] = true
			stack = append(stack, j)
		}
	}
	return false
}
