package simulate

import (
	"context"
	"errors"
	"math"
	"slices"

	"pepa/ctmc"
)

// PassageSpec is a passage from the initial state (or Options.Initial):
// it ends at the first firing of one of TargetActions, or on first
// entering a state where Target holds (a start inside it ends at 0).
type PassageSpec struct {
	TargetActions []int32
	Target        *ctmc.Predicate
	Times         []float64 // where to estimate the CDF
	Quantiles     []float64 // probabilities whose quantiles to estimate
}

// CDFPoint is the estimated P(passage <= T), with its Wilson interval.
type CDFPoint struct {
	T   float64
	CDF Interval
}

// QuantilePoint is the estimated p-quantile with its order-statistic
// interval (+Inf where too few replications finished).
type QuantilePoint struct {
	P float64
	T Interval
}

// PassageResult is the estimate of a passage-time distribution.
type PassageResult struct {
	Points    []CDFPoint
	Band      float64 // DKW half-width: the whole CDF lies within it at once
	Mean      Interval
	Quantiles []QuantilePoint
	// Never counts replications that deadlocked before the target,
	// Censored those stopped at Options.MaxEvents; both count as "not
	// yet" at every time, and either makes the mean unknown (NaN).
	Never, Censored int
	Stats
}

// Passage estimates a passage-time distribution. The precision rule
// watches the widest per-point interval of the CDF (absolute), or with no
// time points the mean's half-width relative to the mean.
func Passage(ctx context.Context, s *ctmc.Structure, spec PassageSpec, opt Options) (*PassageResult, error) {
	if err := opt.defaults(); err != nil {
		return nil, err
	}
	if (len(spec.TargetActions) == 0) == (spec.Target == nil) {
		return nil, errors.New("a passage needs target actions or a target predicate (one of them)")
	}
	isTarget := make([]bool, len(s.Actions))
	for _, a := range spec.TargetActions {
		isTarget[a] = true
	}
	const never, censored = -1, -2
	one := func(p *path, i int) (float64, error) {
		p.reset(opt.Seed, i, opt.Initial)
		if spec.Target != nil && spec.Target.Holds(p.state) {
			return 0, nil
		}
		for start := p.events; p.events-start < opt.MaxEvents; {
			if p.events&0xFFFF == 0 && ctx.Err() != nil {
				return 0, ctx.Err()
			}
			a, _, ok, err := p.step()
			if err != nil {
				return 0, err
			}
			if !ok {
				return never, nil
			}
			if spec.Target == nil && isTarget[a] || spec.Target != nil && spec.Target.Holds(p.state) {
				return p.t, nil
			}
		}
		return censored, nil
	}
	res := &PassageResult{}
	var times []float64
	var mean moments
	below := make([]int, len(spec.Times))
	add := func(t float64) {
		switch t {
		case never:
			res.Never++
			times = append(times, math.Inf(1))
			return
		case censored:
			res.Censored++
			times = append(times, math.Inf(1))
			return
		}
		times = append(times, t)
		mean.add(t)
		for k, x := range spec.Times {
			if t <= x {
				below[k]++
			}
		}
	}
	halfWidth := func() float64 {
		n := len(times)
		if len(spec.Times) == 0 {
			if res.Never+res.Censored > 0 {
				return math.Inf(1)
			}
			iv := mean.interval(opt.Confidence)
			return iv.HalfWidth() / math.Abs(iv.Value)
		}
		w := 0.0
		for _, k := range below {
			w = math.Max(w, Wilson(k, n, opt.Confidence).HalfWidth())
		}
		return w
	}
	newWorker, events := onePath(s, &opt)
	st, err := replicate(ctx, &opt, newWorker, events, one, add, halfWidth)
	if err != nil {
		return nil, err
	}
	res.Stats = st
	n := len(times)
	for k, t := range spec.Times {
		res.Points = append(res.Points, CDFPoint{T: t, CDF: Wilson(below[k], n, opt.Confidence)})
	}
	res.Band = DKW(n, opt.Confidence)
	res.Mean = Interval{math.NaN(), math.NaN(), math.NaN()}
	if res.Never+res.Censored == 0 {
		res.Mean = mean.interval(opt.Confidence)
	}
	slices.Sort(times)
	for _, p := range spec.Quantiles {
		res.Quantiles = append(res.Quantiles, QuantilePoint{P: p, T: quantileInterval(times, p, opt.Confidence)})
	}
	return res, nil
}
