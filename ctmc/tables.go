package ctmc

import "math"

// Per-leaf transition tables (LeafTables, ContextTables) rest on one idea:
// where no transition moves two table leaves, a state's transitions are
// some base entries, which no table leaf takes part in, and, for each
// table leaf, the entries of its local state (in the state of the context
// leaves, if any). Both kinds are built by one tableBuilder: it copies the
// tree once with every table leaf behind a gate (gateNode), and for each
// table leaf, in each of its local states and each context state, it
// evaluates the copy with that leaf's gate alone open, with Derive's own
// code, so that the rates are exactly Derive's, and keeps the entries of
// the list that are the leaf's; the base entries come from the copy with
// every gate closed. The kinds differ in which trees they accept
// (independent.go, context.go) and in how a leaf's entries are told from
// the rest of its list: context tables take the base entries of the
// context out of it; leaf tables leave the constant transitions out of
// the copy the leaves are evaluated on (pruner.trim), so its list holds
// the leaf's entries alone, in the order they have always had.

// LeafEntries are the per-leaf part of leaf tables and context tables.
// Entries of table leaf k in slot x are index i in [Start[k][x],
// Start[k][x+1]): action Act[k][i], rate Rate[k][i] and the leaf's target
// local state Target[k][i]; Total[k][x] is the sum of the slot's rates. A
// slot is the leaf's local state s for leaf tables, s*Size+c in context c
// for context tables.
type LeafEntries struct {
	Leaves []*Leaf // the table leaves
	Start  [][]int32
	Act    [][]int32
	Rate   [][]float64
	Target [][]int32
	Total  [][]float64
}

// maxContext bounds the context states and maxEntries the table sizes.
const (
	maxContext = 4096
	maxEntries = 1 << 24
)

// emptyNode stands for a constant subtree left out: it enables nothing.
type emptyNode struct{}

func (emptyNode) eval([]uint64, *tlist, *evalError) {}

// gateNode is a table leaf in a builder's copy of the tree: it enables the
// leaf's transitions while the leaf is the builder's open one, nothing
// otherwise.
type gateNode struct {
	leaf *Leaf
	n    node
	open **Leaf
}

func (g *gateNode) eval(state []uint64, out *tlist, e *evalError) {
	if *g.open == g.leaf {
		g.n.eval(state, out, e)
	}
}

// tableLeaf is the table leaf n is, or nil: a leaf node, or a leaf of one
// local state frozen as a constant node (a machine with one application).
func tableLeaf(n node, tables map[*Leaf]bool) *Leaf {
	switch m := n.(type) {
	case *leafNode:
		if tables[m.leaf] {
			return m.leaf
		}
	case *constNode:
		if lf, ok := m.orig.(*leafNode); ok && tables[lf.leaf] {
			return lf.leaf
		}
	}
	return nil
}

// pruner copies a frozen tree with every table leaf behind a gate that
// *open opens. With trim, the copy also leaves out the transitions no
// leaf takes part in: a constant subtree in a parallel composition
// becomes empty, the constant side of a cooperation keeps its shared
// transitions only (in order, so the joint transitions and their apparent
// rates are the original's, bit for bit). Trimming is right only where
// nothing but the table leaves moves (leaf tables).
type pruner struct {
	tables   map[*Leaf]bool
	open     **Leaf
	trim     bool
	nActions int
}

func (p *pruner) prune(n node) node {
	if l := tableLeaf(n, p.tables); l != nil {
		return &gateNode{leaf: l, n: n, open: p.open}
	}
	switch m := n.(type) {
	case *constNode:
		if p.trim {
			return emptyNode{}
		}
	case *parNode:
		kids := make([]node, len(m.kids))
		for i, k := range m.kids {
			kids[i] = p.prune(k)
		}
		return &parNode{kids: kids}
	case *hideNode:
		return &hideNode{child: p.prune(m.child), hidden: m.hidden, isHid: m.isHid}
	case *coopNode:
		c := &coopNode{set: m.set, inSet: m.inSet}
		c.bx.w, c.by.w = m.bx.w, m.by.w
		c.x, c.gx = p.side(m.x, &m.gx, m.inSet)
		c.y, c.gy = p.side(m.y, &m.gy, m.inSet)
		return c
	}
	return n
}

// side copies one side of a cooperation, with its grouping: a constant
// side keeps its constant grouping, a side whose list may change gets a
// fresh one.
func (p *pruner) side(n node, g *grouping, inSet []bool) (node, grouping) {
	if c, ok := n.(*constNode); ok && p.trim && tableLeaf(c, p.tables) == nil {
		return sharedOf(c, inSet, p.nActions)
	}
	pruned := p.prune(n)
	if pruned == n {
		return n, cloneGrouping(g)
	}
	var fresh grouping
	fresh.init(p.nActions)
	return pruned, fresh
}

// sharedOf is constant side c trimmed to the transitions of the set, with
// its constant grouping.
func sharedOf(c *constNode, inSet []bool, nActions int) (node, grouping) {
	s := &constNode{orig: c.orig, list: tlist{w: c.list.w}}
	for i := 0; i < c.list.len(); i++ {
		if inSet[c.list.act[i]] {
			s.list.copyFrom(&c.list, i)
		}
	}
	var g grouping
	g.init(nActions)
	g.freezeConstant(&s.list, inSet)
	return s, g
}

// tableBuilder evaluates its copies of a tree (pruner) state by state and
// gathers their entries into tables. A context state c is the mixed-radix
// number of the context leaves' local states (the first leaf's digit
// lowest); open is the table leaf whose gate is open.
type tableBuilder struct {
	w       int
	context []*Leaf
	size    int // context states
	// bounded refuses tables of more than maxEntries entries or with an
	// infinite total. Context tables multiply the leaves' local states by
	// the context states; leaf tables are no larger than the leaves
	// themselves (which Options.MaxStates bounds) and have never been
	// refused for it.
	bounded bool
	entries int

	open          *Leaf
	state, target []uint64
	out           tlist
}

func newTableBuilder(s *Structure, context []*Leaf, size int, bounded bool) *tableBuilder {
	return &tableBuilder{w: s.Words, context: context, size: size, bounded: bounded,
		state: make([]uint64, s.Words), target: make([]uint64, s.Words), out: tlist{w: s.Words}}
}

// copyOf is the builder's copy of root (pruner), the constant transitions
// left out with trim.
func (b *tableBuilder) copyOf(root node, tables map[*Leaf]bool, trim bool, nActions int) node {
	return (&pruner{tables: tables, open: &b.open, trim: trim, nActions: nActions}).prune(root)
}

// eval lists the transitions of tree, a copy of the builder's, in
// context state c with table leaf l (nil: none) open and in local state
// ls. It reports false when some action is enabled both actively and
// passively (no apparent rate).
func (b *tableBuilder) eval(tree node, c int, l *Leaf, ls int) bool {
	b.open = l
	clear(b.state)
	for _, cl := range b.context {
		cl.SetLocal(b.state, c%cl.NumLocal)
		c /= cl.NumLocal
	}
	if l != nil {
		l.SetLocal(b.state, ls)
	}
	b.out.reset()
	var e evalError
	tree.eval(b.state, &b.out, &e)
	return !e.mixed
}

// moveTo sets b.target to the target of listed transition i.
func (b *tableBuilder) moveTo(i int) {
	for k := range b.target {
		b.target[k] = b.state[k] + b.out.delta[i*b.w+k]
	}
}

// targetContext is the context state of b.target.
func (b *tableBuilder) targetContext() int32 {
	c, stride := 0, 1
	for _, l := range b.context {
		c += l.Local(b.target) * stride
		stride *= l.NumLocal
	}
	return int32(c)
}

// entryKey identifies a listed transition: action, rate and change.
type entryKey struct {
	act   int32
	rate  float64
	delta string
}

func (b *tableBuilder) key(i int) entryKey {
	k := make([]byte, 0, 8*b.w)
	for _, d := range b.out.delta[i*b.w : (i+1)*b.w] {
		for j := 0; j < 8; j++ {
			k = append(k, byte(d>>(8*j)))
		}
	}
	return entryKey{b.out.act[i], b.out.rate[i], string(k)}
}

// baseEntries are the transitions no table leaf takes part in, by context
// state c: Start[c] to Start[c+1], with their action, rate and target
// context, Total[c] their rates' sum, and lists[c] the same entries as a
// multiset, to be taken out of a leaf's list.
type baseEntries struct {
	Start     []int32
	Act       []int32
	Rate      []float64
	TargetCtx []int32
	Total     []float64
	lists     []map[entryKey]int
}

// base evaluates tree, a copy of the builder's, with every gate closed in
// every context state. It reports false if some entry is passive or of no
// apparent rate.
func (b *tableBuilder) base(tree node) (*baseEntries, bool) {
	be := &baseEntries{Start: []int32{0}, lists: make([]map[entryKey]int, b.size)}
	for c := 0; c < b.size; c++ {
		if !b.eval(tree, c, nil, 0) {
			return nil, false
		}
		be.lists[c] = map[entryKey]int{}
		total := 0.0
		for i := 0; i < b.out.len(); i++ {
			if b.out.pas[i] {
				return nil, false
			}
			be.lists[c][b.key(i)]++
			b.moveTo(i)
			be.Act = append(be.Act, b.out.act[i])
			be.Rate = append(be.Rate, b.out.rate[i])
			be.TargetCtx = append(be.TargetCtx, b.targetContext())
			total += b.out.rate[i]
		}
		be.Start = append(be.Start, int32(len(be.Act)))
		be.Total = append(be.Total, total)
	}
	return be, true
}

// addLeaf appends to t, and to targetCtx unless it is nil, the entries of
// table leaf l, evaluating tree, a copy of the builder's, with l's gate
// alone open in every slot: l's list less, when base is not nil, the base entries of the
// context, every one of which must be in it (else l blocks one: not a
// shape the tables describe). It reports false if an entry of l is
// passive or of no apparent rate, or the tables are past their bounds.
func (b *tableBuilder) addLeaf(t *LeafEntries, targetCtx *[][]int32, l *Leaf, tree node, base *baseEntries) bool {
	start := []int32{0}
	var acts, targets, tctx []int32
	var rates, totals []float64
	for ls := 0; ls < l.NumLocal; ls++ {
		for c := 0; c < b.size; c++ {
			if !b.eval(tree, c, l, ls) {
				return false
			}
			var left map[entryKey]int
			if base != nil {
				left = make(map[entryKey]int, len(base.lists[c]))
				for k, v := range base.lists[c] {
					left[k] = v
				}
			}
			total := 0.0
			before := len(acts)
			for i := 0; i < b.out.len(); i++ {
				if left != nil {
					if k := b.key(i); left[k] > 0 {
						left[k]--
						continue // a base entry
					}
				}
				if b.out.pas[i] {
					return false
				}
				b.moveTo(i)
				acts = append(acts, b.out.act[i])
				rates = append(rates, b.out.rate[i])
				targets = append(targets, int32(l.Local(b.target)))
				if targetCtx != nil {
					tctx = append(tctx, b.targetContext())
				}
				total += b.out.rate[i]
			}
			for _, v := range left {
				if v != 0 {
					return false // l blocked a base entry
				}
			}
			start = append(start, int32(len(acts)))
			totals = append(totals, total)
			if b.entries += len(acts) - before; b.bounded && (b.entries > maxEntries || math.IsInf(total, 0)) {
				return false
			}
		}
	}
	t.Leaves = append(t.Leaves, l)
	t.Start = append(t.Start, start)
	t.Act = append(t.Act, acts)
	t.Rate = append(t.Rate, rates)
	t.Target = append(t.Target, targets)
	t.Total = append(t.Total, totals)
	if targetCtx != nil {
		*targetCtx = append(*targetCtx, tctx)
	}
	return true
}
