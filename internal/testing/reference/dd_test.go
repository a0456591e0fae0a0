package reference

import (
	"math"
	"math/big"
	"math/rand"
	"testing"
)

const bigPrec = 400

func ddBig(a dd) *big.Float {
	x := new(big.Float).SetPrec(bigPrec).SetFloat64(a.hi)
	return x.Add(x, new(big.Float).SetPrec(bigPrec).SetFloat64(a.lo))
}

func bigDD(x *big.Float) dd {
	hi, _ := x.Float64()
	r := new(big.Float).SetPrec(bigPrec).Sub(x, new(big.Float).SetFloat64(hi))
	lo, _ := r.Float64()
	return dd{hi, lo}
}

func bigString(s string) *big.Float {
	x, ok := new(big.Float).SetPrec(bigPrec).SetString(s)
	if !ok {
		panic(s)
	}
	return x
}

// relBig is |got - want| / |want| in units of u^2 = 2^-106.
func relBig(got dd, want *big.Float) float64 {
	d := new(big.Float).SetPrec(bigPrec).Sub(ddBig(got), want)
	if want.Sign() != 0 {
		d.Quo(d, want)
	}
	f, _ := d.Float64()
	return math.Abs(f) / u2
}

// The double-double operations against 400-bit math/big on random
// operands of mixed signs and magnitudes: each within its published bound
// (dd.go) in units of u^2, and the error-free transformations exact.
func TestDDArithmetic(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	random := func() dd {
		hi := (rng.Float64()*2 - 1) * math.Ldexp(1, rng.Intn(60)-30)
		lo := hi * (rng.Float64() - 0.5) * 0x1p-53
		return fastTwoSumDD(hi, lo)
	}
	worst := map[string]float64{}
	check := func(name string, got dd, want *big.Float, bound float64) {
		t.Helper()
		e := relBig(got, want)
		worst[name] = math.Max(worst[name], e)
		if !(e <= bound) {
			t.Fatalf("%s: error %.3g u^2, bound %g", name, e, bound)
		}
		if got.hi != got.hi+got.lo {
			t.Fatalf("%s: not normalised: %v", name, got)
		}
	}
	for i := 0; i < 20000; i++ {
		a, b := random(), random()
		f := random().hi
		if i%7 == 0 { // near cancellation
			b = ddNeg(ddMulF(a, 1+(rng.Float64()-0.5)*1e-10))
		}
		s, e := twoSum(a.hi, b.hi)
		if relBig(dd{s, e}, new(big.Float).SetPrec(bigPrec).Add(ddBig(ddOf(a.hi)), ddBig(ddOf(b.hi)))) != 0 {
			t.Fatalf("twoSum(%g, %g) not exact", a.hi, b.hi)
		}
		p, pe := twoProd(a.hi, f)
		if relBig(dd{p, pe}, new(big.Float).SetPrec(bigPrec).Mul(ddBig(ddOf(a.hi)), ddBig(ddOf(f)))) != 0 {
			t.Fatalf("twoProd(%g, %g) not exact", a.hi, f)
		}
		ba, bb := ddBig(a), ddBig(b)
		check("add", ddAdd(a, b), new(big.Float).SetPrec(bigPrec).Add(ba, bb), 3.01)
		check("mul", ddMul(a, b), new(big.Float).SetPrec(bigPrec).Mul(ba, bb), 4.01)
		check("mulF", ddMulF(a, f), new(big.Float).SetPrec(bigPrec).Mul(ba, ddBig(ddOf(f))), 2.01)
		check("div", ddDiv(a, b), new(big.Float).SetPrec(bigPrec).Quo(ba, bb), 10)
	}
	t.Logf("largest errors (units of u^2): %v", worst)

	// e, e^-1, 2 = e^ln2, and e^x e^-x = 1.
	e := bigString("2.71828182845904523536028747135266249775724709369995957496696762772407663")
	if r := relBig(ddExp(ddOf(1)), e); r > 500 {
		t.Errorf("exp(1): error %.3g u^2", r)
	}
	if r := relBig(ddExp(ddOf(-1)), new(big.Float).SetPrec(bigPrec).Quo(bigString("1"), e)); r > 500 {
		t.Errorf("exp(-1): error %.3g u^2", r)
	}
	ln2 := bigDD(bigString("0.693147180559945309417232121458176568075500134360255254120680009493393622"))
	if r := relBig(ddExp(ln2), bigString("2")); r > 500 {
		t.Errorf("exp(ln 2): error %.3g u^2", r)
	}
	for _, x := range []float64{1e-9, 0.3, 0.5, 7.25, 100, 600} {
		if r := relBig(ddMul(ddExp(ddOf(x)), ddExp(ddOf(-x))), bigString("1")); r > 1e6 {
			t.Errorf("exp(%g) exp(-%g): error %.3g u^2", x, x, r)
		}
	}
	if ddExp(ddOf(-800)).hi != 0 || !math.IsInf(ddExp(ddOf(800)).hi, 1) {
		t.Error("exp out of range")
	}
}
