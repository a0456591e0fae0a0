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
	w     int
	act   []int32
	pas   []bool
	rate  []float64
	delta []uint64 // w words per transition
}

func (t *tlist) reset() {
	t.act, t.pas, t.rate, t.delta = t.act[:0], t.pas[:0], t.rate[:0], t.delta[:0]
}

func (t *tlist) len() int { return len(t.act) }

// copyFrom appends transition i of u.
func (t *tlist) copyFrom(u *tlist, i int) {
	t.act = append(t.act, u.act[i])
	t.pas = append(t.pas, u.pas[i])
	t.rate = append(t.rate, u.rate[i])
	t.delta = append(t.delta, u.delta[i*u.w:(i+1)*u.w]...)
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
type coopNode struct {
	x, y   node
	set    map[int32]bool
	inSet  []bool // by action id
	bx, by tlist

	// Per-action apparent rates, valid where stamp == gen.
	gen            uint32
	stampX, stampY []uint32
	actX, pasX     []float64
	actY, pasY     []float64
	headY          []int32
	nextY          []int32
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
	n.gen++
	if n.gen == 0 { // wrapped: clear the stamps
		clear(n.stampX)
		clear(n.stampY)
		n.gen = 1
	}
	g := n.gen
	for i, a := range bx.act {
		if !n.inSet[a] {
			continue
		}
		if n.stampX[a] != g {
			n.stampX[a], n.actX[a], n.pasX[a] = g, 0, 0
		}
		if bx.pas[i] {
			n.pasX[a] += bx.rate[i]
		} else {
			n.actX[a] += bx.rate[i]
		}
	}
	if cap(n.nextY) < by.len() {
		n.nextY = make([]int32, by.len(), 2*by.len())
	}
	n.nextY = n.nextY[:by.len()]
	for i := by.len() - 1; i >= 0; i-- {
		a := by.act[i]
		if !n.inSet[a] {
			continue
		}
		if n.stampY[a] != g {
			n.stampY[a], n.actY[a], n.pasY[a], n.headY[a] = g, 0, 0, -1
		}
		if by.pas[i] {
			n.pasY[a] += by.rate[i]
		} else {
			n.actY[a] += by.rate[i]
		}
		n.nextY[i] = n.headY[a]
		n.headY[a] = int32(i)
	}
	w := out.w
	for i, a := range bx.act {
		if !n.inSet[a] || n.stampY[a] != g {
			continue // not shared, or y does not enable a: blocked
		}
		ax, px, ay, py := n.actX[a], n.pasX[a], n.actY[a], n.pasY[a]
		if (ax > 0 && px > 0) || (ay > 0 && py > 0) {
			if !e.mixed {
				e.mixed, e.action = true, a
			}
			continue
		}
		for j := n.headY[a]; j >= 0; j = n.nextY[j] {
			var rate float64
			passive := false
			rx, ry := bx.rate[i], by.rate[j]
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
				out.delta = append(out.delta, bx.delta[i*w+k]+by.delta[int(j)*w+k])
			}
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
		m.stampX, m.stampY = make([]uint32, nActions), make([]uint32, nActions)
		m.actX, m.pasX = make([]float64, nActions), make([]float64, nActions)
		m.actY, m.pasY = make([]float64, nActions), make([]float64, nActions)
		m.headY = make([]int32, nActions)
		m.bx.w, m.by.w = words, words
		m.x = freeze(m.x, words, nActions)
		m.y = freeze(m.y, words, nActions)
		_, cx := m.x.(*constNode)
		_, cy := m.y.(*constNode)
		if cx && cy {
			return constOf(m, words)
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
