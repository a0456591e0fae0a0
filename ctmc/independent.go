package ctmc

// LeafTables lists, for a model whose moving leaves never share an action
// through a cooperation, every leaf's transitions by its local state: the
// enabled transitions of a global state are then the union of its leaves'
// entries and a constant list, so a simulation can update one leaf's
// entries per jump instead of evaluating the whole tree.
//
// The shapes recognised are those of mapping models and of plain parallel
// compositions: hidings around either a cooperation between a constant
// subtree (one local state everywhere, the applications) and a parallel
// composition of leaves (the machines) in which each action of the
// cooperation set is performed by at most one leaf, or a parallel
// composition of leaves (or constant subtrees) alone. The entries are
// computed by the same evaluation code as Derive (tables.go), on a tree
// holding the shared transitions of the constant side and one leaf; with
// at most one leaf performing each shared action, that leaf's apparent
// rate is the whole side's, so the rates are exactly Derive's.
type LeafTables struct {
	// Entries of leaf k in local state s are those of slot s.
	LeafEntries
	// Constant transitions are enabled in every state and move nothing.
	ConstAct  []int32
	ConstRate []float64
}

// IndependentLeaves returns the leaf tables of the structure, or false when
// its shape is not one that they describe exactly (or some entry would be
// passive or of undefined apparent rate, which the general evaluation
// reports with the state).
//
// Where the constant transitions are taken out of a leaf's list differs
// from ContextTables: here they are left out of the tree the leaves are
// evaluated on, there the base entries are subtracted from its list. Subtracting would take out a
// leaf's own self-loop that equals a constant transition (same action
// after hiding, same rate, no move) in the constant's place, and so
// reorder the leaf's entries, and with them a simulation's draws.
func (s *Structure) IndependentLeaves() (*LeafTables, bool) {
	root := s.exploreRoot()
	leaves, ok := independentShape(root)
	if !ok {
		return nil, false
	}
	tables := map[*Leaf]bool{}
	for _, l := range leaves {
		tables[l] = true
	}
	if _, ok := performers(root, tables); !ok {
		return nil, false
	}
	b := newTableBuilder(s, nil, 1, false)
	base, ok := b.base(b.copyOf(root, tables, false, len(s.Actions)))
	if !ok {
		return nil, false
	}
	lt := &LeafTables{ConstAct: base.Act, ConstRate: base.Rate}
	trimmed := b.copyOf(root, tables, true, len(s.Actions))
	for _, l := range leaves {
		if !b.addLeaf(&lt.LeafEntries, nil, l, trimmed, nil) {
			return nil, false
		}
	}
	return lt, true
}

// independentShape returns the table leaves of a tree of a shape leaf
// tables describe (below its hidings: a constant subtree cooperating with
// a parallel composition of leaves, or a parallel composition of leaves
// and constant subtrees), or false. A leaf of one local state, frozen as
// constant, is a table leaf on the cooperating side (a machine with one
// application), a constant transition of the model elsewhere.
func independentShape(root node) ([]*Leaf, bool) {
	for {
		h, ok := root.(*hideNode)
		if !ok {
			break
		}
		root = h.child
	}
	var moving node
	cooperating := false
	switch r := root.(type) {
	case *coopNode:
		_, isCX := r.x.(*constNode)
		_, isCY := r.y.(*constNode)
		switch {
		case isCX:
			moving = r.y
		case isCY:
			moving = r.x
		default:
			return nil, false
		}
		cooperating = true
	case *parNode, *leafNode, *constNode:
		moving = r
	default:
		return nil, false
	}
	kids := []node{moving}
	if p, ok := moving.(*parNode); ok {
		kids = p.kids
	}
	var leaves []*Leaf
	for _, k := range kids {
		switch k := k.(type) {
		case *leafNode:
			leaves = append(leaves, k.leaf)
		case *constNode:
			if !cooperating {
				continue // constant transitions
			}
			lf, ok := k.orig.(*leafNode)
			if !ok {
				return nil, false // its actions might be shared: not described here
			}
			leaves = append(leaves, lf.leaf)
		default:
			return nil, false
		}
	}
	return leaves, true
}
