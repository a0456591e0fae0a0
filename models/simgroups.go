package models

import (
	"context"
	"fmt"
	"math"
	"sort"

	"pepa/ctmc"
	"pepa/ctmc/simulate"
	"pepa/passage"
)

// simulateGroup estimates, by simulation, the figures of a group whose
// chain passes MaxGroupStates: on the group's own sub-model (its machines
// stopped as in the exact groups), each machine's figures with their
// intervals, and every replication's time until all its machines have
// finished, which simulatedJoint combines with the exact groups.
func simulateGroup(ctx context.Context, s *ctmc.Structure, j *groupJob, machines []*Machine, stop map[*ctmc.Leaf][]int32, res *Result, g *GroupResult, opt Options) error {
	if opt.Semantics != passage.Initial {
		return fmt.Errorf("%w (simulation estimates initial semantics only)", j.err)
	}
	sub, _, err := s.Restrict(j.leaves, stop)
	if err != nil {
		return err
	}
	spec := simulate.RobustnessSpec{Beta: opt.Beta, Quantile: opt.Quantile, KeepFinish: true}
	for _, i := range j.machines {
		spec.Machines = append(spec.Machines, simulate.MachineSpec{Name: machines[i].Name, Last: sub.ActionsFrom(s, machines[i].Last)})
	}
	sopt := *opt.Simulate
	if sopt.Confidence == 0 {
		sopt.Confidence = 0.95
	}
	if opt.Pragmas != nil && len(opt.Pragmas.Initial) > 0 {
		own := map[string]map[string]float64{}
		for _, l := range sub.Leaves {
			if d, ok := opt.Pragmas.InitialOf(l.Name); ok {
				own[l.Name] = d
			}
		}
		if sopt.Initial, err = simulate.InitialFromNames(sub, own); err != nil {
			return err
		}
	}
	r, err := simulate.Robustness(ctx, sub, spec, sopt)
	if err != nil {
		return fmt.Errorf("simulating the group of %s: %w", g.Components, err)
	}
	for k, i := range j.machines {
		me, mr := r.Machines[k], &res.Machines[i]
		mr.PByBeta, mr.PByBetaLo, mr.PByBetaHi = me.PByBeta.Value, me.PByBeta.Lo, me.PByBeta.Hi
		mr.Mean, mr.MeanLo, mr.MeanHi = me.Mean.Value, me.Mean.Lo, me.Mean.Hi
		mr.Quantile, mr.QuantileLo, mr.QuantileHi = me.Quantile.Value, me.Quantile.Lo, me.Quantile.Hi
	}
	g.Solved = "simulated"
	g.Why = fmt.Sprintf("simulated, %d replications (%v)", r.Replications, j.err)
	g.PAllByBeta, g.PAllLo, g.PAllHi = r.PAllByBeta.Value, r.PAllByBeta.Lo, r.PAllByBeta.Hi
	g.Mean = r.ExpectedMakespan.Value
	g.simFinish = make([]float64, len(r.Finish))
	for k, f := range r.Finish {
		for _, t := range f {
			g.simFinish[k] = math.Max(g.simFinish[k], t)
		}
	}
	res.Confidence = sopt.Confidence
	return nil
}

// simulatedJoint sets the joint figures when some groups are simulated:
// replication k of every simulated group is independent of the others and
// of the exact groups, so with X_k the latest of the simulated groups'
// finishing times in replication k,
//
//	P(max F <= beta) = P_exact * P(X <= beta), the Clopper-Pearson
//	interval of the replications with X_k <= beta, times the exact
//	groups' product (with its error);
//	E[max F] = E[X + integral_X^inf (1 - E(t)) dt], E(t) the exact
//	groups' product of distributions: the mean of Z_k = X_k + M_e -
//	integral_0^X_k (1 - E(t)) dt (M_e = E[max] of the exact groups), with
//	its Student t interval (conditional Monte Carlo: the exact part
//	contributes no sampling error).
func (res *Result) simulatedJoint(dists []passage.Distribution, rest []float64, cdfErr, scale, tol float64) {
	var sims [][]float64
	for _, g := range res.Groups {
		if g.Solved == "simulated" {
			sims = append(sims, g.simFinish)
		}
	}
	n := len(sims[0])
	for _, s := range sims {
		n = min(n, len(s))
	}
	x := make([]float64, n)
	for k := range x {
		for _, s := range sims {
			x[k] = math.Max(x[k], s[k])
		}
	}
	pExact := res.PAllByBeta // the product over the exact groups so far
	byBeta := 0
	for _, v := range x {
		if v <= res.Beta {
			byBeta++
		}
	}
	cp := simulate.ClopperPearson(byBeta, n, res.Confidence)
	res.PAllByBeta = pExact * cp.Value
	res.PAllLo = math.Max(0, pExact-cdfErr) * cp.Lo
	res.PAllHi = math.Min(1, math.Min(1, pExact+cdfErr)*cp.Hi)
	res.Joint += fmt.Sprintf(", %d of them simulated (%d replications; %g%% intervals)", len(sims), n, 100*res.Confidence)
	nan := math.NaN()
	res.ExpectedMakespan, res.MakespanError, res.MakespanLo, res.MakespanHi = nan, nan, nan, nan
	for _, v := range x {
		if math.IsInf(v, 1) {
			return // a replication never finished (or was cut short)
		}
	}
	me, meErr := 0.0, 0.0
	prod := func(float64) float64 { return 1 }
	if len(dists) > 0 {
		if math.IsNaN(scale) {
			return
		}
		prod = cdfProduct(sortByQ(dists))
		me, meErr = MaxMean(prod, tailOf(dists, rest), scale, tol, cdfErr, shortestScale(dists))
		if math.IsInf(me, 1) {
			return
		}
	}
	z := make([]float64, n)
	if len(dists) > 0 {
		// integral_0^x (1 - E) at every sample, by 10-point Gauss-Legendre
		// panels between consecutive sorted samples.
		order := make([]int, n)
		for k := range order {
			order[k] = k
		}
		sort.Slice(order, func(a, b int) bool { return x[order[a]] < x[order[b]] })
		acc, at := 0.0, 0.0
		step := math.Max(scale/50, 1e-300)
		for _, k := range order {
			for at < x[k] {
				b := math.Min(x[k], at+step)
				acc += glIntegral(func(t float64) float64 { return 1 - prod(t) }, at, b)
				at = b
			}
			z[k] = x[k] + me - acc
		}
	} else {
		copy(z, x)
	}
	iv := simulate.MeanInterval(z, res.Confidence)
	res.ExpectedMakespan = iv.Value
	res.MakespanLo, res.MakespanHi = iv.Lo-meErr, iv.Hi+meErr
	res.MakespanError = math.Max(iv.Value-res.MakespanLo, res.MakespanHi-iv.Value)
}

// glIntegral is the 10-point Gauss-Legendre rule on [a, b].
func glIntegral(f func(float64) float64, a, b float64) float64 {
	h := b - a
	s := 0.0
	for k, x := range glNodes {
		s += glWeights[k] * f(a+(x+1)*h/2)
	}
	return s * h / 2
}
