package simulate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"

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
	// KeepFinish keeps every replication's finishing times
	// (RobustnessResult.Finish), for figures combined with others.
	KeepFinish bool
	// Stop lists the machines (reported or not) that stop once they have
	// finished: their Last actions lead to a terminal local state
	// (ctmc.Structure.Restrict), so they take no further part in what they
	// share (semantics.md section 3).
	Stop []MachineSpec
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
	// Finish holds, with RobustnessSpec.KeepFinish, each replication's
	// finishing times by machine (+Inf: never, or censored), in
	// replication order.
	Finish [][]float64
	Stats
}

// Robustness estimates a mapping's robustness figures. The precision rule
// watches the widest interval among the probabilities (absolute).
func Robustness(ctx context.Context, s *ctmc.Structure, spec RobustnessSpec, opt Options) (*RobustnessResult, error) {
	r, err := robustnessReplication(ctx, s, &spec, &opt)
	if err != nil {
		return nil, err
	}
	acc := newRobustnessAcc(spec, opt.Confidence)
	st, err := replicate(ctx, &opt, 0, r.newWorker, r.events, r.one, acc.add, acc.halfWidth)
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

// robustnessWorker is a replication's simulation of every group on a
// worker's paths, one per group.
type robustnessWorker struct {
	one       func(w []*path, i int) ([]float64, error)
	newWorker func() []*path
	events    func(w []*path) int64
}

// robustnessReplication checks the spec and options (setting defaults) and
// returns the simulation of one replication: every machine's finishing
// time, or never or censored.
func robustnessReplication(ctx context.Context, s *ctmc.Structure, spec *RobustnessSpec, opt *Options) (*robustnessWorker, error) {
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
	groups, err := machineGroups(s, *spec, opt.Initial)
	if err != nil {
		return nil, err
	}
	seed, maxEvents, general := opt.Seed, opt.MaxEvents, opt.general
	// A replication simulates each group on its own sub-model (groups
	// never interact), group g's stream seeded from (Seed, g) and the
	// replication's index, until the group's machines have all finished.
	one := func(w []*path, i int) ([]float64, error) {
		f := make([]float64, k)
		for j := range f {
			f[j] = never
		}
		for g, grp := range groups {
			p := w[g]
			p.reset(groupSeed(seed, g), i, grp.initial)
			left := len(grp.machines)
			for start := p.events; left > 0; {
				if p.events-start >= maxEvents {
					for _, j := range grp.machines {
						if f[j] == never {
							f[j] = censored
						}
					}
					break
				}
				if p.events&0xFFFF == 0 && ctx.Err() != nil {
					return nil, ctx.Err()
				}
				a, _, ok, err := p.step()
				if err != nil {
					return nil, err
				}
				if !ok {
					break
				}
				for _, j := range grp.closes[a] {
					if f[j] == never {
						f[j] = p.t
						left--
					}
				}
			}
		}
		return f, nil
	}
	newWorker := func() []*path {
		w := make([]*path, len(groups))
		for g, grp := range groups {
			w[g] = newPath(grp.s, findTables(grp.s, general))
		}
		return w
	}
	events := func(w []*path) int64 {
		n := int64(0)
		for _, p := range w {
			n += p.events
		}
		return n
	}
	return &robustnessWorker{one: one, newWorker: newWorker, events: events}, nil
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
	if a.spec.KeepFinish {
		kept := make([]float64, len(f))
		for j, t := range f {
			if t < 0 {
				t = math.Inf(1)
			}
			kept[j] = t
		}
		a.res.Finish = append(a.res.Finish, kept)
	}
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
	// The quantiles select over every run's sample (millions under a
	// budget): one machine a goroutine.
	quantiles := make([]Interval, len(a.spec.Machines))
	var wg sync.WaitGroup
	for j := range a.spec.Machines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			quantiles[j] = quantileInterval(a.samples[j], a.spec.Quantile, a.confidence)
		}()
	}
	wg.Wait()
	for j, m := range a.spec.Machines {
		me := MachineEstimate{Name: m.Name, PByBeta: ClopperPearson(a.byBeta[j], a.n, a.confidence), Mean: nan, Quantile: quantiles[j]}
		if a.means[j].n == a.n {
			me.Mean = a.means[j].interval(a.confidence)
		}
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

// simGroup is one group of coupled machines on its own sub-model.
type simGroup struct {
	s        *ctmc.Structure
	machines []int   // indices into the spec's machines
	closes   [][]int // by action: the machines it finishes
	initial  []LeafDistribution
}

// machineGroups splits the machines into their groups (ctmc's Groups),
// each with its sub-model (machines stopped with spec.Stop) and its share
// of the start distributions. Groups without a machine are left out: they
// cannot change a machine's finishing time.
func machineGroups(s *ctmc.Structure, spec RobustnessSpec, initial []LeafDistribution) ([]*simGroup, error) {
	byName := map[string]*ctmc.Leaf{}
	for _, l := range s.Leaves {
		byName[l.Name] = l
	}
	machineOf := map[*ctmc.Leaf]int{}
	for j, m := range spec.Machines {
		l, ok := byName[m.Name]
		if !ok {
			return nil, fmt.Errorf("no component %s", m.Name)
		}
		machineOf[l] = j
	}
	stop := map[*ctmc.Leaf][]int32{}
	for _, m := range spec.Stop {
		l, ok := byName[m.Name]
		if !ok {
			return nil, fmt.Errorf("no component %s", m.Name)
		}
		stop[l] = m.Last
	}
	var out []*simGroup
	for _, g := range s.Groups() {
		grp := &simGroup{}
		for _, l := range g {
			if j, ok := machineOf[l]; ok {
				grp.machines = append(grp.machines, j)
			}
		}
		if len(grp.machines) == 0 {
			continue
		}
		sub, mapping, err := s.Restrict(g, stop)
		if err != nil {
			return nil, err
		}
		grp.s = sub
		grp.closes = make([][]int, len(sub.Actions))
		for _, j := range grp.machines {
			for _, a := range sub.ActionsFrom(s, spec.Machines[j].Last) {
				grp.closes[a] = append(grp.closes[a], j)
			}
		}
		for _, d := range initial {
			if l := mapping[d.Leaf]; l != nil {
				p := d.P
				if l.NumLocal > len(p) { // a stopped leaf: its terminal state is never a start
					p = append(append([]float64(nil), p...), make([]float64, l.NumLocal-len(p))...)
				}
				grp.initial = append(grp.initial, LeafDistribution{Leaf: l, P: p})
			}
		}
		out = append(out, grp)
	}
	if len(out) == 0 {
		return nil, errors.New("no machine to simulate")
	}
	return out, nil
}

// groupSeed is group g's seed: the run's for the first group, a mix of it
// and g for the others, so that groups draw unrelated streams.
func groupSeed(seed uint64, g int) uint64 {
	if g == 0 {
		return seed
	}
	return mix(seed ^ mix(uint64(g)*0xA0761D6478BD642F))
}
