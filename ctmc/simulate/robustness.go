package simulate

import (
	"context"
	"errors"
	"math"
	"slices"

	"pepa/ctmc"
)

// MachineSpec is a machine of a mapping model: its finishing time is the
// first firing of one of its cycle-closing actions Last (models.Machine).
type MachineSpec struct {
	Name string
	Last []int32
}

// RobustnessSpec asks for the robustness figures of semantics.md section 3
// under initial semantics.
type RobustnessSpec struct {
	Beta     float64
	Machines []MachineSpec
	Quantile float64 // the finishing-time quantile (default 0.99)
}

// MachineEstimate is one machine's estimated figures.
type MachineEstimate struct {
	Name     string
	PByBeta  Interval // Clopper-Pearson
	Mean     Interval // Student t; NaN if some replication never finished
	Quantile Interval
}

// RobustnessResult is the estimated robustness of a mapping.
type RobustnessResult struct {
	Beta     float64
	Machines []MachineEstimate
	// Robustness is min_j P(F_j <= beta); its interval is [min_j lo_j,
	// min_j hi_j] over Clopper-Pearson intervals at level
	// 1 - (1-confidence)/machines (Bonferroni), which hold together with
	// probability at least the confidence, and so bracket the minimum.
	Robustness       Interval
	PAllByBeta       Interval // P(max_j F_j <= beta), Clopper-Pearson
	ExpectedMakespan Interval // E[max_j F_j], Student t; NaN if not every replication finished
	Never, Censored  int      // replications in which some machine never finished
	Stats
}

// Robustness estimates a mapping's robustness figures. The precision rule
// watches the widest interval among the probabilities (absolute).
func Robustness(ctx context.Context, s *ctmc.Structure, spec RobustnessSpec, opt Options) (*RobustnessResult, error) {
	if err := opt.defaults(); err != nil {
		return nil, err
	}
	if len(spec.Machines) == 0 {
		return nil, errors.New("no machine to simulate")
	}
	if !(spec.Beta > 0) {
		return nil, errors.New("beta must be positive")
	}
	if spec.Quantile == 0 {
		spec.Quantile = 0.99
	}
	k := len(spec.Machines)
	// closes[a] lists the machines that action a finishes.
	closes := make([][]int, len(s.Actions))
	for j, m := range spec.Machines {
		for _, a := range m.Last {
			closes[a] = append(closes[a], j)
		}
	}
	const never, censored = -1, -2
	one := func(p *path, i int) ([]float64, error) {
		p.reset(opt.Seed, i, opt.Initial)
		f := make([]float64, k)
		for j := range f {
			f[j] = never
		}
		left := k
		for start := p.events; left > 0; {
			if p.events-start >= opt.MaxEvents {
				for j := range f {
					if f[j] == never {
						f[j] = censored
					}
				}
				return f, nil
			}
			if p.events&0xFFFF == 0 && ctx.Err() != nil {
				return nil, ctx.Err()
			}
			a, _, ok, err := p.step()
			if err != nil {
				return nil, err
			}
			if !ok {
				return f, nil
			}
			for _, j := range closes[a] {
				if f[j] == never {
					f[j] = p.t
					left--
				}
			}
		}
		return f, nil
	}
	res := &RobustnessResult{Beta: spec.Beta}
	samples := make([][]float64, k)
	byBeta := make([]int, k)
	means := make([]moments, k)
	var makespan moments
	allByBeta, n := 0, 0
	add := func(f []float64) {
		n++
		all := true
		finished := true
		mx := 0.0
		for j, t := range f {
			switch t {
			case never, censored:
				if t == censored {
					res.Censored++
				}
				finished, all = false, false
				samples[j] = append(samples[j], math.Inf(1))
				continue
			}
			samples[j] = append(samples[j], t)
			means[j].add(t)
			mx = math.Max(mx, t)
			if t <= spec.Beta {
				byBeta[j]++
			} else {
				all = false
			}
		}
		if !finished {
			res.Never++
		} else {
			makespan.add(mx)
		}
		if all {
			allByBeta++
		}
	}
	bonferroni := 1 - (1-opt.Confidence)/float64(k)
	robust := func() Interval {
		iv := Interval{math.Inf(1), math.Inf(1), math.Inf(1)}
		for j := range spec.Machines {
			cp := ClopperPearson(byBeta[j], n, bonferroni)
			iv.Value = math.Min(iv.Value, cp.Value)
			iv.Lo = math.Min(iv.Lo, cp.Lo)
			iv.Hi = math.Min(iv.Hi, cp.Hi)
		}
		return iv
	}
	halfWidth := func() float64 {
		w := math.Max(robust().HalfWidth(), ClopperPearson(allByBeta, n, opt.Confidence).HalfWidth())
		for j := range spec.Machines {
			w = math.Max(w, ClopperPearson(byBeta[j], n, opt.Confidence).HalfWidth())
		}
		return w
	}
	st, err := replicate(ctx, s, &opt, one, add, halfWidth)
	if err != nil {
		return nil, err
	}
	res.Stats = st
	nan := Interval{math.NaN(), math.NaN(), math.NaN()}
	for j, m := range spec.Machines {
		me := MachineEstimate{Name: m.Name, PByBeta: ClopperPearson(byBeta[j], n, opt.Confidence), Mean: nan}
		if means[j].n == n {
			me.Mean = means[j].interval(opt.Confidence)
		}
		slices.Sort(samples[j])
		me.Quantile = quantileInterval(samples[j], spec.Quantile, opt.Confidence)
		res.Machines = append(res.Machines, me)
	}
	res.Robustness = robust()
	res.PAllByBeta = ClopperPearson(allByBeta, n, opt.Confidence)
	res.ExpectedMakespan = nan
	if res.Never == 0 {
		res.ExpectedMakespan = makespan.interval(opt.Confidence)
	}
	return res, nil
}
