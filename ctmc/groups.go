package ctmc

import (
	"fmt"

	"pepa/lang"
)

// Groups and sub-models.
//
// Two moving leaves (leaves that are not inert: more than one local
// state, or an active activity) are coupled when they perform a common
// visible action: only through such an action can one leaf's moves depend
// on another's (a cooperation on it, or the apparent rate it shares). The
// groups are the connected sets of this relation. Groups never interact:
// in every global state the transitions that move a group's leaves are
// those of the group's own sub-model, the model with every other moving
// leaf removed and, of the inert leaves, those that perform an action of
// the group kept (an inert leaf never changes, and one that performs none
// of the group's actions takes no part in its transitions). Removing a
// leaf that performs none of the group's actions changes neither whether
// a group transition exists (a cooperation set action the group performs
// was blocked by the removed side before, which performed none of it, and
// is blocked by the empty side after) nor its rate (apparent rates sum
// over the performers of an action, and the removed leaf was none). So
// the model's chain is the product of the groups' chains, and a passage
// whose start and target concern one group has the same distribution on
// that group's chain as on the whole.

// Groups partitions the moving leaves of s into groups, each in leaf
// order, the groups in the order of their first leaf.
func (s *Structure) Groups() [][]*Leaf {
	var moving []*Leaf
	for _, l := range s.Leaves {
		if !isInert(l) {
			moving = append(moving, l)
		}
	}
	parent := make([]int, len(moving))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	performer := map[int32]int{} // action -> a moving leaf performing it
	for i, l := range moving {
		for _, a := range leafActions(l) {
			if a == TauAction {
				continue
			}
			if j, ok := performer[a]; ok {
				ri, rj := find(i), find(j)
				if ri != rj {
					parent[max(ri, rj)] = min(ri, rj)
				}
			} else {
				performer[a] = i
			}
		}
	}
	index := map[int]int{}
	var out [][]*Leaf
	for i, l := range moving {
		r := find(i)
		g, ok := index[r]
		if !ok {
			g = len(out)
			index[r] = g
			out = append(out, nil)
		}
		out[g] = append(out[g], l)
	}
	return out
}

// FinishedState is the name of the terminal local state Restrict adds to a
// stopped leaf. Process constants start with a capital letter, so it is
// never a derivative's own name.
const FinishedState = "finished"

// Restrict returns the sub-model of s in which the given moving leaves
// move, with every inert leaf that performs an action of theirs (the other
// leaves removed), and a map from s's leaves to the sub-model's. moving nil
// keeps every leaf. Stop lists, for some leaves, actions (s's ids) whose
// transitions lead the leaf to a terminal local state (named
// FinishedState, the leaf's last) instead of their targets: the stop rule
// of semantics.md section 3, for finished machines. Entries for leaves the
// sub-model does not keep are ignored, so every group of a model is
// restricted with the model's one stop map. The sub-model's leaves
// are in s's order. With moving nil its action ids are s's; with moving
// given it has an action table of its own, with only the actions its
// leaves perform (a group of a model of thousands of actions then sizes
// its per-action tables by its own few): translate with ActionsFrom.
func (s *Structure) Restrict(moving []*Leaf, stop map[*Leaf][]int32) (*Structure, map[*Leaf]*Leaf, error) {
	keep := s.keptLeaves(moving)
	for l := range stop {
		if !keep[l] {
			continue // another group's machine
		}
		if l.Counts != nil {
			return nil, nil, fmt.Errorf("ctmc: leaf %s is an aggregated array, which cannot be stopped", l.Name)
		}
	}
	sub := &Structure{Actions: s.Actions, actionID: s.actionID, file: s.file, maxStates: s.maxStates}
	r := &restriction{sub: sub, keep: keep, stop: stop, mapping: map[*Leaf]*Leaf{}}
	if moving != nil {
		r.remap = s.ownActions(sub, keep)
	}
	root := r.copy(s.root)
	if root == nil {
		root = &parNode{}
	}
	sub.root = root
	if err := sub.pack(); err != nil {
		return nil, nil, err
	}
	return sub, r.mapping, nil
}

// keptLeaves are the leaves Restrict keeps: the moving ones and the inert
// ones that perform an action of theirs (tau aside); all of them if
// moving is nil.
func (s *Structure) keptLeaves(moving []*Leaf) map[*Leaf]bool {
	keep := map[*Leaf]bool{}
	if moving == nil {
		for _, l := range s.Leaves {
			keep[l] = true
		}
		return keep
	}
	alpha := map[int32]bool{}
	for _, l := range moving {
		keep[l] = true
		for _, a := range leafActions(l) {
			if a != TauAction {
				alpha[a] = true
			}
		}
	}
	for _, l := range s.Leaves {
		if !isInert(l) {
			continue
		}
		for _, a := range leafActions(l) {
			if alpha[a] {
				keep[l] = true
				break
			}
		}
	}
	return keep
}

// ownActions gives sub an action table of its own, the actions the kept
// leaves perform in s's order (tau first), and returns the map from s's
// action ids to sub's (-1: no kept leaf performs it).
func (s *Structure) ownActions(sub *Structure, keep map[*Leaf]bool) []int32 {
	remap := make([]int32, len(s.Actions))
	for i := range remap {
		remap[i] = -1
	}
	remap[TauAction] = TauAction
	for _, l := range s.Leaves {
		if keep[l] {
			for _, a := range leafActions(l) {
				remap[a] = 0 // used; numbered below, in s's order
			}
			if l.Comp != nil {
				for _, ts := range l.Comp.trans {
					for _, t := range ts {
						remap[t.action] = 0
					}
				}
			}
		}
	}
	sub.Actions = []string{s.Actions[TauAction]}
	sub.actionID = map[string]int32{s.Actions[TauAction]: TauAction}
	for a := range remap {
		if a != TauAction && remap[a] == 0 {
			remap[a] = int32(len(sub.Actions))
			sub.actionID[s.Actions[a]] = remap[a]
			sub.Actions = append(sub.Actions, s.Actions[a])
		}
	}
	return remap
}

// restriction copies a compiled tree into a sub-model (Restrict), keeping
// the leaves of keep (stopped as stop says) and translating action ids by
// remap (nil: the same ids).
type restriction struct {
	sub     *Structure
	keep    map[*Leaf]bool
	stop    map[*Leaf][]int32
	remap   []int32
	mapping map[*Leaf]*Leaf // s's kept leaves to sub's
}

// set is an action set in sub's ids, the actions no kept leaf performs
// left out.
func (r *restriction) set(m map[int32]bool) map[int32]bool {
	if r.remap == nil {
		return m
	}
	out := map[int32]bool{}
	for a, ok := range m {
		if ok && r.remap[a] >= 0 {
			out[r.remap[a]] = true
		}
	}
	return out
}

// copy is n's copy in sub, or nil if nothing of it is kept.
func (r *restriction) copy(n node) node {
	switch m := n.(type) {
	case *constNode:
		return r.copy(m.orig)
	case *leafNode:
		if !r.keep[m.leaf] {
			return nil
		}
		nl := copyLeaf(m.leaf, r.stop[m.leaf], r.remap)
		r.mapping[m.leaf] = nl
		r.sub.Leaves = append(r.sub.Leaves, nl)
		r.sub.Aggregated = r.sub.Aggregated || nl.Counts != nil
		return &leafNode{leaf: nl}
	case *parNode:
		var kids []node
		for _, k := range m.kids {
			if c := r.copy(k); c != nil {
				kids = append(kids, c)
			}
		}
		switch len(kids) {
		case 0:
			return nil
		case 1:
			return kids[0]
		}
		return &parNode{kids: kids}
	case *hideNode:
		c := r.copy(m.child)
		if c == nil {
			return nil
		}
		return &hideNode{child: c, hidden: r.set(m.hidden)}
	case *coopNode:
		return r.copyCoop(m)
	case *multiCoopNode:
		kids := make([]node, len(m.kids))
		any := false
		for i, k := range m.kids {
			if kids[i] = r.copy(k); kids[i] != nil {
				any = true
			} else {
				kids[i] = &parNode{} // enables nothing: blocks the set, as the removed kid did for the kept ones
			}
		}
		if !any {
			return nil
		}
		return &multiCoopNode{kids: kids, set: r.set(m.set)}
	}
	panic(fmt.Sprintf("ctmc: Restrict meets node %T", n))
}

// copyCoop copies a cooperation. With one side removed, the removed side
// performed none of the kept side's actions: those in the set stay
// blocked, by an empty side, and the rest pass as before (the kept side
// alone, if the set blocks none of its actions).
func (r *restriction) copyCoop(m *coopNode) node {
	x, y := r.copy(m.x), r.copy(m.y)
	mset := r.set(m.set)
	switch {
	case x == nil && y == nil:
		return nil
	case x == nil || y == nil:
		kept := x
		if kept == nil {
			kept = y
		}
		blocks := false
		for a := range alphabet(kept) {
			blocks = blocks || mset[a]
		}
		if !blocks {
			return kept
		}
		if x == nil {
			x = &parNode{}
		} else {
			y = &parNode{}
		}
	}
	return &coopNode{x: x, y: y, set: mset}
}

// copyLeaf returns a copy of l with its own place in a packed state (set
// by pack), its actions renumbered by remap (nil: kept), and, when stop
// lists actions (s's ids), a terminal local state that those actions lead
// to.
func copyLeaf(l *Leaf, stop []int32, remap []int32) *Leaf {
	nl := &Leaf{Name: l.Name, Group: l.Group, Comp: l.Comp, Copies: l.Copies, NumLocal: l.NumLocal, Counts: l.Counts, trans: l.trans}
	if len(stop) == 0 && remap == nil {
		return nl
	}
	isStop := map[int32]bool{}
	for _, a := range stop {
		isStop[a] = true
	}
	act := func(a int32) int32 {
		if remap == nil {
			return a
		}
		return remap[a]
	}
	done := int32(l.NumLocal)
	// copyTrans renumbers a list of activities and sends stop actions to
	// the terminal state.
	copyTrans := func(ts []localTrans, stopping bool) []localTrans {
		out := make([]localTrans, len(ts))
		for i, t := range ts {
			if stopping && isStop[t.action] {
				t.target = done
			}
			t.action = act(t.action)
			out[i] = t
		}
		return out
	}
	comp := &Component{Name: l.Comp.Name, States: l.Comp.States, prov: l.Comp.prov}
	for _, ts := range l.Comp.trans {
		comp.trans = append(comp.trans, copyTrans(ts, l.Counts == nil))
	}
	if l.Counts != nil {
		// An aggregated array (never stopped): its count vectors' own
		// activities, renumbered.
		nl.Comp = comp
		nl.trans = make([][]localTrans, len(l.trans))
		for i, ts := range l.trans {
			nl.trans[i] = copyTrans(ts, false)
		}
		return nl
	}
	if len(stop) > 0 {
		comp.States = append(append([]string(nil), l.Comp.States...), FinishedState)
		comp.trans = append(comp.trans, nil)
		comp.prov = append(append([][][]*lang.Prefix(nil), l.Comp.prov...), nil)
		nl.NumLocal = l.NumLocal + 1
	}
	nl.Comp, nl.trans = comp, comp.trans
	return nl
}

// ActionsFrom translates action ids of structure from (whose sub-model s
// is, Restrict) into s's, by name; actions s does not have are left out.
func (s *Structure) ActionsFrom(from *Structure, ids []int32) []int32 {
	out := make([]int32, 0, len(ids))
	for _, a := range ids {
		if b, ok := s.actionID[from.Actions[a]]; ok {
			out = append(out, b)
		}
	}
	return out
}

// LeafNames lists the names of leaves, sorted as given.
func LeafNames(ls []*Leaf) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.Name
	}
	return out
}

// IsInert reports whether a leaf never moves and only cooperates
// passively (one local state, passive activities only): the applications
// of a mapping model.
func IsInert(l *Leaf) bool { return isInert(l) }
