package fluid

import (
	"context"
	"math"
)

// Steady is the fluid steady state: the fixed point the ODE reaches from
// the initial populations, or where it stood when it did not settle.
type Steady struct {
	Populations []float64 // by population index (Model.StateName)
	Throughputs []float64 // by label (Model.Labels)
	Variances   []float64 // by population index, second moments asked (else nil)
	// Residual is the check that Populations is a fixed point: the largest
	// |dx_i/dt| there over the largest throughput (0 when nothing flows).
	Residual float64
	// Settled: Residual is at most Options.SteadyTol.
	Settled bool
	// Time is when the trajectory was within the tolerance (settled), or
	// where the search stopped (not settled).
	Time float64
	// Transient is when the residual first fell below 1e-3: the time
	// scale of the approach, for default grids (0 if it never did).
	Transient float64
	// Polished: Newton's method on F(x) = 0, with every group's total
	// kept, refined the integrated point (Residual is the refined one's).
	Polished bool
	// Stopped: every flow is 0 there (the fluid is stuck; the chain may
	// have a deadlock).
	Stopped bool
	// Swings, when not settled, are the populations that still moved over
	// the last stretch of the trajectory, with their range: an oscillation
	// or a very slow approach.
	Swings []Swing
	Stats  IntegratorStats
}

// Swing is the range a population covered over [From, To].
type Swing struct {
	State    int
	Min, Max float64
	From, To float64
}

// SteadyState integrates the ODE from the initial populations over
// windows of doubling length (from 1/(largest rate)) until the residual
// passes opt.SteadyTol, then refines the point by Newton's method where
// that lowers the residual without moving it by more than the
// integration's tolerance. With moments 2 the covariance at the fixed
// point solves the Lyapunov equation (moments.go).
func (m *Model) SteadyState(ctx context.Context, moments int, opt Options) (*Steady, error) {
	if err := opt.fill(); err != nil {
		return nil, err
	}
	var sys system = &fluidSystem{m: m, e: m.newEvaluator()}
	atol := m.absTol(opt)
	y := m.Initial()
	if moments >= 2 && m.Dim > MaxMomentStates {
		_, err := newCovSystem(m)
		return nil, err
	}
	method := opt.Method
	if method == MethodAuto && sys.dim() <= DenseLimit {
		// Approaching a fixed point is stiff by nature: the explicit
		// method's steps stay at its stability limit, and its rounding
		// keeps the residual at the tolerance.
		method = MethodRodas4
	}
	it, err := newIntegrator(sys, method, opt.RelTol, atol)
	if err != nil {
		return nil, err
	}
	maxTime := opt.MaxTime
	if maxTime == 0 {
		maxTime = math.Ldexp(1/m.minRate, 40)
	}
	out := &Steady{}
	dy := make([]float64, sys.dim())
	t, window := 0.0, 1/m.maxRate
	residual := func() float64 {
		sys.deriv(y, dy)
		return m.relResidual(y[:m.Dim], dy)
	}
	r := residual()
	for r > opt.SteadyTol && t < maxTime {
		next := math.Min(t+window, maxTime)
		if err := it.advance(ctx, t, next, y); err != nil {
			return nil, err
		}
		t = next
		window *= 2
		r = residual()
		if r <= 1e-3 && out.Transient == 0 {
			out.Transient = t
		}
	}
	out.Time = t
	out.Settled = r <= opt.SteadyTol
	if !out.Settled {
		// Where does it go? Sample one more stretch as long as the last.
		span := t / 2
		lo, hi := append([]float64(nil), y[:m.Dim]...), append([]float64(nil), y[:m.Dim]...)
		for k := 1; k <= 64; k++ {
			next := t + span*float64(k)/64
			if err := it.advance(ctx, t, next, y); err != nil {
				return nil, err
			}
			t = next
			for i := 0; i < m.Dim; i++ {
				lo[i], hi[i] = math.Min(lo[i], y[i]), math.Max(hi[i], y[i])
			}
		}
		for i := 0; i < m.Dim; i++ {
			g := m.Groups[m.groupOf(i)]
			if hi[i]-lo[i] > opt.RelTol*float64(g.Copies)*100 {
				out.Swings = append(out.Swings, Swing{State: i, Min: lo[i], Max: hi[i], From: out.Time, To: t})
			}
		}
		out.Time = t
		r = residual()
	}
	out.Residual = r
	if r > 0 {
		if x, rp, ok := m.polish(y, r, opt); ok {
			copy(y, x)
			out.Residual = rp
			out.Polished = true
			out.Settled = out.Settled || rp <= opt.SteadyTol
		}
	}
	out.Populations = append([]float64(nil), y[:m.Dim]...)
	out.Throughputs = make([]float64, len(m.Labels))
	m.Throughputs(out.Populations, out.Throughputs)
	stopped := true
	for _, v := range out.Throughputs {
		if v > 0 {
			stopped = false
		}
	}
	out.Stopped = stopped
	if moments >= 2 {
		v, err := m.steadyVariances(out.Populations)
		if err != nil {
			return nil, err
		}
		out.Variances = v
	}
	out.Stats = it.stats
	if out.Stats.Method == "" {
		out.Stats.Method = it.method
	}
	return out, nil
}

// relResidual is the largest |dy_i| over the largest throughput at x (0
// when nothing flows).
func (m *Model) relResidual(x, dy []float64) float64 {
	tp := make([]float64, len(m.Labels))
	m.Throughputs(x, tp)
	top := 0.0
	for _, v := range tp {
		top = math.Max(top, v)
	}
	big := 0.0
	for _, v := range dy {
		big = math.Max(big, math.Abs(v))
	}
	if top == 0 {
		if big == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return big / top
}

// polish refines an approximate fixed point by Newton's method on F(x) =
// 0 with, for every group, the equation of its first local state replaced
// by the conservation of its copies (F's Jacobian is singular along
// them). It returns the point and its residual when the residual went
// down and the point moved by no more than the integration tolerance
// allows (at most 1e-4 of the group's copies), so that Newton cannot jump
// to another fixed point.
func (m *Model) polish(y []float64, r0 float64, opt Options) ([]float64, float64, bool) {
	n := m.Dim
	x := append([]float64(nil), y[:n]...)
	e := m.newEvaluator()
	jac := make([]float64, n*n)
	f := make([]float64, n)
	piv := make([]int, n)
	best, bestR := append([]float64(nil), x...), r0
	for iter := 0; iter < 12; iter++ {
		e.run(x)
		e.drift(f)
		e.jacobian(x, jac)
		for _, g := range m.Groups {
			row := g.Offset
			sum := 0.0
			for j := 0; j < n; j++ {
				jac[row*n+j] = 0
			}
			for d := range g.States {
				jac[row*n+g.Offset+d] = 1
				sum += x[g.Offset+d]
			}
			f[row] = sum - float64(g.Copies)
		}
		for i := range f {
			f[i] = -f[i]
		}
		if !luFactor(jac, piv, n) {
			break
		}
		luSolve(jac, piv, n, f)
		for i := range x {
			x[i] += f[i]
		}
		dx := make([]float64, n)
		m.Drift(x, dx)
		r := m.relResidual(x, dx)
		if math.IsNaN(r) || r >= bestR {
			break
		}
		best, bestR = append(best[:0], x...), r
	}
	if bestR >= r0 {
		return nil, 0, false
	}
	for _, g := range m.Groups {
		lim := math.Max(1e-4, 100*opt.RelTol) * float64(g.Copies)
		for d := range g.States {
			i := g.Offset + d
			if math.Abs(best[i]-y[i]) > lim || best[i] < -lim {
				return nil, 0, false
			}
		}
	}
	return best, bestR, true
}
