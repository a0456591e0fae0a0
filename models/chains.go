package models

import (
	"fmt"
	"math"

	"pepa/ctmc"
	"pepa/ctmc/simulate"
)

// Stopped returns the structure on which the makespan figures of a flat
// analysis are computed: for initial semantics (and without Cycling), when
// some machine is coupled to another component, the model with every
// machine's cycle-closing actions leading to a terminal local state
// (semantics.md section 3, "A finished machine stops"); otherwise s
// itself. Machines that share nothing have the same figures either way,
// and their chain stays as small as the model's.
func Stopped(s *ctmc.Structure, opt Options) (*ctmc.Structure, error) {
	opt.defaults()
	if !opt.stopped() {
		return s, nil
	}
	all, err := FindMachines(s, nil)
	if err != nil {
		return nil, err
	}
	isMachine := map[*ctmc.Leaf]bool{}
	for _, m := range all {
		isMachine[m.Leaf] = true
	}
	coupled := false
	for _, g := range s.Groups() {
		if len(g) > 1 {
			for _, l := range g {
				coupled = coupled || isMachine[l]
			}
		}
	}
	if !coupled {
		return s, nil
	}
	return StopAll(s)
}

// StopAll returns the model with every machine stopped once it has
// finished, coupled or not (pepa states --stopped).
func StopAll(s *ctmc.Structure) (*ctmc.Structure, error) {
	all, err := FindMachines(s, nil)
	if err != nil {
		return nil, err
	}
	sub, _, err := s.Restrict(nil, stopMap(all))
	return sub, err
}

// stopMap maps every machine's leaf to its cycle-closing actions.
func stopMap(machines []*Machine) map[*ctmc.Leaf][]int32 {
	out := map[*ctmc.Leaf][]int32{}
	for _, m := range machines {
		out[m.Leaf] = m.Last
	}
	return out
}

// SimulationSpec is what the simulator needs to estimate the robustness
// figures of the named machines (all detected ones when named is empty):
// each machine's cycle-closing actions and, unless cycling, every machine
// of the model (analysed or not) stopped once it has finished (semantics.md
// section 3). It also returns the machines.
func SimulationSpec(s *ctmc.Structure, beta float64, named []string, cycling bool) (simulate.RobustnessSpec, []*Machine, error) {
	ms, err := FindMachines(s, named)
	if err != nil {
		return simulate.RobustnessSpec{}, nil, err
	}
	spec := simulate.RobustnessSpec{Beta: beta}
	for _, m := range ms {
		spec.Machines = append(spec.Machines, simulate.MachineSpec{Name: m.Name, Last: m.Last})
	}
	if !cycling {
		all, err := FindMachines(s, nil)
		if err != nil {
			all = ms // named machines the detection misses
		}
		for _, m := range append(all, ms...) {
			spec.Stop = append(spec.Stop, simulate.MachineSpec{Name: m.Name, Last: m.Last})
		}
	}
	return spec, ms, nil
}

// initialDistribution is the start distribution over c's states that the
// pragmas give (nil: the initial state): components with a //pepa:initial
// distribution start in its states, all others in their first state.
func initialDistribution(c *ctmc.Chain, pr *Pragmas) ([]float64, error) {
	if pr == nil || len(pr.Initial) == 0 {
		return nil, nil
	}
	type leafDist struct {
		leaf *ctmc.Leaf
		p    []float64 // by leaf-local state
	}
	var dists []leafDist
	has := map[*ctmc.Leaf]bool{}
	for comp, d := range pr.Initial {
		var leaf *ctmc.Leaf
		for _, l := range c.S.Leaves {
			if l.Name == comp {
				leaf = l
			}
		}
		if leaf == nil {
			return nil, fmt.Errorf("pepa:initial names component %s, which the model does not have", comp)
		}
		p := make([]float64, leaf.NumLocal)
		for name, x := range d {
			found := false
			for st := 0; st < leaf.NumLocal; st++ {
				if leaf.LocalName(st) == name {
					p[st], found = x, true
				}
			}
			if !found {
				return nil, fmt.Errorf("pepa:initial: component %s has no local state %s", comp, name)
			}
		}
		dists = append(dists, leafDist{leaf, p})
		has[leaf] = true
	}
	alpha := make([]float64, c.N)
	total := 0.0
	for i := 0; i < c.N; i++ {
		st := c.State(i)
		x := 1.0
		for _, l := range c.S.Leaves {
			if !has[l] && l.Local(st) != 0 {
				x = 0
				break
			}
		}
		for _, d := range dists {
			x *= d.p[d.leaf.Local(st)]
		}
		alpha[i] = x
		total += x
	}
	if math.Abs(total-1) > 1e-9 {
		return nil, fmt.Errorf("pepa:initial: only %g of the initial distribution falls on reachable states", total)
	}
	return alpha, nil
}

// PartStart is the start distribution of a group's chain c (GroupChain)
// from the model's pragmas (nil: none): the initial state, or the
// //pepa:initial distributions of its components.
func PartStart(c *ctmc.Chain, pr *Pragmas) ([]float64, error) { return partStart(c, pr) }

// partStart is the start distribution of the chain of a part of a model
// (a group): its components with a //pepa:initial distribution among
// pr's start in its states, the others in their first.
func partStart(c *ctmc.Chain, pr *Pragmas) ([]float64, error) {
	var own *Pragmas
	if pr != nil {
		own = &Pragmas{Initial: map[string]map[string]float64{}}
		for _, l := range c.S.Leaves {
			if d, ok := pr.InitialOf(l.Name); ok {
				own.Initial[l.Name] = d
			}
		}
	}
	alpha, err := initialDistribution(c, own)
	if err != nil {
		return nil, err
	}
	if alpha == nil {
		alpha = make([]float64, c.N)
		alpha[0] = 1
	}
	return alpha, nil
}

// leafIn is the leaf of chain c's structure named like l.
func leafIn(c *ctmc.Chain, l *ctmc.Leaf) *ctmc.Leaf {
	for _, x := range c.S.Leaves {
		if x.Name == l.Name {
			return x
		}
	}
	return nil
}

func sameSet(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
