package fluid

import (
	"context"
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// funcSystem is an ODE given by functions, for the integrators' tests.
type funcSystem struct {
	n int
	f func(y, dy []float64)
}

func (s *funcSystem) dim() int              { return s.n }
func (s *funcSystem) deriv(y, dy []float64) { s.f(y, dy) }
func (s *funcSystem) jac(y, j []float64) {
	f0, f1 := make([]float64, s.n), make([]float64, s.n)
	fdJacobian(s.f, append([]float64(nil), y...), []float64{1, 1, 1}[:s.n], f0, f1, j)
}

// A nonlinear system (a Brusselator) whose solution at t = 1 comes from
// RK4 with steps of 1e-5.
func brusselator(y, dy []float64) {
	dy[0] = 1 + y[0]*y[0]*y[1] - 4*y[0]
	dy[1] = 3*y[0] - y[0]*y[0]*y[1]
}

// TestOrders takes fixed steps of each method and checks its order of
// convergence: halving h divides the error at t = 1 by about 2^order
// (a wrong coefficient shows as a lower order).
func TestOrders(t *testing.T) {
	y0 := []float64{1.5, 3}
	ref := rk4(brusselator, y0, []float64{1}, 1e-5)[0]
	for _, tc := range []struct {
		method string
		order  float64
	}{{MethodDopri5, 5}, {MethodRodas4, 4}} {
		var errs []float64
		for _, steps := range []int{20, 40, 80} {
			sys := &funcSystem{n: 2, f: brusselator}
			it, err := newIntegrator(sys, tc.method, 1e-3, []float64{1, 1})
			if err != nil {
				t.Fatal(err)
			}
			y := append([]float64(nil), y0...)
			h := 1 / float64(steps)
			for k := 0; k < steps; k++ {
				if tc.method == MethodDopri5 {
					it.fsal = false
					it.dopriStep(y, h)
				} else {
					it.rodasStep(y, h)
				}
				copy(y, it.y1)
			}
			errs = append(errs, math.Hypot(y[0]-ref[0], y[1]-ref[1]))
		}
		for i := 1; i < len(errs); i++ {
			got := math.Log2(errs[i-1] / errs[i])
			if got < tc.order-0.4 || got > tc.order+1.2 {
				t.Errorf("%s: observed order %.2f (errors %v), want %g", tc.method, got, errs, tc.order)
			}
		}
	}
}

// TestStiffLinear: y' = A y with eigenvalues -1 and -1e6 (rates 10^6
// apart), against exp(A t) (gonum): every method within 1e-6 relative;
// auto switches to RODAS4 and takes far fewer steps than the explicit
// method.
func TestStiffLinear(t *testing.T) {
	a := mat.NewDense(3, 3, []float64{
		-1e6, 1e6 - 1, 0,
		0, -1, 1,
		0, 0, -2,
	})
	f := func(y, dy []float64) {
		for i := 0; i < 3; i++ {
			dy[i] = 0
			for j := 0; j < 3; j++ {
				dy[i] += a.At(i, j) * y[j]
			}
		}
	}
	y0 := []float64{1, 2, 3}
	steps := map[string]int{}
	for _, method := range []string{MethodAuto, MethodRodas4, MethodDopri5} {
		sys := &funcSystem{n: 3, f: f}
		it, err := newIntegrator(sys, method, 1e-9, []float64{1e-12, 1e-12, 1e-12})
		if err != nil {
			t.Fatal(err)
		}
		y := append([]float64(nil), y0...)
		tt := 0.0
		for _, tk := range []float64{0.001, 1, 5} {
			if err := it.advance(context.Background(), tt, tk, y); err != nil {
				t.Fatal(err)
			}
			tt = tk
			var at, e mat.Dense
			at.Scale(tk, a)
			e.Exp(&at)
			for i := 0; i < 3; i++ {
				want := 0.0
				for j := 0; j < 3; j++ {
					want += e.At(i, j) * y0[j]
				}
				if math.Abs(y[i]-want) > 1e-6*math.Abs(want)+1e-10 {
					t.Errorf("%s: t=%g y[%d] = %.12g, exp(At) gives %.12g", method, tk, i, y[i], want)
				}
			}
		}
		steps[method] = it.stats.Steps
		if method == MethodAuto && math.IsNaN(it.stats.SwitchedAt) {
			t.Errorf("auto did not switch to the stiff method (%+v)", it.stats)
		}
	}
	if steps[MethodAuto] > steps[MethodDopri5]/20 || steps[MethodRodas4] > 2000 {
		t.Errorf("steps: %v: the stiff method should need a fraction of the explicit one's", steps)
	}
	t.Logf("steps %v", steps)
}

// TestLU against a product.
func TestLU(t *testing.T) {
	a := []float64{0, 2, 1, 3, 1, -1, 1, 1, 1}
	orig := append([]float64(nil), a...)
	piv := make([]int, 3)
	if !luFactor(a, piv, 3) {
		t.Fatal("singular")
	}
	b := []float64{1, 2, 3}
	x := append([]float64(nil), b...)
	luSolve(a, piv, 3, x)
	for i := 0; i < 3; i++ {
		s := 0.0
		for j := 0; j < 3; j++ {
			s += orig[i*3+j] * x[j]
		}
		if math.Abs(s-b[i]) > 1e-12 {
			t.Errorf("row %d: %g, want %g", i, s, b[i])
		}
	}
	if luFactor([]float64{1, 2, 2, 4}, piv[:2], 2) {
		t.Error("a singular matrix factored")
	}
}
