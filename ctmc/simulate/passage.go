package simulate

import (
	"context"
	"errors"
	"math"

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
	one, err := passageReplication(ctx, s, spec, &opt)
	if err != nil {
		return nil, err
	}
	acc := newPassageAcc(spec, opt.Confidence)
	newWorker, events := onePath(s, &opt)
	st, err := replicate(ctx, &opt, 0, newWorker, events, one, acc.add, acc.halfWidth)
	if err != nil {
		return nil, err
	}
	return acc.result(st), nil
}

// passageReplication checks the spec and options (setting defaults) and
// returns the simulation of one replication: its passage time, or never
// or censored.
func passageReplication(ctx context.Context, s *ctmc.Structure, spec PassageSpec, opt *Options) (func(p *path, i int) (float64, error), error) {
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
	seed, maxEvents, initial := opt.Seed, opt.MaxEvents, opt.Initial
	return func(p *path, i int) (float64, error) {
		p.reset(seed, i, initial)
		if spec.Target != nil && spec.Target.Holds(p.state) {
			return 0, nil
		}
		for start := p.events; p.events-start < maxEvents; {
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
	}, nil
}

// passageAcc combines replications' passage times, in index order, into
// the estimates (the one code path of a whole run and of merged ranges).
type passageAcc struct {
	times      []float64 // the grid
	quantiles  []float64
	confidence float64
	res        *PassageResult
	samples    []float64
	mean       moments
	below      []int
}

func newPassageAcc(spec PassageSpec, confidence float64) *passageAcc {
	return &passageAcc{times: spec.Times, quantiles: spec.Quantiles, confidence: confidence,
		res: &PassageResult{}, below: make([]int, len(spec.Times))}
}

func (a *passageAcc) add(t float64) {
	switch t {
	case never:
		a.res.Never++
		a.samples = append(a.samples, math.Inf(1))
		return
	case censored:
		a.res.Censored++
		a.samples = append(a.samples, math.Inf(1))
		return
	}
	a.samples = append(a.samples, t)
	a.mean.add(t)
	for k, x := range a.times {
		if t <= x {
			a.below[k]++
		}
	}
}

func (a *passageAcc) halfWidth() float64 {
	n := len(a.samples)
	if len(a.times) == 0 {
		if a.res.Never+a.res.Censored > 0 {
			return math.Inf(1)
		}
		iv := a.mean.interval(a.confidence)
		return iv.HalfWidth() / math.Abs(iv.Value)
	}
	w := 0.0
	for _, k := range a.below {
		w = math.Max(w, Wilson(k, n, a.confidence).HalfWidth())
	}
	return w
}

func (a *passageAcc) result(st Stats) *PassageResult {
	res := a.res
	res.Stats = st
	n := len(a.samples)
	for k, t := range a.times {
		res.Points = append(res.Points, CDFPoint{T: t, CDF: Wilson(a.below[k], n, a.confidence)})
	}
	res.Band = DKW(n, a.confidence)
	res.Mean = Interval{math.NaN(), math.NaN(), math.NaN()}
	if res.Never+res.Censored == 0 {
		res.Mean = a.mean.interval(a.confidence)
	}
	for _, p := range a.quantiles {
		res.Quantiles = append(res.Quantiles, QuantilePoint{P: p, T: quantileInterval(a.samples, p, a.confidence)})
	}
	return res
}
