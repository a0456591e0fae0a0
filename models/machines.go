package models

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"pepa/ctmc"
	"pepa/internal/option"
	"pepa/passage"
)

// Machine is a component that computes applications in a cycle.
type Machine struct {
	Name  string
	Leaf  *ctmc.Leaf
	First []int32 // application actions leaving its initial local state
	Last  []int32 // cycle-closing application actions: those re-entering it
	Apps  int     // number of distinct application actions
}

// FirstNames and LastNames give the actions by name.
func (m *Machine) FirstNames(s *ctmc.Structure) []string { return names(s, m.First) }
func (m *Machine) LastNames(s *ctmc.Structure) []string  { return names(s, m.Last) }

func names(s *ctmc.Structure, ids []int32) []string {
	out := make([]string, len(ids))
	for i, a := range ids {
		out[i] = s.Actions[a]
	}
	return out
}

// isMachine reports whether a leaf is a machine: a single sequential
// component (not an aggregated array) with every activity active and
// visible, that returns to its initial local state, and some of whose
// actions other components perform passively (its applications). A machine
// with one application has a single local state and a self-loop.
func isMachine(l *ctmc.Leaf, passive map[int32]bool) bool {
	if l.Copies != 1 {
		return false
	}
	served := false
	for s := 0; s < l.NumLocal; s++ {
		for _, t := range l.Transitions(s) {
			served = served || passive[t.Action]
		}
	}
	if !served {
		return false
	}
	closes := false
	for s := 0; s < l.NumLocal; s++ {
		for _, t := range l.Transitions(s) {
			if t.Passive || t.Action == ctmc.TauAction {
				return false
			}
			if closesCycle(l, t.Target) {
				closes = true
			}
		}
	}
	return closes
}

// closesCycle reports whether moving to local state target closes a
// machine's cycle: it is the initial state, or the terminal state the stop
// rule gives a finished machine (ctmc.Structure.Restrict).
func closesCycle(l *ctmc.Leaf, target int) bool {
	return target == 0 || finishedState(l) == target
}

// finishedState is the terminal local state of a stopped machine, or -1.
func finishedState(l *ctmc.Leaf) int {
	if l.Counts == nil && l.NumLocal > 1 && l.LocalName(l.NumLocal-1) == ctmc.FinishedState {
		return l.NumLocal - 1
	}
	return -1
}

// machineOf describes a machine. Its first and last actions are the
// application actions (those other components perform passively) that leave
// and re-enter its initial local state; its own private activities (an
// owner process written into the machine, work phases) are neither. Apps is
// the number of distinct applications it computes: the actions it performs
// that an inert component (one local state, passive only: an application)
// performs passively, or, for a machine that performs none, every
// application action (a transfer to a shared network is not an
// application, though the network performs it passively).
func machineOf(l *ctmc.Leaf, passive, inertApps map[int32]bool) *Machine {
	m := &Machine{Name: l.Name, Leaf: l}
	// Application actions when some leave/enter the initial state, else
	// every action that does (semantics.md section 3).
	var first, last [2]map[int32]bool // [0]: application actions, [1]: all
	for i := range first {
		first[i], last[i] = map[int32]bool{}, map[int32]bool{}
	}
	apps, inert := map[int32]bool{}, map[int32]bool{}
	for s := 0; s < l.NumLocal; s++ {
		for _, t := range l.Transitions(s) {
			app := passive[t.Action]
			if app {
				apps[t.Action] = true
			}
			if inertApps[t.Action] {
				inert[t.Action] = true
			}
			for i, use := range []bool{app, true} {
				if use && s == 0 {
					first[i][t.Action] = true
				}
				if use && closesCycle(l, t.Target) {
					last[i][t.Action] = true
				}
			}
		}
	}
	pick := func(sets [2]map[int32]bool) []int32 {
		if len(sets[0]) > 0 {
			return sortedIDs(sets[0])
		}
		return sortedIDs(sets[1])
	}
	m.First, m.Last, m.Apps = pick(first), pick(last), len(apps)
	if len(inert) > 0 {
		m.Apps = len(inert)
	}
	return m
}

func sortedIDs(set map[int32]bool) []int32 {
	out := make([]int32, 0, len(set))
	for a := range set {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// FindMachines returns the machines of a model: all detected ones, or the
// named ones (which must be machines).
func FindMachines(s *ctmc.Structure, named []string) ([]*Machine, error) {
	byName := map[string]*ctmc.Leaf{}
	var all []string
	passive := map[int32]bool{}   // actions some component performs passively
	inertApps := map[int32]bool{} // those an application (an inert component) performs
	for _, l := range s.Leaves {
		byName[l.Name] = l
		all = append(all, l.Name)
		for st := 0; st < l.NumLocal; st++ {
			for _, t := range l.Transitions(st) {
				if t.Passive {
					passive[t.Action] = true
					if ctmc.IsInert(l) {
						inertApps[t.Action] = true
					}
				}
			}
		}
	}
	var out []*Machine
	if len(named) > 0 {
		seen := map[string]bool{}
		for _, n := range named {
			if seen[n] {
				return nil, option.Errorf("{Machines}: %s is named twice (each machine counts once)", n)
			}
			seen[n] = true
			l, ok := byName[n]
			if !ok {
				return nil, option.Errorf("{Machines}: no component %q (the components are %s)", n, strings.Join(Limit(all, 12), ", "))
			}
			if !isMachine(l, passive) {
				return nil, option.Errorf("{Machines}: component %s is not a machine: a machine computes applications (actions other components perform passively) with active, visible activities only, and returns to its initial local state", n)
			}
			out = append(out, machineOf(l, passive, inertApps))
		}
		return out, nil
	}
	for _, l := range s.Leaves {
		if isMachine(l, passive) {
			out = append(out, machineOf(l, passive, inertApps))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no machine found: a machine is a sequential component that computes applications (actions that other components perform passively) with active activities only, and returns to its initial local state, e.g. M1 = (compute1, r1).(compute2, r2).M1; the model's components are %s",
			strings.Join(Limit(all, 12), ", "))
	}
	return out, nil
}

func Limit(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], "...")
	}
	return s
}

// Independent reports whether the machines' finishing times are independent
// in the chain: no two machines share an action, and every other component
// has a single local state and only passive activities (so cooperating with
// it never changes a machine's rates or blocks it). When it returns false
// it says why.
func Independent(s *ctmc.Structure, machines []*Machine) (bool, string) {
	owner := map[int32]string{}
	isMachine := map[*ctmc.Leaf]bool{}
	for _, m := range machines {
		isMachine[m.Leaf] = true
		for st := 0; st < m.Leaf.NumLocal; st++ {
			for _, t := range m.Leaf.Transitions(st) {
				if o, ok := owner[t.Action]; ok && o != m.Name {
					return false, fmt.Sprintf("machines %s and %s share action %s", o, m.Name, s.Actions[t.Action])
				}
				owner[t.Action] = m.Name
			}
		}
	}
	for _, l := range s.Leaves {
		if isMachine[l] {
			continue
		}
		if l.NumLocal != 1 {
			return false, fmt.Sprintf("component %s has %d local states", l.Name, l.NumLocal)
		}
		for _, t := range l.Transitions(0) {
			if !t.Passive {
				return false, fmt.Sprintf("component %s performs %s actively", l.Name, s.Actions[t.Action])
			}
		}
	}
	return true, ""
}

// Uncomputed names the applications no machine computes: for each passive
// action of an application that no machine performs actively, a sentence
// naming the component and the action. Such an application never
// finishes, and no machine's figures account for it, so robustness alone
// would look better than the mapping is. An application is a component
// whose activities are all passive: a single-state one (the applications
// gen writes) must be computed by a machine; one with several states (a
// hand-written application in steps, but also a resource or a database
// that other components update) by any component, so that a network an
// owner's jobs use, the owner a component of its own, is no uncomputed
// application. Every detected machine counts (not only those in
// machines), so naming a subset with --machines does not flag the other
// machines' applications.
func Uncomputed(s *ctmc.Structure, machines []*Machine) []string {
	passive := map[int32]bool{}
	for _, l := range s.Leaves {
		for st := 0; st < l.NumLocal; st++ {
			for _, t := range l.Transitions(st) {
				if t.Passive {
					passive[t.Action] = true
				}
			}
		}
	}
	isMach := map[*ctmc.Leaf]bool{}
	for _, m := range machines {
		isMach[m.Leaf] = true
	}
	byMachine, byAny := map[int32]bool{}, map[int32]bool{}
	passiveOnly := make([]bool, len(s.Leaves))
	for i, l := range s.Leaves {
		mach := isMach[l] || isMachine(l, passive)
		isMach[l] = mach
		passiveOnly[i] = true
		for st := 0; st < l.NumLocal; st++ {
			for _, t := range l.Transitions(st) {
				if !t.Passive {
					byAny[t.Action] = true
					byMachine[t.Action] = byMachine[t.Action] || mach
					passiveOnly[i] = false
				}
			}
		}
	}
	var out []string
	for i, l := range s.Leaves {
		if isMach[l] || !passiveOnly[i] {
			continue
		}
		computed := byAny
		if l.NumLocal == 1 {
			computed = byMachine
		}
		var missing []string
		seen := map[int32]bool{}
		for st := 0; st < l.NumLocal; st++ {
			for _, t := range l.Transitions(st) {
				if !computed[t.Action] && !seen[t.Action] {
					seen[t.Action] = true
					missing = append(missing, s.Actions[t.Action])
				}
			}
		}
		if len(missing) > 0 {
			sort.Strings(missing)
			out = append(out, fmt.Sprintf("application %s is computed by no machine (no machine performs %s)", l.Name, strings.Join(missing, ", ")))
		}
	}
	return out
}

// neverFinishes is the note of a machine that may never complete its
// cycle (blocked forever, or caught in a deadlocked state, before it
// finishes); empty otherwise.
func neverFinishes(mr *MachineResult) string {
	if !math.IsInf(mr.Mean, 1) {
		return ""
	}
	switch d := mr.Dist.(type) {
	case *passage.Result:
		if d.Complete && len(d.Absorbed) > 0 {
			return fmt.Sprintf("it may never finish: with probability %.4g it deadlocks or is blocked forever before completing its cycle (E[F] is infinite)", 1-d.Absorbed[len(d.Absorbed)-1])
		}
	case *passage.LaplaceDistribution:
		return fmt.Sprintf("it may never finish: with probability %.4g it deadlocks or is blocked forever before completing its cycle (E[F] is infinite)", 1-d.Engine.Limit(d.Set))
	}
	return "it may never finish: it can deadlock or be blocked forever before completing its cycle (E[F] is infinite)"
}
