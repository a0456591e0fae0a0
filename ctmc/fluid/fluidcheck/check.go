package fluidcheck

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"pepa/ctmc"
	"pepa/ctmc/fluid"
	"pepa/ctmc/simulate"
	"pepa/ctmc/steady"
	"pepa/lang"
	"pepa/passage"
)

// Checker compares with the exact chain when it has at most MaxStates
// states, else with simulation.
type Checker struct {
	// MaxStates bounds the chain solved exactly (0: 2,000,000).
	MaxStates int
	// MaxWork bounds the time series' check: states times uniformization
	// steps (0: 2e10); past it the series is not compared.
	MaxWork float64
	// SimBudget is the wall-clock time simulation may take (0: 30 s).
	SimBudget time.Duration
	// Seed of the simulation.
	Seed uint64
}

var _ fluid.Checker = Checker{}

// Check implements fluid.Checker.
func (k Checker) Check(ctx context.Context, m *lang.Model, fm *fluid.Model, a *fluid.Analysis) (*fluid.Check, error) {
	if k.MaxStates == 0 {
		k.MaxStates = 2_000_000
	}
	if k.MaxWork == 0 {
		k.MaxWork = 2e10
	}
	if k.SimBudget == 0 {
		k.SimBudget = 30 * time.Second
	}
	out := &fluid.Check{SteadyPopulation: math.NaN(), SteadyThroughput: math.NaN(), SteadyStdDev: math.NaN(),
		SeriesPopulation: math.NaN(), SeriesThroughput: math.NaN()}
	s, err := ctmc.Compile(m, ctmc.Options{Aggregate: true, MaxStates: k.MaxStates})
	var c *ctmc.Chain
	if err == nil {
		c, err = ctmc.Derive(ctx, s, ctmc.DeriveOptions{MaxStates: k.MaxStates})
	}
	switch {
	case err == nil:
		return k.exact(ctx, c, fm, a, out)
	case errors.Is(err, ctmc.ErrTooManyStates):
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return k.simulated(ctx, m, fm, a, out, err)
	}
	return nil, err
}

// totals sums the fluid figures of a component's groups: by component
// and local state, and the component's copies.
type totals struct {
	pop    map[[2]string]float64
	copies map[string]float64
	groups map[string]int // fluid groups per component
}

func fluidTotals(fm *fluid.Model, x []float64) totals {
	t := totals{pop: map[[2]string]float64{}, copies: map[string]float64{}, groups: map[string]int{}}
	for _, g := range fm.Groups {
		t.copies[g.Component] += float64(g.Copies)
		t.groups[g.Component]++
		for d, s := range g.States {
			t.pop[[2]string{g.Component, s}] += x[g.Offset+d]
		}
	}
	return t
}

// chainMeans are the chain's mean populations by component and local
// state (ctmc.Utilisations' figures), and the squared counts' means.
func chainMeans(c *ctmc.Chain, pi []float64) (mean, square map[[2]string]float64) {
	mean, square = map[[2]string]float64{}, map[[2]string]float64{}
	type key = [2]string
	var keys []key
	index := map[key]int{}
	for _, l := range c.S.Leaves {
		for _, st := range l.Comp.States {
			kk := key{l.Group, st}
			if _, ok := index[kk]; !ok {
				index[kk] = len(keys)
				keys = append(keys, kk)
			}
		}
	}
	count := make([]float64, len(keys))
	sum, sq := make([]float64, len(keys)), make([]float64, len(keys))
	for i := 0; i < c.N; i++ {
		if pi[i] == 0 {
			continue
		}
		for j := range count {
			count[j] = 0
		}
		st := c.State(i)
		for _, l := range c.S.Leaves {
			loc := l.Local(st)
			for d, name := range l.Comp.States {
				if n := l.Population(loc, d); n > 0 {
					count[index[key{l.Group, name}]] += float64(n)
				}
			}
		}
		for j, n := range count {
			sum[j] += pi[i] * n
			sq[j] += pi[i] * n * n
		}
	}
	for j, kk := range keys {
		mean[kk], square[kk] = sum[j], sq[j]
	}
	return mean, square
}

func (k Checker) exact(ctx context.Context, c *ctmc.Chain, fm *fluid.Model, a *fluid.Analysis, out *fluid.Check) (*fluid.Check, error) {
	out.Against = "exact"
	out.States = c.N
	out.How = fmt.Sprintf("the chain of count vectors, %d states", c.N)
	if a.Steady != nil {
		if len(c.Deadlocks) > 0 {
			out.How += fmt.Sprintf("; it deadlocks (state %d: %s): no steady state to compare", c.Deadlocks[0], c.StateString(int(c.Deadlocks[0])))
		} else {
			res, err := steady.Solve(ctx, c, steady.Options{StateProbabilities: true})
			if err != nil && ctx.Err() == nil {
				// A stiff chain may not reach 1e-12: 1e-8 is plenty to
				// measure a fluid approximation's error.
				res, err = steady.Solve(ctx, c, steady.Options{StateProbabilities: true, Tolerance: 1e-8})
			}
			switch {
			case ctx.Err() != nil:
				return nil, ctx.Err()
			case err != nil:
				out.How += fmt.Sprintf("; its steady state could not be solved (%v)", err)
			default:
				out.How += fmt.Sprintf(", steady state by %s (throughputs within %.2g)", res.Method, res.MaxThroughputError)
				k.compareSteady(c, res.Pi, fm, a, out)
			}
		}
	}
	if a.Series != nil {
		if err := k.compareSeries(ctx, c, fm, a, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (k Checker) compareSteady(c *ctmc.Chain, pi []float64, fm *fluid.Model, a *fluid.Analysis, out *fluid.Check) {
	mean, square := chainMeans(c, pi)
	ft := fluidTotals(fm, a.Steady.Populations)
	out.SteadyPopulation = 0
	for _, g := range fm.Groups {
		if ft.groups[g.Component] > 1 && g.Name != g.Component {
			continue // its component's row is the first group's
		}
		for _, s := range g.States {
			kk := [2]string{g.Component, s}
			fv, cv := ft.pop[kk], mean[kk]
			out.Rows = append(out.Rows, fluid.CheckRow{Kind: "population", Group: g.Component, Name: s, Fluid: fv, Chain: cv, Low: math.NaN(), High: math.NaN(), Difference: fv - cv})
			out.SteadyPopulation = math.Max(out.SteadyPopulation, math.Abs(fv-cv)/ft.copies[g.Component])
		}
	}
	tps := ctmc.Throughputs(c, pi)
	k.throughputRows(tps, fm, a.Steady.Throughputs, out)
	if a.Steady.Variances != nil {
		out.SteadyStdDev = 0
		for _, g := range fm.Groups {
			if ft.groups[g.Component] > 1 {
				continue // the sum's variance needs the covariances between groups
			}
			for d, s := range g.States {
				kk := [2]string{g.Component, s}
				cv := math.Sqrt(math.Max(square[kk]-mean[kk]*mean[kk], 0))
				fv := math.Sqrt(a.Steady.Variances[g.Offset+d])
				out.Rows = append(out.Rows, fluid.CheckRow{Kind: "stddev", Group: g.Component, Name: s, Fluid: fv, Chain: cv, Low: math.NaN(), High: math.NaN(), Difference: fv - cv})
				out.SteadyStdDev = math.Max(out.SteadyStdDev, math.Abs(fv-cv)/float64(g.Copies))
			}
		}
	}
}

func (k Checker) throughputRows(tps []ctmc.Throughput, fm *fluid.Model, fluidTP []float64, out *fluid.Check) {
	chain := map[string]float64{}
	top := 0.0
	for _, t := range tps {
		chain[t.Action] = t.Value
		top = math.Max(top, t.Value)
	}
	out.SteadyThroughput = 0
	for i, l := range fm.Labels {
		fv, cv := fluidTP[i], chain[l]
		out.Rows = append(out.Rows, fluid.CheckRow{Kind: "throughput", Name: l, Fluid: fv, Chain: cv, Low: math.NaN(), High: math.NaN(), Difference: fv - cv})
		if top > 0 {
			out.SteadyThroughput = math.Max(out.SteadyThroughput, math.Abs(fv-cv)/top)
		}
	}
}

// compareSeries steps the chain's transient distribution from grid time
// to grid time (passage.Hidden with nothing observed is alpha exp(Q t),
// within 1e-12 in total) and compares the means at every time.
func (k Checker) compareSeries(ctx context.Context, c *ctmc.Chain, fm *fluid.Model, a *fluid.Analysis, out *fluid.Check) error {
	times := a.Series.Times
	if len(times) == 0 {
		return nil
	}
	q := 0.0
	for i := 0; i < c.N; i++ {
		q = math.Max(q, c.ExitRate(i))
	}
	work := float64(c.NumTransitions()) * (q*times[len(times)-1]*1.02 + 10*float64(len(times)))
	if work > k.MaxWork {
		out.How += fmt.Sprintf("; the time series is not compared (its transient solution would take %.2g transition visits, more than %.2g)", work, k.MaxWork)
		return nil
	}
	pi := make([]float64, c.N)
	pi[0] = 1
	t := 0.0
	out.SeriesPopulation, out.SeriesThroughput = 0, 0
	x := make([]float64, fm.Dim)
	tp := make([]float64, len(fm.Labels))
	for ti, tk := range times {
		if tk > t {
			var err error
			if pi, err = passage.Hidden(ctx, c, pi, nil, tk-t, 1e-12/float64(len(times))); err != nil {
				return fmt.Errorf("checking the time series against the chain: %w", err)
			}
			t = tk
		}
		mean, _ := chainMeans(c, pi)
		for i := range x {
			x[i] = a.Series.Populations[i][ti]
		}
		ft := fluidTotals(fm, x)
		for kk, fv := range ft.pop {
			out.SeriesPopulation = math.Max(out.SeriesPopulation, math.Abs(fv-mean[kk])/ft.copies[kk[0]])
		}
		chain := map[string]float64{}
		top := 0.0
		for _, th := range ctmc.Throughputs(c, pi) {
			chain[th.Action] = th.Value
			top = math.Max(top, th.Value)
		}
		for i := range tp {
			tp[i] = a.Series.Throughputs[i][ti]
		}
		for i, l := range fm.Labels {
			if top > 0 {
				out.SeriesThroughput = math.Max(out.SeriesThroughput, math.Abs(tp[i]-chain[l])/top)
			}
		}
	}
	out.How += fmt.Sprintf("; transient means at the %d times by uniformization", len(times))
	return nil
}

// simulated compares the steady state with simulation's intervals, on
// the structure with arrays aggregated when their count vectors fit.
func (k Checker) simulated(ctx context.Context, m *lang.Model, fm *fluid.Model, a *fluid.Analysis, out *fluid.Check, why error) (*fluid.Check, error) {
	out.Against = "none"
	if a.Steady == nil {
		out.How = fmt.Sprintf("the chain is too large to solve (%v); simulation is compared with the steady state only (ask for it)", why)
		return out, nil
	}
	s, err := ctmc.Compile(m, ctmc.Options{Aggregate: true, MaxStates: 1 << 24})
	if err != nil {
		out.How = fmt.Sprintf("the chain is too large to solve (%v), and to simulate: %v", why, err)
		return out, nil
	}
	opt := simulate.Options{Seed: k.Seed, Confidence: 0.95, Precision: 0.005, Budget: k.SimBudget}
	res, err := simulate.Steady(ctx, s, simulate.SteadySpec{}, opt)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		out.How = fmt.Sprintf("the chain is too large to solve (%v); simulation failed: %v", why, err)
		return out, nil
	}
	out.Against = "simulation"
	out.Confidence = opt.Confidence
	out.How = fmt.Sprintf("the chain is too large to solve (%v); simulation: %d streams of %d batches, %d events, %s",
		why, res.Streams, res.Batches, res.Events, res.Elapsed.Round(time.Millisecond))
	ft := fluidTotals(fm, a.Steady.Populations)
	out.SteadyPopulation = 0
	for _, p := range res.Populations {
		kk := [2]string{p.Component, p.State}
		fv := ft.pop[kk]
		v, lo, hi := p.Bounds()
		out.Rows = append(out.Rows, fluid.CheckRow{Kind: "population", Group: p.Component, Name: p.State, Fluid: fv, Chain: v, Low: lo, High: hi, Difference: fv - v})
		out.Compared++
		if !p.Contains(fv) {
			out.Outside++
		}
		out.SteadyPopulation = math.Max(out.SteadyPopulation, math.Abs(fv-v)/ft.copies[p.Component])
	}
	top := 0.0
	for _, t := range res.Throughputs {
		top = math.Max(top, t.Value)
	}
	out.SteadyThroughput = 0
	for _, t := range res.Throughputs {
		fv := 0.0
		for i, l := range fm.Labels {
			if l == t.Action {
				fv = a.Steady.Throughputs[i]
			}
		}
		v, lo, hi := t.Bounds()
		out.Rows = append(out.Rows, fluid.CheckRow{Kind: "throughput", Name: t.Action, Fluid: fv, Chain: v, Low: lo, High: hi, Difference: fv - v})
		out.Compared++
		if !t.Contains(fv) {
			out.Outside++
		}
		if top > 0 {
			out.SteadyThroughput = math.Max(out.SteadyThroughput, math.Abs(fv-v)/top)
		}
	}
	return out, nil
}
