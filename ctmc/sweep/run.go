package sweep

import (
	"context"
	"fmt"

	"pepa/ctmc"
	"pepa/ctmc/shard"
	"pepa/lang"
)

// Source is a model's file name and text, as a sweep edits it.
type Source struct {
	Name string
	Text []byte
}

// Spec is a sweep: models, the rate constants varied over a grid, and the
// part of the grid to evaluate.
type Spec struct {
	Params []Param
	Models []Source
	// Workers is the number of points evaluated at once (0: every core).
	Workers int
	// Shard selects the points evaluated: the shard's range of the grid
	// (the zero Index: every point).
	Shard shard.Index
	// Series names the values whose crossings are found (one parameter
	// only; none: no crossings), which Of gives at each point, refined by
	// bisection to Tolerance of the grid step (default 1e-6).
	Series    []string
	Tolerance float64
	// Derive derives a model's chain the first time a sweep needs it (with
	// the caller's limits and progress); nil: ctmc.Derive with no limit.
	Derive func(ctx context.Context, s *ctmc.Structure) (*ctmc.Chain, error)
}

// Point is one point of a sweep: the values of the parameters and the
// models edited for them (checked), whose chains Chain gives.
type Point struct {
	Values []float64
	Models []*lang.Model
	sweep  *sweeper
}

// Chain returns the chain of s, the structure of model k at this point:
// derived at the first point that asks, rerated from it at the others
// (ChainCache).
func (p *Point) Chain(ctx context.Context, k int, s *ctmc.Structure) (*ctmc.Chain, error) {
	return p.sweep.cache.Chain(ctx, fmt.Sprint(k), s, func(s *ctmc.Structure) (*ctmc.Chain, error) { return p.sweep.derive(ctx, s) })
}

// Outcome is what a sweep found: the result at every point evaluated (in
// grid order from First, where the spec's shard starts) and the crossings of the series whose
// brackets start there.
type Outcome[R any] struct {
	Points    [][]float64 // the whole grid
	First     int
	Results   []R
	Crossings []Crossing
	Chains    CacheStats
}

type sweeper struct {
	spec   Spec
	names  []string
	cache  ChainCache
	derive func(ctx context.Context, s *ctmc.Structure) (*ctmc.Chain, error)
}

// Run evaluates analyze at the points of the spec's range, in parallel,
// each model's chain derived once for the whole sweep (Point.Chain), and
// finds where the series cross: of gives the series' values of a result.
// The results are those of the models edited by hand for each point
// (SetRates): the same numbers, bit for bit.
func Run[R any](ctx context.Context, spec Spec, analyze func(ctx context.Context, p *Point) (R, error), of func(R) []float64) (*Outcome[R], error) {
	sw := &sweeper{spec: spec, derive: spec.Derive}
	if sw.derive == nil {
		sw.derive = func(ctx context.Context, s *ctmc.Structure) (*ctmc.Chain, error) {
			return ctmc.Derive(ctx, s, ctmc.DeriveOptions{})
		}
	}
	for _, p := range spec.Params {
		sw.names = append(sw.names, p.Name)
	}
	// Every model must define every varied constant: checked once, with
	// the first point's values, before anything runs.
	points := Grid(spec.Params)
	if len(points) == 0 {
		return nil, fmt.Errorf("the grid has no point")
	}
	if _, err := sw.point(points[0]); err != nil {
		return nil, err
	}
	first, count := 0, len(points)
	if spec.Shard.N > 0 {
		first, count = spec.Shard.Range(len(points))
	}
	eval := func(ctx context.Context, values []float64) (R, error) {
		var zero R
		p, err := sw.point(values)
		if err != nil {
			return zero, err
		}
		r, err := analyze(ctx, p)
		if err != nil {
			return zero, fmt.Errorf("at %s: %w", PointString(sw.names, values), err)
		}
		return r, nil
	}
	results, err := RunPoints(ctx, count, spec.Workers, func(ctx context.Context, i int) (R, error) {
		return eval(ctx, points[first+i])
	})
	if err != nil {
		return nil, err
	}
	out := &Outcome[R]{Points: points, First: first, Results: results, Crossings: []Crossing{}}
	if len(spec.Params) == 1 && len(spec.Series) >= 2 && of != nil {
		if out.Crossings, err = crossingsOf(ctx, sw, out, eval, of); err != nil {
			return nil, fmt.Errorf("refining a crossing: %w", err)
		}
	}
	out.Chains = sw.cache.Stats()
	return out, nil
}

// point is the models edited for one point.
func (sw *sweeper) point(values []float64) (*Point, error) {
	p := &Point{Values: values, sweep: sw}
	for _, src := range sw.spec.Models {
		m, err := SetRates(src.Name, src.Text, sw.names, values)
		if err != nil {
			return nil, err
		}
		p.Models = append(p.Models, m)
	}
	return p, nil
}

// crossingsOf finds where the series cross between grid points of the
// range, evaluating points past it as far as a bracket that starts in it
// needs (a shard's last crossing), once each, and refining each crossing
// by bisection on points off the grid.
func crossingsOf[R any](ctx context.Context, sw *sweeper, out *Outcome[R], eval func(context.Context, []float64) (R, error), of func(R) []float64) ([]Crossing, error) {
	xs := make([]float64, len(out.Points))
	for i, p := range out.Points {
		xs[i] = p[0]
	}
	end := out.First + len(out.Results)
	beyond := map[int][]float64{}
	at := func(ctx context.Context, k int) ([]float64, error) {
		if k < end {
			return of(out.Results[k-out.First]), nil
		}
		if v, ok := beyond[k]; ok {
			return v, nil
		}
		r, err := eval(ctx, out.Points[k])
		if err != nil {
			return nil, err
		}
		beyond[k] = of(r)
		return beyond[k], nil
	}
	refine := func(ctx context.Context, x float64) ([]float64, error) {
		r, err := eval(ctx, []float64{x})
		if err != nil {
			return nil, err
		}
		return of(r), nil
	}
	tol := sw.spec.Tolerance
	if tol == 0 {
		tol = 1e-6
	}
	cs, err := CrossingsFrom(ctx, xs, sw.spec.Series, at, out.First, end, refine, tol)
	if err != nil {
		return nil, err
	}
	SortCrossings(cs)
	return append([]Crossing{}, cs...), nil
}

// PointString names a point: "r1 = 0.2, r2 = 0.3".
func PointString(names []string, values []float64) string { return assignment(names, values) }
