package coverage

import (
	"fmt"
	"math"
	"os"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

// Interval is a confidence interval around an estimate.
type Interval interface {
	Contains(x float64) bool
	Bounds() (value, lo, hi float64)
}

// Checker counts how often exact values fall outside intervals at a
// nominal level. The intervals are at least nominally 95% (Clopper-Pearson
// is conservative; Wilson, Student t and batch means are approximate), so
// the misses are at most Binomial(checks, 0.05) but for the approximation;
// verify fails when they exceed that distribution's 1-1e-4 quantile, a
// bound that follows from the intervals' level, not from this code's
// earlier output.
//
// Intervals far wider than their level needs would pass that test, so
// there are two more. With floor set, the misses among the checks whose
// exact value is not extreme (strictly inside (0.02, 0.98) for
// probabilities, every check for means) must be at least what a miss rate
// of floor gives with probability 1 - 1e-4: an approximate 95% interval
// misses 3 to 6% of the time, a conservative one (Clopper-Pearson) 3 to 5%
// away from 0 and 1, so floor is 0.02 (far below either, and far above
// the rate of intervals twice too wide, under 0.01%). And checkWidth bounds
// each binomial interval's width by what Wilson's gives at the exact
// probability.
type Checker struct {
	// Level is the intervals' nominal level.
	Level float64
	// Floor is the least miss rate on the counted checks (0: none), and
	// Probabilities says the values are probabilities: only those in
	// (0.02, 0.98) are counted for it.
	Floor         float64
	Probabilities bool

	checks, misses int
	worst          string
	counted        int
	countedMisses  int
	wide           int // intervals wider than checkWidth allows
	widest         string
}

func (c *Checker) Check(iv Interval, exact float64, what string) {
	c.checks++
	counted := !c.Probabilities || exact > 0.02 && exact < 0.98
	if counted {
		c.counted++
	}
	_, lo, hi := iv.Bounds()
	if !iv.Contains(exact) {
		c.misses++
		if counted {
			c.countedMisses++
		}
		if os.Getenv("SIMDEBUG") != "" {
			fmt.Printf("miss %s: exact %.6g outside [%.6g, %.6g]\n", what, exact, lo, hi)
		}
		if c.worst == "" {
			c.worst = fmt.Sprintf("%s: exact %.6g outside [%.6g, %.6g]", what, exact, lo, hi)
		}
	}
}

// checkWidth: a binomial interval from n trials at the coverage's level is
// at most 1.3 times as wide as Wilson's interval at the exact probability
// p or at the estimate, whichever is wider, plus 2/n (Clopper-Pearson is a
// little wider than Wilson).
func (c *Checker) CheckWidth(iv Interval, p float64, n int, what string) {
	z := distuv.UnitNormal.Quantile(1 - (1-c.Level)/2)
	fn := float64(n)
	at := func(p float64) float64 { return 2 * z * math.Sqrt(p*(1-p)/fn+z*z/(4*fn*fn)) / (1 + z*z/fn) }
	value, lo, hi := iv.Bounds()
	wilson := math.Max(at(p), at(value))
	if w := hi - lo; w > 1.3*wilson+2/fn {
		c.wide++
		if c.widest == "" {
			c.widest = fmt.Sprintf("%s: [%.6g, %.6g] is %.3g wide, Wilson's at the exact %.6g with %d trials %.3g", what, lo, hi, w, p, n, wilson)
		}
	}
}

func (c *Checker) Verify(t *testing.T) {
	t.Helper()
	b := distuv.Binomial{N: float64(c.checks), P: 1 - c.Level}
	limit := 0
	for b.CDF(float64(limit)) < 1-1e-4 {
		limit++
	}
	least := 0
	if c.Floor > 0 {
		lb := distuv.Binomial{N: float64(c.counted), P: c.Floor}
		for lb.CDF(float64(least)) <= 1e-4 {
			least++
		}
	}
	t.Logf("%d of %d exact values outside their %g intervals (limit %d); %d of the %d counted for the floor (at least %d); %d too wide",
		c.misses, c.checks, c.Level, limit, c.countedMisses, c.counted, least, c.wide)
	if c.misses > limit {
		t.Fatalf("%d of %d exact values outside their intervals, more than %d; first: %s", c.misses, c.checks, limit, c.worst)
	}
	if c.countedMisses < least {
		t.Fatalf("%d of %d counted exact values outside their intervals, fewer than %d: the intervals are wider than their level", c.countedMisses, c.counted, least)
	}
	if c.wide > 0 {
		t.Fatalf("%d intervals too wide; first: %s", c.wide, c.widest)
	}
	if c.checks < 20 {
		t.Fatalf("only %d checks", c.checks)
	}
}
