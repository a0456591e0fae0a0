package ctmc

import "math"

// The transitions enabled in a global state are computed bottom-up over the
// compiled tree, in reusable buffers (no allocation per state once the
// buffers have grown). A transition carries its action, its rate (or its
// passive weight) and the change it makes to the packed state as a
// per-word delta: the sum of (new - old) << shift over the leaves it moves.
// Adding the delta to the packed state with wrapping arithmetic gives the
// target state exactly, because each field's final value is in range.

// tlist is a list of transitions in struct-of-arrays form.
type tlist struct {
	w      int
	act    []int32
	pas    []bool
	rate   []float64
	delta  []uint64 // w words per transition
	rdelta []int64  // change of the state's mixed-radix number (see Leaf.stride)
}

func (t *tlist) reset() {
	t.act, t.pas, t.rate, t.delta, t.rdelta = t.act[:0], t.pas[:0], t.rate[:0], t.delta[:0], t.rdelta[:0]
}

func (t *tlist) len() int { return len(t.act) }

// copyFrom appends transition i of u.
func (t *tlist) copyFrom(u *tlist, i int) {
	t.act = append(t.act, u.act[i])
	t.pas = append(t.pas, u.pas[i])
	t.rate = append(t.rate, u.rate[i])
	t.delta = append(t.delta, u.delta[i*u.w:(i+1)*u.w]...)
	t.rdelta = append(t.rdelta, u.rdelta[i])
}

// evalError records the first semantic error met during exploration: an
// action enabled both actively and passively by one side of a cooperation,
// for which PEPA defines no apparent rate.
type evalError struct {
	mixed  bool
	action int32
}

type node interface {
	// eval appends the transitions enabled in state to out.
	eval(state []uint64, out *tlist, e *evalError)
}

type leafNode struct {
	leaf *Leaf
}

func (n *leafNode) eval(state []uint64, out *tlist, _ *evalError) {
	l := n.leaf
	s := (state[l.word] >> l.shift) & l.mask
	for _, t := range l.trans[s] {
		out.act = append(out.act, t.action)
		out.pas = append(out.pas, t.passive)
		out.rate = append(out.rate, t.rate)
		d := uint64(t.target)<<l.shift - s<<l.shift
		out.rdelta = append(out.rdelta, (int64(t.target)-int64(s))*l.stride)
		for w := 0; w < out.w; w++ {
			if w == l.word {
				out.delta = append(out.delta, d)
			} else {
				out.delta = append(out.delta, 0)
			}
		}
	}
}

// parNode is a parallel composition (no shared actions) of its kids.
type parNode struct {
	kids []node
}

func (n *parNode) eval(state []uint64, out *tlist, e *evalError) {
	for _, k := range n.kids {
		k.eval(state, out, e)
	}
}

// constNode is a subtree whose leaves all have one local state: its
// transitions are the same in every global state, computed once.
type constNode struct {
	list tlist
	orig node
}

func (n *constNode) eval(_ []uint64, out *tlist, _ *evalError) {
	for i := 0; i < n.list.len(); i++ {
		out.copyFrom(&n.list, i)
	}
}

type hideNode struct {
	child  node
	hidden map[int32]bool
	isHid  []bool // by action id, set by freeze
}

func (n *hideNode) eval(state []uint64, out *tlist, e *evalError) {
	start := out.len()
	n.child.eval(state, out, e)
	for i := start; i < out.len(); i++ {
		if n.isHid[out.act[i]] {
			out.act[i] = TauAction
		}
	}
}

// coopNode is x <set> y with a non-empty set.
//
// Its transitions are listed in a fixed order: x's unshared ones, y's
// unshared ones, then the shared ones in the order of y's transitions, each
// with its partners in x in x's order. Per state it groups each side's
// shared transitions by action (bucket lists, apparent rates); a side that
// is constant is grouped once, at freeze time, which matters for mapping
// models, whose applications form one constant side.
type coopNode struct {
	x, y   node
	set    map[int32]bool
	inSet  []bool // by action id
	bx, by tlist
	gx, gy grouping
}

// grouping holds one side's shared transitions bucketed by action, and the
// side's apparent rate of each action (active and passive parts). Entries
// are valid where stamp == gen, or everywhere for a constant side.
type grouping struct {
	constant bool
	gen      uint32
	stamp    []uint32
	act, pas []float64
	head     []int32 // first transition with the action, -1 at the end
	next     []int32 // next transition with the same action
}

func (g *grouping) init(nActions int) {
	g.stamp = make([]uint32, nActions)
	g.act, g.pas = make([]float64, nActions), make([]float64, nActions)
	g.head = make([]int32, nActions)
}

func (g *grouping) valid(a int32) bool { return g.constant || g.stamp[a] == g.gen }

// build groups the shared transitions of l (constant sides are built once).
func (g *grouping) build(l *tlist, inSet []bool) {
	if g.constant {
		return
	}
	g.gen++
	if g.gen == 0 { // wrapped: clear the stamps
		clear(g.stamp)
		g.gen = 1
	}
	if cap(g.next) < l.len() {
		g.next = make([]int32, l.len(), 2*l.len())
	}
	g.next = g.next[:l.len()]
	for i := l.len() - 1; i >= 0; i-- {
		a := l.act[i]
		if !inSet[a] {
			continue
		}
		if g.stamp[a] != g.gen {
			g.stamp[a], g.act[a], g.pas[a], g.head[a] = g.gen, 0, 0, -1
		}
		if l.pas[i] {
			g.pas[a] += l.rate[i]
		} else {
			g.act[a] += l.rate[i]
		}
		g.next[i] = g.head[a]
		g.head[a] = int32(i)
	}
}

// freezeConstant groups a constant side once and for all.
func (g *grouping) freezeConstant(l *tlist, inSet []bool) {
	g.build(l, inSet)
	for a := range g.stamp {
		if g.stamp[a] != g.gen {
			g.head[a] = -1
		}
	}
	g.constant = true
}

// list evaluates child into scratch, or returns its constant list.
func list(child node, state []uint64, scratch *tlist, e *evalError) *tlist {
	if c, ok := child.(*constNode); ok {
		return &c.list
	}
	scratch.reset()
	child.eval(state, scratch, e)
	return scratch
}

func (n *coopNode) eval(state []uint64, out *tlist, e *evalError) {
	bx := list(n.x, state, &n.bx, e)
	by := list(n.y, state, &n.by, e)
	for i, a := range bx.act {
		if !n.inSet[a] {
			out.copyFrom(bx, i)
		}
	}
	for i, a := range by.act {
		if !n.inSet[a] {
			out.copyFrom(by, i)
		}
	}
	gx, gy := &n.gx, &n.gy
	gx.build(bx, n.inSet)
	gy.build(by, n.inSet)
	w := out.w
	for j, a := range by.act {
		if !n.inSet[a] || !gx.valid(a) || gx.head[a] < 0 {
			continue // not shared, or x does not enable a: blocked
		}
		ax, px, ay, py := gx.act[a], gx.pas[a], gy.act[a], gy.pas[a]
		if (ax > 0 && px > 0) || (ay > 0 && py > 0) {
			if !e.mixed {
				e.mixed, e.action = true, a
			}
			continue
		}
		ry := by.rate[j]
		for i := gx.head[a]; i >= 0; i = gx.next[i] {
			rx := bx.rate[i]
			var rate float64
			passive := false
			switch {
			case ax > 0 && ay > 0:
				rate = (rx / ax) * (ry / ay) * math.Min(ax, ay)
			case ax > 0: // y passive: x's rate, shared among y's weights
				rate = rx * (ry / py)
			case ay > 0:
				rate = (rx / px) * ry
			default:
				rate = (rx / px) * (ry / py) * math.Min(px, py)
				passive = true
			}
			out.act = append(out.act, a)
			out.pas = append(out.pas, passive)
			out.rate = append(out.rate, rate)
			for k := 0; k < w; k++ {
				out.delta = append(out.delta, bx.delta[int(i)*w+k]+by.delta[j*w+k])
			}
			out.rdelta = append(out.rdelta, bx.rdelta[i]+by.rdelta[j])
		}
	}
}

// freeze sizes the per-action tables and replaces subtrees without state
// bits by constant nodes.
func freeze(n node, words, nActions int) node {
	switch m := n.(type) {
	case *leafNode:
		if m.leaf.NumLocal == 1 {
			return constOf(m, words)
		}
		return m
	case *parNode:
		allConst := true
		for i, k := range m.kids {
			m.kids[i] = freeze(k, words, nActions)
			if _, ok := m.kids[i].(*constNode); !ok {
				allConst = false
			}
		}
		if allConst {
			return constOf(m, words)
		}
		return m
	case *hideNode:
		m.isHid = make([]bool, nActions)
		for a := range m.hidden {
			m.isHid[a] = true
		}
		m.child = freeze(m.child, words, nActions)
		if _, ok := m.child.(*constNode); ok {
			return constOf(m, words)
		}
		return m
	case *coopNode:
		m.inSet = make([]bool, nActions)
		for a := range m.set {
			m.inSet[a] = true
		}
		m.gx.init(nActions)
		m.gy.init(nActions)
		m.bx.w, m.by.w = words, words
		m.x = freeze(m.x, words, nActions)
		m.y = freeze(m.y, words, nActions)
		cx, isCX := m.x.(*constNode)
		cy, isCY := m.y.(*constNode)
		if isCX && isCY {
			return constOf(m, words)
		}
		if isCX {
			m.gx.freezeConstant(&cx.list, m.inSet)
		}
		if isCY {
			m.gy.freezeConstant(&cy.list, m.inSet)
		}
		return m
	}
	return n
}

// constOf evaluates n once. A subtree with an error stays as it is, so that
// exploration meets and reports the error.
func constOf(n node, words int) node {
	c := &constNode{orig: n, list: tlist{w: words}}
	var e evalError
	n.eval(make([]uint64, words), &c.list, &e)
	if e.mixed {
		return n
	}
	return c
}

// cloneTree copies a frozen tree for another goroutine: what evaluation
// writes (a cooperation's buffers and the grouping of a side that is not
// constant) is fresh; what it only reads (leaves, constant lists, the
// grouping of a constant side, action tables) is shared.
func cloneTree(n node, words int) node {
	switch m := n.(type) {
	case *parNode:
		kids := make([]node, len(m.kids))
		for i, k := range m.kids {
			kids[i] = cloneTree(k, words)
		}
		return &parNode{kids: kids}
	case *hideNode:
		return &hideNode{child: cloneTree(m.child, words), hidden: m.hidden, isHid: m.isHid}
	case *coopNode:
		c := &coopNode{x: cloneTree(m.x, words), y: cloneTree(m.y, words), set: m.set, inSet: m.inSet,
			bx: tlist{w: words}, by: tlist{w: words}, gx: m.gx, gy: m.gy}
		nActions := len(m.inSet)
		if !m.gx.constant {
			c.gx = grouping{}
			c.gx.init(nActions)
		}
		if !m.gy.constant {
			c.gy = grouping{}
			c.gy.init(nActions)
		}
		return c
	}
	return n // leafNode, constNode: read-only
}
