package etc

import (
	"math"
	"math/rand/v2"
)

// stream is a reproducible random stream (see the package invariants).
type stream struct{ src *rand.PCG }

// streamSalt separates this package's streams from the other users of a
// specification's seed.
const streamSalt = 0x45544347454e3031 // "ETCGEN01"

func newStream(seed uint64) *stream { return &stream{rand.NewPCG(seed, streamSalt)} }

// uniform is uniform on [0, 1): the top 53 bits of one output.
func (s *stream) uniform() float64 { return float64(s.src.Uint64()>>11) * 0x1p-53 }

// open is uniform on (0, 1): never 0, so its logarithm is finite.
func (s *stream) open() float64 { return (float64(s.src.Uint64()>>11) + 0.5) * 0x1p-53 }

// between is uniform on [lo, hi).
func (s *stream) between(lo, hi float64) float64 { return lo + float64((hi-lo)*s.uniform()) }

// intn is uniform on 0..n-1 (n > 0), by rejection: no modulo bias.
func (s *stream) intn(n int) int {
	bound := uint64(n)
	limit := -bound % bound // 2^64 mod n: the outputs below it are rejected
	for {
		if x := s.src.Uint64(); x >= limit {
			return int(x % bound)
		}
	}
}

// normal is a standard normal variate (Marsaglia's polar method).
func (s *stream) normal() float64 {
	for {
		u := float64(2*s.uniform()) - 1
		v := float64(2*s.uniform()) - 1
		q := float64(u*u) + float64(v*v)
		if q > 0 && q < 1 {
			return float64(u * math.Sqrt(float64(-2*logDet(q))/q))
		}
	}
}

// gamma is a Gamma(shape, scale) variate: Marsaglia and Tsang's method
// ("A simple method for generating gamma variables", ACM TOMS 26(3),
// 2000), with their boost G(a) = G(a+1) U^(1/a) for shape < 1.
func (s *stream) gamma(shape, scale float64) float64 {
	boost := 1.0
	if shape < 1 {
		boost = expDet(logDet(s.open()) / shape)
		shape++
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(float64(9*d))
	for {
		x := s.normal()
		v := 1 + float64(c*x)
		if v <= 0 {
			continue
		}
		v = float64(float64(v*v) * v)
		u := s.open()
		x2 := float64(x * x)
		if u < 1-float64(0.0331*float64(x2*x2)) ||
			logDet(u) < float64(0.5*x2)+float64(d*(1-v+logDet(v))) {
			return float64(float64(d*v)*boost) * scale
		}
	}
}

// ln2Hi + ln2Lo is log 2 to about 2^-106; ln2Hi has trailing zero bits, so
// k * ln2Hi is exact for |k| < 2^11.
const (
	ln2Hi = 6.93147180369123816490e-01
	ln2Lo = 1.90821492927058770002e-10
)

// logDet is the natural logarithm of a positive finite x, to within a few
// units in the last place, by the same operations on every machine:
// x = f 2^e with f in [sqrt(1/2), sqrt(2)), and log f = 2 atanh(s),
// s = (f-1)/(f+1), |s| < 0.172, summed as its series to 2^-60.
func logDet(x float64) float64 {
	f, e := math.Frexp(x) // f in [0.5, 1)
	if f < math.Sqrt2/2 {
		f *= 2
		e--
	}
	s := (f - 1) / (f + 1)
	s2 := float64(s * s)
	// sum_{k=0}^{11} s2^k / (2k+1), by Horner's rule.
	p := 1.0 / 23
	for k := 10; k >= 0; k-- {
		p = float64(p*s2) + 1/float64(2*k+1)
	}
	k := float64(e)
	return float64(k*ln2Hi) + (float64(k*ln2Lo) + float64(2*float64(s*p)))
}

// expDet is e^x for x <= 0 (what gamma needs), the same on every machine:
// x = k log 2 + r, |r| <= log(2)/2, e^r by its Taylor series to 2^-60.
func expDet(x float64) float64 {
	if x < -745.2 {
		return 0
	}
	k := math.Round(x / math.Ln2)
	r := (x - float64(k*ln2Hi)) - float64(k*ln2Lo)
	// sum_{n=0}^{17} r^n / n!, by Horner's rule.
	p := 1.0
	for n := 17; n >= 1; n-- {
		p = 1 + float64(float64(p*r)/float64(n))
	}
	return math.Ldexp(p, int(k))
}
