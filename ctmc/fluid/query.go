package fluid

import (
	"context"
	"fmt"
	"math"

	"pepa/lang"
)

// Query is what Analyze computes.
type Query struct {
	// Times is the grid of the time series (and of the passage); nil
	// without Steady asks for DefaultTimes up to where the trajectory
	// settles.
	Times []float64
	// Steady asks for the fluid steady state.
	Steady bool
	// Passage, if not nil, asks for a tagged copy's passage time.
	Passage *PassageQuery
	// Moments is 1 (means) or 2 (also variances, by the linear-noise
	// closure).
	Moments int
	// Check, if not nil, measures the distance to the chain.
	Check Checker
}

// Checker compares an analysis with the model's chain (package
// ctmc/fluid/fluidcheck).
type Checker interface {
	Check(ctx context.Context, m *lang.Model, fm *Model, a *Analysis) (*Check, error)
}

// Check is how far an analysis is from the chain's exact figures or from
// simulation's intervals.
type Check struct {
	// Against is "exact" (the chain of count vectors, solved), "simulation"
	// (intervals of the steady state) or "none".
	Against string
	// How says what was solved or simulated, or why nothing was.
	How    string
	States int // the chain's states (exact)
	// Steady distances: the largest |fluid - chain| over every local
	// state's mean population, as a fraction of its group's copies, and
	// over every throughput, relative to the largest throughput.
	SteadyPopulation, SteadyThroughput float64
	// Variance: the largest |fluid - chain| over every population's
	// standard deviation, as a fraction of its group's copies (second
	// moments asked; NaN otherwise).
	SteadyStdDev float64
	// Series: the same distances over the time series (NaN: not compared).
	SeriesPopulation, SeriesThroughput float64
	// Outside counts the fluid figures outside simulation's intervals, of
	// Compared (simulation).
	Outside, Compared int
	Confidence        float64
	// Rows are the figures compared at the steady state.
	Rows []CheckRow
}

// CheckRow is one figure, fluid against chain.
type CheckRow struct {
	Kind       string // "population", "throughput", "stddev"
	Group      string // component (population, stddev)
	Name       string // local state or action
	Fluid      float64
	Chain      float64
	Low, High  float64 // simulation's interval (NaN for exact)
	Difference float64 // fluid - chain
}

// Analysis is the result of Analyze.
type Analysis struct {
	Model   *Model
	Series  *Series
	Steady  *Steady
	Passage *Passage
	Check   *Check
	Moments int
	// Smallest is the smallest population (its group's index): the
	// approximation is as good as the smallest population allows.
	Smallest int
}

// Analyze builds the fluid model of a checked model and computes what q
// asks.
func Analyze(ctx context.Context, m *lang.Model, q Query, opt Options) (*Analysis, error) {
	fm, err := Build(m)
	if err != nil {
		return nil, err
	}
	return AnalyzeModel(ctx, m, fm, q, opt)
}

// AnalyzeModel is Analyze on a fluid model already built from m.
func AnalyzeModel(ctx context.Context, m *lang.Model, fm *Model, q Query, opt Options) (*Analysis, error) {
	if q.Moments == 0 {
		q.Moments = 1
	}
	if q.Moments != 1 && q.Moments != 2 {
		return nil, fmt.Errorf("moments: %d (want 1 or 2)", q.Moments)
	}
	a := &Analysis{Model: fm, Moments: q.Moments, Smallest: fm.SmallestGroup()}
	times := q.Times
	var err error
	needGrid := times == nil && !q.Steady
	if q.Steady || needGrid {
		if a.Steady, err = fm.SteadyState(ctx, q.Moments, opt); err != nil {
			return nil, err
		}
	}
	if needGrid {
		horizon := a.Steady.Transient
		if horizon == 0 {
			horizon = a.Steady.Time
		}
		times = DefaultTimes(horizon)
		if !q.Steady {
			a.Steady = nil
		}
	}
	if len(times) > 0 {
		if a.Series, err = fm.Series(ctx, times, q.Moments, opt); err != nil {
			return nil, err
		}
	}
	if q.Passage != nil {
		pq := *q.Passage
		if pq.Times == nil {
			pq.Times = times
		}
		if a.Passage, err = fm.Passage(ctx, pq, opt); err != nil {
			return nil, err
		}
	}
	if q.Check != nil {
		if a.Check, err = q.Check.Check(ctx, m, fm, a); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// DefaultTimes is a grid of 51 times from 0 to a round number at least
// horizon (1, 2 or 5 times a power of ten).
func DefaultTimes(horizon float64) []float64 {
	if !(horizon > 0) || math.IsInf(horizon, 0) {
		horizon = 1
	}
	p := math.Pow(10, math.Floor(math.Log10(horizon)))
	end := p
	for _, f := range []float64{1, 2, 5, 10} {
		if f*p >= horizon*(1-1e-12) {
			end = f * p
			break
		}
	}
	out := make([]float64, 51)
	for i := range out {
		out[i] = end * float64(i) / 50
	}
	return out
}
