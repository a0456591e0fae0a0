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
	one, err := robustnessReplication(ctx, s, &spec, &opt)
	if err != nil {
		return nil, err
	}
	acc := newRobustnessAcc(spec, opt.Confidence)
	st, err := replicate(ctx, s, &opt, 0, one, acc.add, acc.halfWidth)
	if err != nil {
		return nil, err
	}
	return acc.result(st), nil
}

// Finishing-time codes of a replication's machine that did not finish.
const (
	never    = -1 // the path deadlocked first
	censored = -2 // Options.MaxEvents was reached first
)

// robustnessReplication checks the spec and options (setting defaults) and
// returns the simulation of one replication: every machine's finishing
// time, or never or censored.
func robustnessReplication(ctx context.Context, s *ctmc.Structure, spec *RobustnessSpec, opt *Options) (func(p *path, i int) ([]float64, error), error) {
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
	seed, maxEvents, initial := opt.Seed, opt.MaxEvents, opt.Initial
	return func(p *path, i int) ([]float64, error) {
		p.reset(seed, i, initial)
		f := make([]float64, k)
		for j := range f {
			f[j] = never
		}
		left := k
		for start := p.events; left > 0; {
			if p.events-start >= maxEvents {
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
	}, nil
}

// robustnessAcc combines replications' finishing times, in index order,
// into the estimates: the one code path of a whole run and of merged
// ranges, so that both give the same figures bit for bit.
type robustnessAcc struct {
	spec       RobustnessSpec
	confidence float64
	res        *RobustnessResult
	samples    [][]float64
	byBeta     []int
	means      []moments
	makespan   moments
	allByBeta  int
	n          int
}

func newRobustnessAcc(spec RobustnessSpec, confidence float64) *robustnessAcc {
	k := len(spec.Machines)
	return &robustnessAcc{spec: spec, confidence: confidence, res: &RobustnessResult{Beta: spec.Beta},
		samples: make([][]float64, k), byBeta: make([]int, k), means: make([]moments, k)}
}

func (a *robustnessAcc) add(f []float64) {
	a.n++
	all := true
	finished := true
	mx := 0.0
	for j, t := range f {
		switch t {
		case never, censored:
			if t == censored {
				a.res.Censored++
			}
			finished, all = false, false
			a.samples[j] = append(a.samples[j], math.Inf(1))
			continue
		}
		a.samples[j] = append(a.samples[j], t)
		a.means[j].add(t)
		mx = math.Max(mx, t)
		if t <= a.spec.Beta {
			a.byBeta[j]++
		} else {
			all = false
		}
	}
	if !finished {
		a.res.Never++
	} else {
		a.makespan.add(mx)
	}
	if all {
		a.allByBeta++
	}
}

func (a *robustnessAcc) robust() Interval {
	bonferroni := 1 - (1-a.confidence)/float64(len(a.spec.Machines))
	iv := Interval{math.Inf(1), math.Inf(1), math.Inf(1)}
	for j := range a.spec.Machines {
		cp := ClopperPearson(a.byBeta[j], a.n, bonferroni)
		iv.Value = math.Min(iv.Value, cp.Value)
		iv.Lo = math.Min(iv.Lo, cp.Lo)
		iv.Hi = math.Min(iv.Hi, cp.Hi)
	}
	return iv
}

func (a *robustnessAcc) halfWidth() float64 {
	w := math.Max(a.robust().HalfWidth(), ClopperPearson(a.allByBeta, a.n, a.confidence).HalfWidth())
	for j := range a.spec.Machines {
		w = math.Max(w, ClopperPearson(a.byBeta[j], a.n, a.confidence).HalfWidth())
	}
	return w
}

func (a *robustnessAcc) result(st Stats) *RobustnessResult {
	res := a.res
	res.Stats = st
	nan := Interval{math.NaN(), math.NaN(), math.NaN()}
	for j, m := range a.spec.Machines {
		me := MachineEstimate{Name: m.Name, PByBeta: ClopperPearson(a.byBeta[j], a.n, a.confidence), Mean: nan}
		if a.means[j].n == a.n {
			me.Mean = a.means[j].interval(a.confidence)
		}
		slices.Sort(a.samples[j])
		me.Quantile = quantileInterval(a.samples[j], a.spec.Quantile, a.confidence)
		res.Machines = append(res.Machines, me)
	}
	res.Robustness = a.robust()
	res.PAllByBeta = ClopperPearson(a.allByBeta, a.n, a.confidence)
	res.ExpectedMakespan = nan
	if res.Never == 0 {
		res.ExpectedMakespan = a.makespan.interval(a.confidence)
	}
	return res
}
