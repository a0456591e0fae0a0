package fluid

import (
	"context"
	"errors"
	"fmt"
	"math"
)

// system is an autonomous ODE y' = F(y) with its Jacobian.
type system interface {
	dim() int
	deriv(y, dy []float64)
	// jac writes dF/dy at y, row-major, to j.
	jac(y, j []float64)
}

// Integration methods.
const (
	MethodAuto   = "auto"   // Dormand-Prince until the problem shows itself stiff, then RODAS4
	MethodRodas4 = "rodas4" // stiff: Rosenbrock RODAS4, order 4(3), L-stable, dense Jacobian
	MethodDopri5 = "dopri5" // non-stiff: Dormand-Prince 5(4), explicit
)

// DenseLimit is the largest ODE dimension the stiff method takes: it
// factors a dense matrix of that order every step.
const DenseLimit = 600

// maxSteps bounds the steps of one integration.
const maxSteps = 20_000_000

// ErrTooManySteps is returned (wrapped) when an integration needs more
// than maxSteps steps.
var ErrTooManySteps = errors.New("the integration takes too many steps")

// IntegratorStats says what an integration did.
type IntegratorStats struct {
	Method      string  // the method that took the last step
	SwitchedAt  float64 // auto: the time it switched to RODAS4 (NaN: it did not)
	Steps       int     // accepted steps
	Rejected    int     // rejected steps
	Evaluations int     // evaluations of the right-hand side
	Jacobians   int
}

// integrator advances y(t) with error control: every accepted step's
// estimated local error e satisfies sqrt(mean_i (e_i / (atol_i + rtol
// max(|y_i|, |ynew_i|)))^2) <= 1.
type integrator struct {
	sys    system
	method string // the method asked for
	stiff  bool   // taking RODAS4 steps
	rtol   float64
	atol   []float64
	h      float64 // the next step size (0: choose one)
	stats  IntegratorStats
	// stiffness detection (auto): consecutive steps where h |lambda|
	// passed the explicit method's stability boundary
	stiffSteps, calmSteps int

	n                      int
	k                      [7][]float64
	y1, ytmp, err, f0, rhs []float64
	jacM, lu               []float64
	piv                    []int
	fsal                   bool // k[0] holds F(y) (Dormand-Prince)
}

func newIntegrator(sys system, method string, rtol float64, atol []float64) (*integrator, error) {
	n := sys.dim()
	it := &integrator{sys: sys, method: method, rtol: rtol, atol: atol, n: n}
	it.stats.SwitchedAt = math.NaN()
	switch method {
	case MethodRodas4:
		if n > DenseLimit {
			return nil, fmt.Errorf("the stiff method factors a dense matrix of order %d every step, more than %d: use the explicit method", n, DenseLimit)
		}
		it.stiff = true
	case MethodDopri5, MethodAuto:
	default:
		return nil, fmt.Errorf("unknown integration method %q (want %s, %s or %s)", method, MethodAuto, MethodRodas4, MethodDopri5)
	}
	for i := range it.k {
		it.k[i] = make([]float64, n)
	}
	it.y1, it.ytmp, it.err, it.f0, it.rhs = make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	return it, nil
}

func (it *integrator) allocDense() {
	if it.jacM == nil {
		it.jacM = make([]float64, it.n*it.n)
		it.lu = make([]float64, it.n*it.n)
		it.piv = make([]int, it.n)
	}
}

// errNorm is the weighted RMS norm of the error estimate.
func (it *integrator) errNorm(y, ynew, e []float64) float64 {
	s := 0.0
	for i := range e {
		sc := it.atol[i] + it.rtol*math.Max(math.Abs(y[i]), math.Abs(ynew[i]))
		r := e[i] / sc
		s += r * r
	}
	if it.n == 0 {
		return 0
	}
	return math.Sqrt(s / float64(it.n))
}

// initialStep is the starting step size of Hairer, Norsett and Wanner
// (1993, II.4): h such that an explicit Euler step changes y by about 1%
// of its scale, and the second derivative is resolved.
func (it *integrator) initialStep(y []float64, span float64, order float64) float64 {
	f0 := it.f0
	it.sys.deriv(y, f0)
	it.stats.Evaluations++
	d0, d1 := 0.0, 0.0
	for i := range y {
		sc := it.atol[i] + it.rtol*math.Abs(y[i])
		d0 += (y[i] / sc) * (y[i] / sc)
		d1 += (f0[i] / sc) * (f0[i] / sc)
	}
	d0, d1 = math.Sqrt(d0/float64(it.n)), math.Sqrt(d1/float64(it.n))
	h0 := 1e-6
	if d0 >= 1e-5 && d1 >= 1e-5 {
		h0 = 0.01 * d0 / d1
	}
	h0 = math.Min(h0, span)
	for i := range y {
		it.ytmp[i] = y[i] + h0*f0[i]
	}
	it.sys.deriv(it.ytmp, it.rhs)
	it.stats.Evaluations++
	d2 := 0.0
	for i := range y {
		sc := it.atol[i] + it.rtol*math.Abs(y[i])
		r := (it.rhs[i] - f0[i]) / sc
		d2 += r * r
	}
	d2 = math.Sqrt(d2/float64(it.n)) / h0
	var h1 float64
	if m := math.Max(d1, d2); m <= 1e-15 {
		h1 = math.Max(1e-6, h0*1e-3)
	} else {
		h1 = math.Pow(0.01/m, 1/(order+1))
	}
	return math.Min(math.Min(100*h0, h1), span)
}

// advance integrates y (in place) from t to tEnd and returns tEnd.
func (it *integrator) advance(ctx context.Context, t, tEnd float64, y []float64) error {
	if tEnd <= t || it.n == 0 {
		return nil
	}
	if it.h <= 0 {
		order := 5.0
		if it.stiff {
			order = 4
		}
		it.h = it.initialStep(y, tEnd-t, order)
		it.fsal = false
	}
	rejectedBefore := false
	for t < tEnd {
		if (it.stats.Steps+it.stats.Rejected)&255 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if it.stats.Steps+it.stats.Rejected > maxSteps {
			return fmt.Errorf("%w: more than %d by t = %g (of %g)", ErrTooManySteps, maxSteps, t, tEnd)
		}
		h := it.h
		last := false
		if t+h >= tEnd || t+1.01*h >= tEnd {
			h = tEnd - t
			last = true
		}
		if h <= 1e-14*math.Max(1, math.Abs(t)) {
			return fmt.Errorf("the integration step fell to %g at t = %g: the right-hand side may be discontinuous there", h, t)
		}
		var errN float64
		var lambdaH float64
		if it.stiff {
			errN = it.rodasStep(y, h)
		} else {
			errN, lambdaH = it.dopriStep(y, h)
		}
		if errN <= 1 {
			t += h
			copy(y, it.y1)
			it.stats.Steps++
			order := 5.0
			if it.stiff {
				order = 4
			}
			fac := math.Min(6, math.Max(0.2, 0.9*math.Pow(math.Max(errN, 1e-10), -1/order)))
			if rejectedBefore {
				fac = math.Min(fac, 1)
			}
			rejectedBefore = false
			if !last || fac*h > it.h {
				it.h = h * fac
			}
			if !it.stiff {
				// FSAL: the last stage is F at the new point.
				copy(it.k[0], it.k[6])
				it.fsal = true
				if it.method == MethodAuto && it.n <= DenseLimit {
					// Hairer's rule (dopri5.f): 15 stiff steps, forgiven
					// after 6 non-stiff ones in a row.
					if lambdaH > 3.25 {
						it.stiffSteps++
						it.calmSteps = 0
					} else if it.calmSteps++; it.calmSteps >= 6 {
						it.stiffSteps = 0
					}
					if it.stiffSteps >= 15 {
						it.stiff = true
						it.stats.SwitchedAt = t
					}
				}
			}
			continue
		}
		it.stats.Rejected++
		fac := math.Max(0.2, 0.9*math.Pow(errN, -0.25))
		if rejectedBefore {
			fac = math.Min(fac, 0.1)
		}
		rejectedBefore = true
		it.h = h * fac
		if !it.stiff {
			// k[0] still holds F(y).
			it.fsal = true
		}
	}
	if it.stiff {
		it.stats.Method = MethodRodas4
	} else {
		it.stats.Method = MethodDopri5
	}
	return nil
}

// Dormand and Prince (1980) 5(4), the coefficients of Hairer, Norsett and
// Wanner (1993), Table II.5.2.
var (
	dpC = [7]float64{0, 1. / 5, 3. / 10, 4. / 5, 8. / 9, 1, 1}
	dpA = [7][6]float64{
		{},
		{1. / 5},
		{3. / 40, 9. / 40},
		{44. / 45, -56. / 15, 32. / 9},
		{19372. / 6561, -25360. / 2187, 64448. / 6561, -212. / 729},
		{9017. / 3168, -355. / 33, 46732. / 5247, 49. / 176, -5103. / 18656},
		{35. / 384, 0, 500. / 1113, 125. / 192, -2187. / 6784, 11. / 84},
	}
	// dpE is the fifth-order weights minus the fourth-order ones.
	dpE = [7]float64{71. / 57600, 0, -71. / 16695, 71. / 1920, -17253. / 339200, 22. / 525, -1. / 40}
)

// dopriStep tries one Dormand-Prince step of size h from y into it.y1 and
// returns the error norm and h times the estimate of the Jacobian's
// dominant eigenvalue (Hairer and Wanner's stiffness test, II.6).
func (it *integrator) dopriStep(y []float64, h float64) (float64, float64) {
	k := &it.k
	if !it.fsal {
		it.sys.deriv(y, k[0])
		it.stats.Evaluations++
		it.fsal = true
	}
	for s := 1; s < 7; s++ {
		for i := range y {
			acc := 0.0
			for j := 0; j < s; j++ {
				acc += dpA[s][j] * k[j][i]
			}
			it.ytmp[i] = y[i] + h*acc
		}
		if s == 6 {
			copy(it.y1, it.ytmp) // the fifth-order solution (the last row is its weights)
			// keep the sixth stage's point for the stiffness test
			for i := range y {
				acc := 0.0
				for j := 0; j < 5; j++ {
					acc += dpA[5][j] * k[j][i]
				}
				it.err[i] = y[i] + h*acc
			}
		}
		it.sys.deriv(it.ytmp, k[s])
		it.stats.Evaluations++
	}
	// stiffness: |k7 - k6| / |y1 - y6|
	num, den := 0.0, 0.0
	for i := range y {
		a := k[6][i] - k[5][i]
		b := it.y1[i] - it.err[i]
		num += a * a
		den += b * b
	}
	lambdaH := 0.0
	if den > 0 {
		lambdaH = h * math.Sqrt(num/den)
	}
	for i := range y {
		acc := 0.0
		for j := 0; j < 7; j++ {
			acc += dpE[j] * k[j][i]
		}
		it.err[i] = h * acc
	}
	return it.errNorm(y, it.y1, it.err), lambdaH
}

// RODAS4 (Hairer and Wanner 1996, IV.7; the coefficients of their code
// rodas.f): six stages, order 4 with an embedded order 3, L-stable and
// stiffly accurate, in the form
//
//	(I/(h gamma) - J) K_i = F(y + sum_j a_ij K_j) + sum_j (c_ij / h) K_j
//	y1 = y + sum_j m_j K_j,  error estimate K_6.
const rodasGamma = 0.25

var (
	rodasA = [6][5]float64{
		{},
		{1.544},
		{0.9466785280815826, 0.2557011698983284},
		{3.314825187068521, 2.896124015972201, 0.9986419139977817},
		{1.221224509226641, 6.019134481288629, 12.53708332932087, -0.6878860361058950},
		{1.221224509226641, 6.019134481288629, 12.53708332932087, -0.6878860361058950, 1},
	}
	rodasC = [6][5]float64{
		{},
		{-5.6688},
		{-2.430093356833875, -0.2063599157091915},
		{-0.1073529058151375, -9.594562251023355, -20.47028614809616},
		{7.496443313967647, -10.24680431464352, -33.99990352819905, 11.70890893206160},
		{8.083246795921522, -7.981132988064893, -31.52159432874371, 16.31930543123136, -6.058818238834054},
	}
	rodasM = [6]float64{1.221224509226641, 6.019134481288629, 12.53708332932087, -0.6878860361058950, 1, 1}
)

// rodasStep tries one RODAS4 step of size h from y into it.y1 and returns
// the error norm (+Inf when the matrix is singular).
func (it *integrator) rodasStep(y []float64, h float64) float64 {
	it.allocDense()
	n := it.n
	it.sys.jac(y, it.jacM)
	it.stats.Jacobians++
	g := 1 / (h * rodasGamma)
	for i := 0; i < n*n; i++ {
		it.lu[i] = -it.jacM[i]
	}
	for i := 0; i < n; i++ {
		it.lu[i*n+i] += g
	}
	if !luFactor(it.lu, it.piv, n) {
		return math.Inf(1)
	}
	k := &it.k
	for s := 0; s < 6; s++ {
		if s == 0 {
			it.sys.deriv(y, it.rhs)
		} else {
			for i := range y {
				acc := 0.0
				for j := 0; j < s; j++ {
					acc += rodasA[s][j] * k[j][i]
				}
				it.ytmp[i] = y[i] + acc
			}
			it.sys.deriv(it.ytmp, it.rhs)
		}
		it.stats.Evaluations++
		for i := range y {
			acc := 0.0
			for j := 0; j < s; j++ {
				acc += rodasC[s][j] * k[j][i]
			}
			k[s][i] = it.rhs[i] + acc/h
		}
		luSolve(it.lu, it.piv, n, k[s])
	}
	for i := range y {
		acc := 0.0
		for j := 0; j < 6; j++ {
			acc += rodasM[j] * k[j][i]
		}
		it.y1[i] = y[i] + acc
		it.err[i] = k[5][i]
	}
	e := it.errNorm(y, it.y1, it.err)
	if math.IsNaN(e) {
		return math.Inf(1)
	}
	return e
}

// luFactor factors a (n x n, row-major) in place with partial pivoting;
// it reports false for a singular matrix.
func luFactor(a []float64, piv []int, n int) bool {
	for c := 0; c < n; c++ {
		p := c
		best := math.Abs(a[c*n+c])
		for r := c + 1; r < n; r++ {
			if v := math.Abs(a[r*n+c]); v > best {
				best, p = v, r
			}
		}
		piv[c] = p
		if best == 0 || math.IsNaN(best) {
			return false
		}
		if p != c {
			for j := 0; j < n; j++ {
				a[c*n+j], a[p*n+j] = a[p*n+j], a[c*n+j]
			}
		}
		inv := 1 / a[c*n+c]
		for r := c + 1; r < n; r++ {
			l := a[r*n+c] * inv
			if l == 0 {
				continue
			}
			a[r*n+c] = l
			row, prow := a[r*n:r*n+n], a[c*n:c*n+n]
			for j := c + 1; j < n; j++ {
				row[j] -= l * prow[j]
			}
		}
	}
	return true
}

// luSolve solves a x = b in place for a factored by luFactor.
func luSolve(a []float64, piv []int, n int, b []float64) {
	for c := 0; c < n; c++ {
		if p := piv[c]; p != c {
			b[c], b[p] = b[p], b[c]
		}
	}
	for r := 1; r < n; r++ {
		acc := b[r]
		row := a[r*n : r*n+r]
		for j, l := range row {
			acc -= l * b[j]
		}
		b[r] = acc
	}
	for r := n - 1; r >= 0; r-- {
		acc := b[r]
		for j := r + 1; j < n; j++ {
			acc -= a[r*n+j] * b[j]
		}
		b[r] = acc / a[r*n+r]
	}
}
