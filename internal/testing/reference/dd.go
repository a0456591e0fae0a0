package reference

import "math"

// dd is a double-double number: the unevaluated sum hi + lo of two
// float64, normalised so that hi = fl(hi + lo). It carries about 106
// significant bits. The operations below are the classical error-free
// transformations (Knuth's two-sum, Dekker's fast two-sum, the two-product
// by a fused multiply-add) and the double-word algorithms analysed by
// Joldes, Muller and Popescu ("Tight and rigorous error bounds for basic
// building blocks of double-word arithmetic", ACM TOMS 44, 2017), with
// their relative error bounds in units of u^2, u = 2^-53:
//
//	ddAdd   (AccurateDWPlusDW)   3u^2
//	ddMulF  (DWTimesFP3)         2u^2
//	ddMul   (DWTimesDW3)         4u^2
//	ddDiv   (three-quotient long division, as in the QD library) about 10u^2
//
// Only what the double-double transient (transientdd.go) and the closed
// forms of the tests need is here. The operations rely on float64
// arithmetic being rounded to nearest and on math.FMA being exact before
// its one rounding; Go does not fuse the additions of two-sum.
type dd struct{ hi, lo float64 }

// twoSum is s = fl(a+b) and the exact error e = a + b - s.
func twoSum(a, b float64) (s, e float64) {
	s = a + b
	bb := s - a
	e = (a - (s - bb)) + (b - bb)
	return
}

// fastTwoSum is twoSum for |a| >= |b| (or a = 0).
func fastTwoSum(a, b float64) (s, e float64) {
	s = a + b
	e = b - (s - a)
	return
}

// twoProd is p = fl(a*b) and the exact error e = a*b - p.
func twoProd(a, b float64) (p, e float64) {
	p = a * b
	e = math.FMA(a, b, -p)
	return
}

func ddOf(x float64) dd { return dd{x, 0} }

// float is the nearest float64 (hi, as the number is normalised).
func (a dd) float() float64 { return a.hi + a.lo }

func ddNeg(a dd) dd { return dd{-a.hi, -a.lo} }

func ddAdd(a, b dd) dd {
	s, e := twoSum(a.hi, b.hi)
	t, f := twoSum(a.lo, b.lo)
	e += t
	s, e = fastTwoSum(s, e)
	e += f
	return fastTwoSumDD(s, e)
}

func fastTwoSumDD(a, b float64) dd {
	s, e := fastTwoSum(a, b)
	return dd{s, e}
}

func ddSub(a, b dd) dd { return ddAdd(a, ddNeg(b)) }

// ddMulF is a * b for a float64 b.
func ddMulF(a dd, b float64) dd {
	p, e := twoProd(a.hi, b)
	e = math.FMA(a.lo, b, e)
	return fastTwoSumDD(p, e)
}

func ddMul(a, b dd) dd {
	p, e := twoProd(a.hi, b.hi)
	t := a.lo * b.lo
	t = math.FMA(a.hi, b.lo, t)
	t = math.FMA(a.lo, b.hi, t)
	return fastTwoSumDD(p, e+t)
}

func ddDiv(a, b dd) dd {
	q1 := a.hi / b.hi
	r := ddSub(a, ddMulF(b, q1))
	q2 := r.hi / b.hi
	r = ddSub(r, ddMulF(b, q2))
	q3 := r.hi / b.hi
	return ddAdd(fastTwoSumDD(q1, q2), ddOf(q3))
}

// ddExp is e^x, by e^x = (e^(x/2^s))^(2^s) with |x/2^s| <= 2^-10 and the
// Taylor series of the reduced argument summed to 1e-36. The s squarings
// (s <= 20 for |x| <= 746) multiply the relative error of about 10u^2 by
// 2^s: below 1e-25 relative, far beyond float64 (measured: 72u^2 at
// x = 1), as long as the result's low part is not subnormal (results
// above 1e-290). Below -746 the result is 0, above 709.8 +Inf.
func ddExp(x dd) dd {
	switch {
	case math.IsNaN(x.hi):
		return dd{math.NaN(), 0}
	case x.hi < -746:
		return dd{}
	case x.hi > 709.8:
		return dd{math.Inf(1), 0}
	}
	s := 0
	for math.Abs(x.hi) > 0x1p-10 {
		x = dd{x.hi / 2, x.lo / 2} // exact
		s++
	}
	sum, term := ddOf(1), ddOf(1)
	for j := 1; j < 30; j++ {
		term = ddDiv(ddMul(term, x), ddOf(float64(j)))
		sum = ddAdd(sum, term)
		if math.Abs(term.hi) < 1e-36 {
			break
		}
	}
	for ; s > 0; s-- {
		sum = ddMul(sum, sum)
	}
	return sum
}
