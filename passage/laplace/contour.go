package laplace

import (
	"math"
	"sync"
)

// A contour is the hyperbola z(u) = mu (1 + sin(iu - alpha)) with the
// trapezoidal nodes u_k = k h, k = -m..m, on which the Bromwich integral
//
//	f(t) = 1/(2 pi i) integral e^{zt} F(z) dz
//
// is summed for every t of a window [t0, Lambda t0] at once (Weideman and
// Trefethen, "Parabolic and hyperbolic contours for computing the Bromwich
// integral", Math. Comp. 76, 2007). The transforms here are those of
// probabilities (bounded by 1, analytic off the negative real axis: the
// generator's eigenvalues are real and not positive), so the error of the
// sum has three parts, each bounded in that paper's analysis: the
// discretisation error of the trapezoidal rule, about
// exp(mu t (1 - sin(alpha - d)) - 2 pi d / h) for the strip of half-width d
// around the contour where F is analytic, largest at the window's end; the
// truncation of the sum at |k| = m, about exp(mu t (1 - sin(alpha)
// cosh(m h))), largest at its start; and rounding, about u exp(mu t (1 -
// sin alpha)) (u the unit roundoff) times the size of F. The parameters
// minimise the largest of the three over the window (contourFor); the
// minimum is the contour's predicted error, which its tests check against
// closed forms (it overestimates: see TestContourAgainstClosedForms).
type contour struct {
	alpha, h, mu float64 // mu for the window's start t0
	m            int
	predicted    float64
	// coarse is the predicted discretisation error of the rule on every
	// other node (step 2h), at the window's end: the sums at h and 2h of
	// a transform the analysis fits differ by about that or less, so a
	// window whose two sums differ by more has a transform the analysis
	// does not fit (poles of high order near the contour) and is refined
	// (Engine.windowAt).
	coarse float64
}

// windowRatio is the factor in t a window spans. A window has 2m+1 nodes
// and costs m+1 solves (the transforms of real functions take conjugate
// values at conjugate nodes), m one of nodeCounts.
const windowRatio = 16

// contours are the windows' contours, fewest nodes first, for t0 = 1 (a
// window starting at t0 scales mu by 1/t0): optimalContour's results for
// m = 24, 32, 40 and 48, written out because the search takes most of a
// second (TestContoursTable checks them against it).
var contours = []contour{
	{alpha: 0.7853981633974483, h: 0.22083333333333333, mu: 0.25589268383167607, m: 24, predicted: 1.7355161302553198e-08, coarse: 0.000988124775995651},
	{alpha: 0.7853981633974483, h: 0.165625, mu: 0.34119024510890145, m: 32, predicted: 4.493363356159374e-11, coarse: 9.841977890928482e-05},
	{alpha: 0.7853981633974483, h: 0.1325, mu: 0.4264878063861265, m: 40, predicted: 1.1633607950106116e-13, coarse: 9.802864087475414e-06},
	{alpha: 0.7853981633974483, h: 0.11979166666666667, mu: 0.3208298227534841, m: 48, predicted: 4.993130111041943e-16, coarse: 2.6784981223934696e-07},
}

// contourFor is the contour with the fewest nodes whose predicted error is
// at most epsilon/10, or the one with the most. The margin: the prediction
// is an estimate of each term's size, not a bound, and a window's error
// was seen at 2.7 times it (a 16,606-state group against Radau IIA).
//
// sector is the widest angle from the negative real axis of the
// transform's poles (the blocks' eigenvalues; 0: all real). With complex
// poles the hyperbola and its strip must pass to their right: alpha + d
// at most pi/2 - sector, and then alpha < pi/2 - sector puts every pole
// left of the hyperbola in every window, whatever mu (the hyperbola lies
// left of its asymptotes, which leave the real axis at mu to the right of
// 0). Such contours are searched for when asked (a few milliseconds each,
// cached), among more nodes.
func contourFor(epsilon, sector float64) contour {
	if sector == 0 {
		for _, c := range contours {
			if c.predicted <= epsilon/10 {
				return c
			}
		}
		return contours[len(contours)-1]
	}
	// Round the sector up to a hundredth of a radian: one search serves
	// chains whose poles are nearly alike.
	sector = math.Ceil(sector*100) / 100
	var c contour
	for _, m := range []int{24, 32, 40, 48, 64, 80, 96, 128} {
		key := [2]float64{sector, float64(m)}
		if v, ok := sectorContours.Load(key); ok {
			c = v.(contour)
		} else {
			c = optimalContour(m, windowRatio, sector)
			sectorContours.Store(key, c)
		}
		if c.predicted <= epsilon/10 {
			break
		}
	}
	return c
}

// sectorContours caches contourFor's searches, by sector and nodes.
var sectorContours sync.Map

// optimalContour returns the contour for windows [1, lambda] with nodes
// -m..m and poles within sector of the negative real axis: the grid
// search of the three error terms over the angle alpha, the strip d and
// the step h (alpha + d at most pi/2 - sector, d at most alpha), with mu
// balancing truncation against discretisation. It costs a few
// milliseconds a contour (contours holds those for sector 0).
func optimalContour(m int, lambda, sector float64) contour {
	const t0 = 1.0
	const u = 0x1p-53
	best := contour{predicted: math.Inf(1)}
	room := math.Pi/2 - sector
	for ai := 1; ai < 100; ai++ {
		alpha := float64(ai) / 100 * math.Pi / 2
		dmax := math.Min(alpha, math.Min(math.Pi/2-alpha, room-alpha))
		if dmax <= 0 {
			continue
		}
		for di := 1; di < 50; di++ {
			d := float64(di) / 50 * dmax
			for hi := 1; hi < 120; hi++ {
				h := float64(hi) / 120 * 6 / float64(m)
				ct := 1 - math.Sin(alpha)*math.Cosh(float64(m)*h)
				if ct >= 0 {
					continue
				}
				cd := lambda * (1 - math.Sin(alpha-d))
				// log E_trunc = A ct equals log E_disc = A cd - 2 pi d / h.
				A := 2 * math.Pi * d / h / (cd - ct)
				logE := A * ct
				logR := math.Log(u) + A*lambda*(1-math.Sin(alpha))
				e := math.Exp(math.Max(logE, logR))
				if e < best.predicted {
					best = contour{alpha: alpha, h: h, mu: A / t0, m: m, predicted: e,
						coarse: math.Exp(A*cd - math.Pi*d/h)}
				}
			}
		}
	}
	return best
}

// node returns the contour's node u = j h / 2^level for a window
// starting at t0, and z'(u) / (2 pi i): the trapezoidal sum at that level
// weighs each node by h / 2^level.
func (c contour) node(j, level int, t0 float64) (z, dz complex128) {
	mu := c.mu / t0
	u := float64(j) * c.h / float64(int(1)<<level)
	// sin(iu - alpha) = -sin(alpha) cosh(u) + i cos(alpha) sinh(u);
	// z' = i mu cos(iu - alpha) = i mu (cos(alpha) cosh(u) + i sin(alpha) sinh(u)).
	sa, ca := math.Sincos(c.alpha)
	ch, sh := math.Cosh(u), math.Sinh(u)
	z = complex(mu*(1-sa*ch), mu*ca*sh)
	d := complex(-mu*sa*sh, mu*ca*ch)
	return z, d / complex(0, 2*math.Pi)
}
