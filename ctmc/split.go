package ctmc

import "math/bits"

// Split cooperations (Derive's explorers only).
//
// A cooperation C <L> (K1 || K2 || ... || Kn) whose left side C is
// constant and whose right side is a parallel composition of leaves, where
// no action of L is performed by leaves of two different groups of the
// Ki, lists C's unshared transitions, then the Ki's unshared ones in
// order, then the shared ones in the order of the Ki's transitions. The
// right side's apparent rate of an action of L is then that of the one
// group that performs it, so each group's unshared part and shared part
// depend only on the group's own leaves: they are stored per value of the
// group's bits, as a memoNode stores a subtree's list (groups are runs of
// consecutive leaves within memoBits bits of one word). This is the shape
// of a mapping model: its applications are constant, its machines share
// no action with each other.
//
// The list is the cooperation's own, in its order. A state for which a
// group's evaluation meets an error is evaluated by the cooperation in
// place; the limit check the shared transitions make is repeated at their
// real positions (the last one is the largest).

// splitCoop replaces a cooperation of that shape.
type splitCoop struct {
	orig          *coopNode // evaluated in place when a group cannot store a value
	constUnshared tlist     // C's transitions outside L
	groups        []*splitGroup
	keys          []uint64 // scratch: each group's key in the current state
}

// splitGroup is a run of leaves of the right side with their own
// cooperation with C, and its stored lists: per key, the group's unshared
// transitions and then its shared ones, back to back in list.
type splitGroup struct {
	coop  *coopNode // C <L> (the group's leaves)
	word  int
	shift uint
	mask  uint64

	status         []uint8
	uStart, uCount []int32
	sStart, sCount []int32
	list           tlist
	fill           tlist
}

// newSplitCoop returns the split form of m, or nil if m does not have its
// shape (or would be a single group: a memoNode then covers it).
func newSplitCoop(m *coopNode, s *Structure) *splitCoop {
	c, ok := m.x.(*constNode)
	if !ok {
		return nil
	}
	par, ok := m.y.(*parNode)
	if !ok {
		return nil
	}
	type group struct {
		kids         []node
		word, lo, hi int
		acts         map[int32]bool
	}
	var groups []*group
	for _, k := range par.kids {
		var l *Leaf
		switch k := k.(type) {
		case *leafNode:
			if k.leaf.NumLocal > 1 {
				l = k.leaf
			}
		case *constNode:
		default:
			return nil
		}
		g := (*group)(nil)
		if len(groups) > 0 {
			g = groups[len(groups)-1]
		}
		if l != nil {
			lo, hi := int(l.shift), int(l.shift)+bits.Len64(l.mask)
			switch {
			case g != nil && g.word < 0:
				g.word, g.lo, g.hi = l.word, lo, hi
			case g != nil && g.word == l.word && max(g.hi, hi)-min(g.lo, lo) <= memoBits:
				g.lo, g.hi = min(g.lo, lo), max(g.hi, hi)
			default:
				g = &group{word: l.word, lo: lo, hi: hi, acts: map[int32]bool{}}
				groups = append(groups, g)
			}
		} else if g == nil {
			g = &group{word: -1, acts: map[int32]bool{}}
			groups = append(groups, g)
		}
		g.kids = append(g.kids, k)
		for a := range alphabet(k) {
			if m.set[a] {
				g.acts[a] = true
			}
		}
	}
	if len(groups) < 2 {
		return nil
	}
	owner := map[int32]int{}
	for i, g := range groups {
		for a := range g.acts {
			if _, dup := owner[a]; dup {
				return nil // two groups perform a shared action
			}
			owner[a] = i
		}
	}
	n := &splitCoop{orig: m, constUnshared: tlist{w: s.Words}, keys: make([]uint64, len(groups))}
	for i, a := range c.list.act {
		if !m.inSet[a] {
			n.constUnshared.copyFrom(&c.list, i)
		}
	}
	for _, g := range groups {
		co := &coopNode{x: c, y: &parNode{kids: g.kids}, set: m.set, inSet: m.inSet, gx: m.gx}
		co.bx.w, co.by.w = s.Words, s.Words
		co.gy.init(len(m.inSet))
		sg := &splitGroup{coop: co, word: max(g.word, 0), shift: uint(g.lo), list: tlist{w: s.Words}, fill: tlist{w: s.Words}}
		size := 1 << (g.hi - g.lo)
		sg.mask = uint64(size - 1)
		sg.status = make([]uint8, size)
		sg.uStart, sg.uCount = make([]int32, size), make([]int32, size)
		sg.sStart, sg.sCount = make([]int32, size), make([]int32, size)
		n.groups = append(n.groups, sg)
	}
	return n
}

// lookup returns the group's key in state and whether its lists are
// stored, storing them first if the key is new and its evaluation clean.
func (g *splitGroup) lookup(state []uint64, nConst, limit int) (uint64, bool) {
	key := (state[g.word] >> g.shift) & g.mask
	switch g.status[key] {
	case memoStored:
		return key, true
	case memoInPlace:
		return key, false
	}
	f := &g.fill
	f.reset()
	e := evalError{limit: limit}
	g.coop.eval(state, f, &e)
	u := nConst
	for u < f.len() && !g.coop.inSet[f.act[u]] {
		u++
	}
	clean := !e.mixed && !e.overflow && g.list.len()+f.len() <= memoMaxTransitions
	for i := u; i < f.len() && clean; i++ {
		clean = g.coop.inSet[f.act[i]]
	}
	if !clean {
		g.status[key] = memoInPlace
		return key, false
	}
	g.status[key] = memoStored
	start := int32(g.list.len())
	g.uStart[key], g.uCount[key] = start, int32(u-nConst)
	g.sStart[key], g.sCount[key] = start+int32(u-nConst), int32(f.len()-u)
	g.list.appendRange(f, nConst, f.len())
	return key, true
}

func (n *splitCoop) eval(state []uint64, out *tlist, e *evalError) {
	nConst := n.constUnshared.len()
	for i, g := range n.groups {
		key, ok := g.lookup(state, nConst, e.limit)
		if !ok {
			n.orig.eval(state, out, e)
			return
		}
		n.keys[i] = key
	}
	out.appendRange(&n.constUnshared, 0, nConst)
	for i, g := range n.groups {
		k := n.keys[i]
		j := int(g.uStart[k])
		out.appendRange(&g.list, j, j+int(g.uCount[k]))
	}
	from := out.len()
	for i, g := range n.groups {
		k := n.keys[i]
		j := int(g.sStart[k])
		out.appendRange(&g.list, j, j+int(g.sCount[k]))
	}
	if out.len() > from {
		// The cooperation checks the limit before each shared transition.
		if e.limit > 0 && out.len()-1 >= e.limit {
			e.overflow = true
			return
		}
		e.checked(out, from)
	}
}

// splitCoopX is the mirror shape: a cooperation (K1 || ... || Kn) <L> C of
// a parallel composition with a constant right side C, where the Ki are
// any subtrees whose leaves fit memo keys (workstation clusters sharing a
// repairman). Actions of L may be performed by several groups, so the
// left side's apparent rates are not separable; but its transitions
// outside L are, and they are most of the list: each group stores, per
// value of its bits, its unshared transitions and its shared ones, and the
// cooperation's joint transitions are formed from the concatenated shared
// ones exactly as the cooperation forms them (the same sums in the same
// order, the same limit checks on the same list).
type splitCoopX struct {
	orig      *coopNode
	cUnshared tlist // C's transitions outside L
	groups    []*splitGroupX
	keys      []uint64
	xs        tlist // the groups' shared transitions in the current state
}

// splitGroupX is a run of the left side's kids and its stored lists: per
// key, the group's transitions outside L then those in L (back to back in
// list), the length of the group's whole list, and the position in it of
// its last limit check (-1: none), to be repeated at the group's offset.
type splitGroupX struct {
	kids  []node
	word  int
	shift uint
	mask  uint64

	status         []uint8
	uStart, uCount []int32
	sCount         []int32
	check          []int32
	list           tlist
	fill           tlist
}

// newSplitCoopX returns the split form of m, or nil if m does not have the
// shape (at least two groups).
func newSplitCoopX(m *coopNode, s *Structure) *splitCoopX {
	c, ok := m.y.(*constNode)
	if !ok {
		return nil
	}
	par, ok := m.x.(*parNode)
	if !ok {
		return nil
	}
	type group struct {
		kids         []node
		word, lo, hi int
	}
	var groups []*group
	for _, k := range par.kids {
		word, lo, hi := -1, 64, 0
		fits := true
		walkLeaves(k, func(l *Leaf) {
			if l.NumLocal <= 1 {
				return
			}
			if word >= 0 && l.word != word {
				fits = false
			}
			word, lo, hi = l.word, min(lo, int(l.shift)), max(hi, int(l.shift)+bits.Len64(l.mask))
		})
		if !fits || hi-lo > memoBits {
			return nil
		}
		var g *group
		if len(groups) > 0 {
			g = groups[len(groups)-1]
		}
		switch {
		case word < 0 && g != nil: // constant kid
		case g != nil && g.word < 0:
			g.word, g.lo, g.hi = word, lo, hi
		case g != nil && g.word == word && max(g.hi, hi)-min(g.lo, lo) <= memoBits:
			g.lo, g.hi = min(g.lo, lo), max(g.hi, hi)
		default:
			g = &group{word: word, lo: lo, hi: hi}
			if word < 0 {
				g.lo, g.hi = 0, 0
			}
			groups = append(groups, g)
		}
		g.kids = append(g.kids, k)
	}
	if len(groups) < 2 {
		return nil
	}
	n := &splitCoopX{orig: m, cUnshared: tlist{w: s.Words}, keys: make([]uint64, len(groups)), xs: tlist{w: s.Words}}
	for i, a := range c.list.act {
		if !m.inSet[a] {
			n.cUnshared.copyFrom(&c.list, i)
		}
	}
	for _, g := range groups {
		size := 1 << (g.hi - g.lo)
		n.groups = append(n.groups, &splitGroupX{
			kids: g.kids, word: max(g.word, 0), shift: uint(g.lo), mask: uint64(size - 1),
			status: make([]uint8, size), uStart: make([]int32, size), uCount: make([]int32, size),
			sCount: make([]int32, size), check: make([]int32, size),
			list: tlist{w: s.Words}, fill: tlist{w: s.Words},
		})
	}
	return n
}

// lookup returns the group's key in state and whether its lists are
// stored, storing them first if the key is new and its evaluation clean.
func (g *splitGroupX) lookup(state []uint64, inSet []bool, limit int) (uint64, bool) {
	key := (state[g.word] >> g.shift) & g.mask
	switch g.status[key] {
	case memoStored:
		return key, true
	case memoInPlace:
		return key, false
	}
	f := &g.fill
	f.reset()
	e := evalError{limit: limit, track: f, lastCheck: -1}
	for _, k := range g.kids {
		k.eval(state, f, &e)
	}
	if e.mixed || e.overflow || g.list.len()+f.len() > memoMaxTransitions {
		g.status[key] = memoInPlace
		return key, false
	}
	g.status[key] = memoStored
	start := g.list.len()
	g.list.appendUnshared(f, inSet)
	g.uStart[key], g.uCount[key] = int32(start), int32(g.list.len()-start)
	for i, a := range f.act {
		if inSet[a] {
			g.list.copyFrom(f, i)
		}
	}
	g.sCount[key], g.check[key] = int32(f.len())-g.uCount[key], int32(e.lastCheck)
	return key, true
}

func (n *splitCoopX) eval(state []uint64, out *tlist, e *evalError) {
	offset := 0 // where the group's list starts in the left side's list
	for i, g := range n.groups {
		key, ok := g.lookup(state, n.orig.inSet, e.limit)
		if !ok {
			n.orig.eval(state, out, e)
			return
		}
		n.keys[i] = key
		if c := g.check[key]; c >= 0 && e.limit > 0 && offset+int(c) >= e.limit {
			e.overflow = true // as the left side's own list would have
			return
		}
		offset += int(g.uCount[key] + g.sCount[key])
	}
	xs := &n.xs
	xs.reset()
	for i, g := range n.groups {
		k := n.keys[i]
		j := int(g.uStart[k] + g.uCount[k])
		out.appendRange(&g.list, int(g.uStart[k]), j)
		xs.appendRange(&g.list, j, j+int(g.sCount[k]))
	}
	out.appendRange(&n.cUnshared, 0, n.cUnshared.len())
	n.orig.shared(xs, &n.orig.y.(*constNode).list, out, e)
}
