package simulate

import (
	"math"
	"math/bits"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// Interval is an estimate with a confidence interval [Lo, Hi].
type Interval struct {
	Value, Lo, Hi float64
}

// HalfWidth is the larger distance from the estimate to an end.
func (iv Interval) HalfWidth() float64 {
	return math.Max(iv.Value-iv.Lo, iv.Hi-iv.Value)
}

// Contains reports whether x lies in the closed interval.
func (iv Interval) Contains(x float64) bool { return x >= iv.Lo && x <= iv.Hi }

// Bounds returns the estimate and the interval's ends.
func (iv Interval) Bounds() (value, lo, hi float64) { return iv.Value, iv.Lo, iv.Hi }

// ClopperPearson is the exact (conservative) binomial interval for k
// successes in n trials: its ends are Beta quantiles.
func ClopperPearson(k, n int, confidence float64) Interval {
	if n == 0 {
		return Interval{math.NaN(), 0, 1}
	}
	a := 1 - confidence
	iv := Interval{Value: float64(k) / float64(n), Lo: 0, Hi: 1}
	if k > 0 {
		iv.Lo = distuv.Beta{Alpha: float64(k), Beta: float64(n - k + 1)}.Quantile(a / 2)
	}
	if k < n {
		iv.Hi = distuv.Beta{Alpha: float64(k + 1), Beta: float64(n - k)}.Quantile(1 - a/2)
	}
	return iv
}

// Wilson is the Wilson score interval for k successes in n trials.
func Wilson(k, n int, confidence float64) Interval {
	if n == 0 {
		return Interval{math.NaN(), 0, 1}
	}
	z := distuv.UnitNormal.Quantile(1 - (1-confidence)/2)
	nf := float64(n)
	p := float64(k) / nf
	den := 1 + z*z/nf
	c := (p + z*z/(2*nf)) / den
	h := z / den * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf))
	return Interval{Value: p, Lo: math.Max(0, c-h), Hi: math.Min(1, c+h)}
}

// DKW is the half-width of the Dvoretzky-Kiefer-Wolfowitz band: with
// probability at least confidence the empirical CDF of n samples is within
// it of the true CDF at every t at once (Massart's constant).
func DKW(n int, confidence float64) float64 {
	if n == 0 {
		return 1
	}
	return math.Sqrt(math.Log(2/(1-confidence)) / (2 * float64(n)))
}

// MeanInterval is the sample's mean with its Student t interval.
func MeanInterval(xs []float64, confidence float64) Interval {
	var m moments
	for _, x := range xs {
		m.add(x)
	}
	return m.interval(confidence)
}

// moments accumulates a sample's mean and variance (Welford).
type moments struct {
	n    int
	mean float64
	m2   float64
}

func (m *moments) add(x float64) {
	m.n++
	d := x - m.mean
	m.mean += d / float64(m.n)
	m.m2 += d * (x - m.mean)
}

// interval is the Student t interval for the mean.
func (m *moments) interval(confidence float64) Interval {
	if m.n < 2 {
		return Interval{m.mean, math.Inf(-1), math.Inf(1)}
	}
	sd := math.Sqrt(m.m2 / float64(m.n-1))
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(m.n - 1)}.Quantile(1 - (1-confidence)/2)
	h := t * sd / math.Sqrt(float64(m.n))
	return Interval{m.mean, m.mean - h, m.mean + h}
}

// quantileInterval is a sample quantile with the distribution-free
// interval between two order statistics (normal approximation to the
// binomial count of samples below the quantile). +Inf entries (never
// finished) are allowed. samples is reordered in place: only the three
// order statistics are selected (linear time), since sorting millions of
// a budgeted run's samples took longer than a budget's margin.
func quantileInterval(samples []float64, p, confidence float64) Interval {
	n := len(samples)
	if n == 0 {
		return Interval{math.NaN(), math.NaN(), math.NaN()}
	}
	z := distuv.UnitNormal.Quantile(1 - (1-confidence)/2)
	np := float64(n) * p
	h := z * math.Sqrt(np*(1-p))
	ks := [3]int{int(math.Floor(np-h)) - 1, int(math.Ceil(np)) - 1, int(math.Ceil(np + h))}
	var v [3]float64
	lo := 0 // samples[:lo] are at most every order statistic still to select
	for i, k := range ks {
		switch {
		case k < 0:
			v[i] = 0
		case k >= n:
			v[i] = math.Inf(1)
		default:
			if k >= lo {
				selectKth(samples[lo:], k-lo)
				lo = k
			}
			v[i] = samples[k]
		}
	}
	return Interval{Value: v[1], Lo: v[0], Hi: v[2]}
}

// selectKth reorders x so that x[k] is its k-th smallest element (from 0),
// with x[:k] <= x[k] <= x[k+1:]: Hoare's selection with a median-of-three
// pivot, finished by a sort when the ranges stop shrinking (so the worst
// case is O(n log n), the usual O(n)). NaN is not allowed.
func selectKth(x []float64, k int) {
	lo, hi := 0, len(x)-1
	for depth := 2 * bits.Len(uint(len(x))); hi-lo > 16; depth-- {
		if depth == 0 {
			slices.Sort(x[lo : hi+1])
			return
		}
		mid := lo + (hi-lo)/2
		if x[mid] < x[lo] {
			x[mid], x[lo] = x[lo], x[mid]
		}
		if x[hi] < x[lo] {
			x[hi], x[lo] = x[lo], x[hi]
		}
		if x[hi] < x[mid] {
			x[hi], x[mid] = x[mid], x[hi]
		}
		pivot := x[mid]
		i, j := lo, hi
		for i <= j {
			for x[i] < pivot {
				i++
			}
			for x[j] > pivot {
				j--
			}
			if i <= j {
				x[i], x[j] = x[j], x[i]
				i++
				j--
			}
		}
		// x[lo:j+1] <= pivot <= x[i:hi+1], and x[j+1:i] == pivot.
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return
		}
	}
	slices.Sort(x[lo : hi+1])
}
