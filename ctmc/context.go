package ctmc

// ContextTables generalise LeafTables to models whose moving leaves are
// coupled only through a few context leaves (a shared store, a network):
// every transition moves at most one moving leaf, and its rate depends on
// that leaf's local state and the context's. A state's transitions are
// then the base entries of its context state and, for each moving leaf,
// the entries of its local state in that context.
//
// Moving leaves are the leaves (of more than one local state) that are
// children of a parallel composition; context leaves are the other leaves
// of more than one local state. The tables are exact when, at
// every cooperation, each action of its set is performed (as seen there,
// after hiding) by at most one moving leaf below it: a transition then
// never involves two moving leaves, and pruning every other moving leaf
// from the tree changes neither the existence nor the apparent rates of
// one leaf's transitions. The entries are computed by evaluating such
// pruned trees with Derive's own code (tables.go: the tree with every
// other leaf's gate closed), and a leaf's entries are the pruned tree's
// list less the list with every moving leaf pruned (the base).
type ContextTables struct {
	// The moving leaves' entries by slot s*Size+c, s the leaf's local
	// state and c the context state.
	LeafEntries
	Context []*Leaf // context leaves; a context state c is their mixed-radix number
	Size    int     // number of context states
	// TargetCtx[k][i] is the target context of entry i of moving leaf k.
	TargetCtx [][]int32
	// Base entries of context c: BaseStart[c] to BaseStart[c+1], with
	// their action, rate and target context; BaseTotal[c] their sum.
	BaseStart     []int32
	BaseAct       []int32
	BaseRate      []float64
	BaseTargetCtx []int32
	BaseTotal     []float64
}

// ContextTables returns the context tables of the structure, or false when
// the condition above does not hold (or the tables would be too large, or
// some entry is passive or of undefined apparent rate).
func (s *Structure) ContextTables() (*ContextTables, bool) {
	root := s.exploreRoot()
	moving := movingLeaves(root)
	ct := &ContextTables{}
	var leaves []*Leaf
	for _, l := range s.Leaves {
		switch {
		case moving[l]:
			leaves = append(leaves, l)
		case l.NumLocal > 1:
			ct.Context = append(ct.Context, l)
		}
	}
	if len(leaves) == 0 {
		return nil, false
	}
	ct.Size = 1
	for _, l := range ct.Context {
		ct.Size *= l.NumLocal
		if ct.Size > maxContext {
			return nil, false
		}
	}
	if _, ok := performers(root, moving); !ok {
		return nil, false
	}
	b := newTableBuilder(s, ct.Context, ct.Size, true)
	tree := b.copyOf(root, moving, false, len(s.Actions))
	base, ok := b.base(tree)
	if !ok {
		return nil, false
	}
	ct.BaseStart, ct.BaseAct, ct.BaseRate, ct.BaseTargetCtx, ct.BaseTotal = base.Start, base.Act, base.Rate, base.TargetCtx, base.Total
	for _, l := range leaves {
		if !b.addLeaf(&ct.LeafEntries, &ct.TargetCtx, l, tree, base) {
			return nil, false
		}
	}
	return ct, true
}

// movingLeaves are the leaves of more than one local state that are
// children of a parallel composition.
func movingLeaves(root node) map[*Leaf]bool {
	moving := map[*Leaf]bool{}
	var find func(n node)
	find = func(n node) {
		switch m := n.(type) {
		case *parNode:
			for _, k := range m.kids {
				if lf, ok := k.(*leafNode); ok && lf.leaf.NumLocal > 1 {
					moving[lf.leaf] = true
				} else {
					find(k)
				}
			}
		case *coopNode:
			find(m.x)
			find(m.y)
		case *hideNode:
			find(m.child)
		}
	}
	find(root)
	return moving
}

// manyLeaves marks an action performed by more than one table leaf.
var manyLeaves = &Leaf{}

// performers returns, per action as seen at n (after hiding), the table
// leaf below n that performs it, or manyLeaves if several do; ok is false
// if some action of a cooperation's set has two of them below that
// cooperation.
func performers(n node, tables map[*Leaf]bool) (map[int32]*Leaf, bool) {
	out := map[int32]*Leaf{}
	add := func(a int32, l *Leaf) {
		if prev := out[a]; prev != nil && prev != l {
			l = manyLeaves
		}
		out[a] = l
	}
	if l := tableLeaf(n, tables); l != nil {
		for _, ts := range l.trans {
			for _, t := range ts {
				add(t.action, l)
			}
		}
		return out, true
	}
	var kids []node
	switch m := n.(type) {
	case *parNode:
		kids = m.kids
	case *hideNode:
		kids = []node{m.child}
	case *coopNode:
		kids = []node{m.x, m.y}
	}
	for _, k := range kids {
		sub, ok := performers(k, tables)
		if !ok {
			return nil, false
		}
		for a, l := range sub {
			if h, ok := n.(*hideNode); ok && h.isHid[a] {
				a = TauAction
			}
			add(a, l)
		}
	}
	if c, ok := n.(*coopNode); ok {
		for a, l := range out {
			if c.inSet[a] && l == manyLeaves {
				return nil, false
			}
		}
	}
	return out, true
}
