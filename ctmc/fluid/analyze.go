package fluid

import (
	"context"
	"fmt"
	"math"
)

// Options controls the integration.
type Options struct {
	// Method is MethodAuto (default), MethodRodas4 or MethodDopri5.
	Method string
	// RelTol is the relative tolerance of every step (default 1e-8).
	RelTol float64
	// AbsTol is the absolute tolerance of a population, per copy of its
	// group (default 1e-10: a group of N copies gets 1e-10 N).
	AbsTol float64
	// SteadyTol is the largest relative residual of a fixed point: the
	// largest |dx_i/dt| over the largest throughput (default 1e-10).
	SteadyTol float64
	// MaxTime bounds the time the steady state is looked for (0: 2^40
	// times the slowest mean duration of an activity).
	MaxTime float64
}

// DefaultOptions are the tolerances the command line uses.
var DefaultOptions = Options{Method: MethodAuto, RelTol: 1e-8, AbsTol: 1e-10, SteadyTol: 1e-10}

func (o *Options) fill() error {
	if o.Method == "" {
		o.Method = MethodAuto
	}
	if o.RelTol == 0 {
		o.RelTol = DefaultOptions.RelTol
	}
	if o.AbsTol == 0 {
		o.AbsTol = DefaultOptions.AbsTol
	}
	if o.SteadyTol == 0 {
		o.SteadyTol = DefaultOptions.SteadyTol
	}
	if !(o.RelTol > 1e-14 && o.RelTol < 1) || !(o.AbsTol > 0) || !(o.SteadyTol > 0) || o.MaxTime < 0 {
		return fmt.Errorf("tolerances: relative %g must be in (1e-14, 1), absolute %g and steady %g positive", o.RelTol, o.AbsTol, o.SteadyTol)
	}
	return nil
}

// fluidSystem is the model's ODE as the integrators see it.
type fluidSystem struct {
	m *Model
	e *evaluator
}

func (s *fluidSystem) dim() int { return s.m.Dim }
func (s *fluidSystem) deriv(y, dy []float64) {
	s.e.run(y)
	s.e.drift(dy)
}
func (s *fluidSystem) jac(y, j []float64) {
	s.e.run(y)
	s.e.jacobian(y, j)
}

// absTol is the absolute tolerance of every population.
func (m *Model) absTol(opt Options) []float64 {
	out := make([]float64, m.Dim)
	for _, g := range m.Groups {
		for d := range g.States {
			out[g.Offset+d] = opt.AbsTol * float64(g.Copies)
		}
	}
	return out
}

// Drift writes F(x) to dx: the fluid right-hand side at populations x.
func (m *Model) Drift(x, dx []float64) {
	e := m.newEvaluator()
	e.run(x)
	e.drift(dx)
}

// Throughputs writes the throughput of every label (Model.Labels) at
// populations x to out.
func (m *Model) Throughputs(x, out []float64) {
	e := m.newEvaluator()
	e.run(x)
	e.throughputs(out)
}

// Jacobian writes dF/dx at x to jac (row-major Dim x Dim).
func (m *Model) Jacobian(x, jac []float64) {
	e := m.newEvaluator()
	e.run(x)
	e.jacobian(x, jac)
}

// Series is the fluid trajectory on a grid of times.
type Series struct {
	Times []float64
	// Populations[i][k] is population i (Model.StateName) at Times[k].
	Populations [][]float64
	// Throughputs[a][k] is label a's throughput (Model.Labels) at Times[k].
	Throughputs [][]float64
	// Variances[i][k] is the variance of population i at Times[k] by the
	// linear-noise closure (Options asked for second moments; else nil).
	Variances [][]float64
	Stats     IntegratorStats
}

// Series integrates the ODE from the initial populations over times
// (sorted, >= 0). With moments 2 it also carries the covariance of the
// populations (moments.go).
func (m *Model) Series(ctx context.Context, times []float64, moments int, opt Options) (*Series, error) {
	if err := opt.fill(); err != nil {
		return nil, err
	}
	for i, t := range times {
		if !(t >= 0) || math.IsInf(t, 0) || (i > 0 && t < times[i-1]) {
			return nil, fmt.Errorf("times must be finite, >= 0 and sorted (got %g)", t)
		}
	}
	var sys system = &fluidSystem{m: m, e: m.newEvaluator()}
	atol := m.absTol(opt)
	y := m.Initial()
	var cov *covSystem
	if moments >= 2 {
		var err error
		if cov, err = newCovSystem(m); err != nil {
			return nil, err
		}
		sys = cov
		atol = cov.absTol(atol)
		y = append(y, make([]float64, cov.dim()-m.Dim)...)
	}
	it, err := newIntegrator(sys, opt.Method, opt.RelTol, atol)
	if err != nil {
		return nil, err
	}
	out := &Series{Times: append([]float64(nil), times...)}
	out.Populations = make([][]float64, m.Dim)
	for i := range out.Populations {
		out.Populations[i] = make([]float64, len(times))
	}
	out.Throughputs = make([][]float64, len(m.Labels))
	for i := range out.Throughputs {
		out.Throughputs[i] = make([]float64, len(times))
	}
	if cov != nil {
		out.Variances = make([][]float64, m.Dim)
		for i := range out.Variances {
			out.Variances[i] = make([]float64, len(times))
		}
	}
	e := m.newEvaluator()
	tp := make([]float64, len(m.Labels))
	t := 0.0
	for k, tk := range times {
		if err := it.advance(ctx, t, tk, y); err != nil {
			return nil, err
		}
		t = tk
		e.run(y[:m.Dim])
		e.throughputs(tp)
		for i := 0; i < m.Dim; i++ {
			out.Populations[i][k] = y[i]
		}
		for a := range tp {
			out.Throughputs[a][k] = tp[a]
		}
		if cov != nil {
			for i := 0; i < m.Dim; i++ {
				out.Variances[i][k] = cov.variance(y, i)
			}
		}
	}
	out.Stats = it.stats
	if it.stats.Method == "" {
		out.Stats.Method = it.method
	}
	return out, nil
}
