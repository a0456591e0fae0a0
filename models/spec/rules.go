package spec

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
)

// RandomRule asks for random mappings: every application on a machine
// drawn uniformly, the whole draw repeated until every machine has at
// least MinPerMachine applications (so every such mapping is equally
// likely), each machine computing its applications in specification order.
// Count mappings are drawn, named NAME-1, ..., NAME-Count when Count > 1;
// mapping k draws from its own stream of Seed, so adding mappings leaves
// the earlier ones as they were.
type RandomRule struct {
	Seed          uint64 `json:"seed"`
	MinPerMachine int    `json:"min_per_machine"`
	Count         int    `json:"count"`
}

// maxRandomDraws bounds the draws of one random mapping: past it the
// constraint is too tight for rejection, and the specification is refused.
const maxRandomDraws = 1_000_000

// heuristicNames are the heuristics a mapping may name, as optimize names
// them (optimize.go).
func heuristicNames() []string {
	names := make([]string, len(Heuristics))
	for i, h := range Heuristics {
		names[i] = h.Name
	}
	return names
}

func isRule(m Mapping) bool { return m.Heuristic != "" || m.Random != nil }

// ruleName is a rule mapping's default name: the heuristic's, or "random".
func ruleName(m Mapping) string {
	if m.Heuristic != "" {
		for _, h := range Heuristics {
			if strings.EqualFold(h.Name, m.Heuristic) {
				return h.Name
			}
		}
		return "" // checkRule reports it
	}
	return "random"
}

// checkRule checks a mapping by rule (its name is checked by the caller);
// apps and machines are -1 when the matrix failed (its size unknown).
func (r *resolver) checkRule(path string, m Mapping, apps, machines int) {
	switch {
	case m.Allocation != nil:
		r.errorf(path, "mapping %s: give an allocation, a heuristic or a random rule, one of them", m.Name)
	case m.Heuristic != "" && m.Random != nil:
		r.errorf(path, "mapping %s: give a heuristic or a random rule, not both", m.Name)
	case m.Heuristic != "":
		if ruleName(m) == "" {
			r.errorf(path+".heuristic", "mapping %s: unknown heuristic %q (the heuristics are %s)", m.Name, m.Heuristic, strings.Join(heuristicNames(), ", "))
		}
	default:
		rr := m.Random
		if rr.MinPerMachine < 0 {
			r.errorf(path+".random.min_per_machine", "mapping %s: min_per_machine must not be negative, found %d", m.Name, rr.MinPerMachine)
		} else if apps >= 0 && machines > 0 && rr.MinPerMachine > apps/machines { // MinPerMachine*machines > apps, without overflow
			r.errorf(path+".random.min_per_machine", "mapping %s: %d applications cannot give each of %d machines %d of them", m.Name, apps, machines, rr.MinPerMachine)
		}
		if rr.Count < 0 || rr.Count > 100000 {
			r.errorf(path+".random.count", "mapping %s: count must be from 1 to 100000 (0 means 1), found %d", m.Name, rr.Count)
		}
	}
}

// ruleMappings replaces every mapping by rule with its allocations, in
// place in the list (a random rule with a count gives that many), and
// checks that the names are still distinct.
func (r *resolver) ruleMappings(in *Instance) {
	var out []Mapping
	seen := map[string]string{}
	etm := [][]float64(nil)
	for k, m := range in.Mappings {
		path := fmt.Sprintf("mappings[%d]", k)
		var got []Mapping
		switch {
		case m.Heuristic != "":
			if etm == nil {
				etm = in.ExpectedTimes()
			}
			name := ruleName(m)
			for _, h := range Heuristics {
				if h.Name == name {
					got = append(got, in.MappingOf(m.Name, h.Run(in, etm)))
				}
			}
		case m.Random != nil:
			count := max(m.Random.Count, 1)
			for c := 1; c <= count; c++ {
				name := m.Name
				if count > 1 {
					name = fmt.Sprintf("%s-%d", m.Name, c)
				}
				alloc, ok := randomAllocation(len(in.Apps), len(in.Machines), m.Random.MinPerMachine, m.Random.Seed, uint64(c))
				if !ok {
					r.errorf(path+".random", "mapping %s: %d random draws gave no mapping with at least %d applications on each of %d machines: ask for fewer", name, maxRandomDraws, m.Random.MinPerMachine, len(in.Machines))
					return
				}
				got = append(got, in.MappingOf(name, alloc))
			}
		default:
			got = []Mapping{m}
		}
		for _, g := range got {
			if prev, ok := seen[g.Name]; ok {
				r.errorf(path+".name", "two mappings are named %q (%s and %s)", g.Name, prev, path)
			}
			seen[g.Name] = path
		}
		out = append(out, got...)
	}
	in.Mappings = out
}

// MappingOf names an allocation (per machine, application indices in
// order).
func (in *Instance) MappingOf(name string, alloc [][]int) Mapping {
	m := Mapping{Name: name, Allocation: map[string][]string{}}
	for j, apps := range alloc {
		names := make([]string, 0, len(apps))
		for _, a := range apps {
			names = append(names, in.Apps[a])
		}
		m.Allocation[in.Machines[j]] = names
	}
	return m
}

// randomAllocation draws a mapping of apps applications onto machines
// machines with at least minPer on each, uniformly among all such
// mappings (rejection), from stream (seed, stream): per machine, its
// applications in increasing order. false when maxRandomDraws draws gave
// none.
func randomAllocation(apps, machines, minPer int, seed, stream uint64) ([][]int, bool) {
	src := rand.NewPCG(seed, 0x52414e444d415031^stream) // "RANDMAP1"
	bound := uint64(machines)
	limit := -bound % bound // 2^64 mod machines: outputs below it are rejected
	draw := func() int {
		for {
			if x := src.Uint64(); x >= limit {
				return int(x % bound)
			}
		}
	}
	machineOf := make([]int, apps)
	load := make([]int, machines)
	for try := 0; try < maxRandomDraws; try++ {
		clear(load)
		for a := range machineOf {
			machineOf[a] = draw()
			load[machineOf[a]]++
		}
		if minPer > 0 && slices.Min(load) < minPer {
			continue
		}
		alloc := make([][]int, machines)
		for a, j := range machineOf {
			alloc[j] = append(alloc[j], a)
		}
		for _, l := range alloc {
			sort.Ints(l)
		}
		return alloc, true
	}
	return nil, false
}
